// npm run bench -- drain: SIGTERM to a real stream host process holding 1,000 open streams with no
// query in flight; reports when the last stream got its terminal frame and when the process exited.
import { ms, percentile, startBenchDatabases, startBenchHost, stopHost, subscribeMany, until } from "../stream-host/testing/bench-env.ts";

const STREAMS = 1000;

export async function run(): Promise<void> {
  const db = await startBenchDatabases();
  try {
    // A long cadence: after the first tick nothing is in flight when the signal comes.
    const { host, fixture, cookie } = await startBenchHost(db, {
      dashboards: 1,
      panels: [{ id: "p1", view: "plain_v" }],
      refreshIntervalMs: 600_000,
    });
    try {
      const path = `/api/dashboards/${fixture.dashboardIds[0]}/stream`;
      const subs = await subscribeMany(host.port, Array(STREAMS).fill(path), cookie);
      // Late subscribers get the first tick's result in their snapshot; the first one saw the tick itself.
      await until(() => subs[0].panelFrames >= 1 && subs.every((s) => s.snapshot), 60_000, "the first tick");
      const t0 = Date.now();
      host.kill("SIGTERM");
      const { code } = await host.exited;
      const exitMs = Date.now() - t0;
      await until(() => subs.every((s) => s.closed), 10_000, "every stream closed");
      const terminal = subs.filter((s) => s.draining);
      const lastFrame = Math.max(...terminal.map((s) => s.terminalAt)) - t0;
      const retries = terminal.length;
      console.log(`open streams at SIGTERM        ${STREAMS}`);
      console.log(
        `terminal frames received       ${retries}/${STREAMS}, last ${ms(lastFrame)} after SIGTERM (p50 ${ms(
          percentile(
            terminal.map((s) => s.terminalAt - t0),
            50,
          ),
        )})`,
      );
      console.log(`process exit                   code ${code} after ${ms(exitMs)} (target: all frames and exit 0 within 1000 ms)`);
    } finally {
      await stopHost(host);
    }
  } finally {
    await db.stop();
  }
}
