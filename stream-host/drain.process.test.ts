// Process-level tests of the instance lifecycle: a real stream host process (stream-host/main.ts),
// real signals, real sockets, embedded PostgreSQL for the config store and a metrics database
// whose views count every query at the database.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";
import { type HostProcess, type StreamClient, get, openStream } from "./testing/child.ts";
import { prepareCountingMetricsDb } from "./testing/seed.ts";
import { startSeededHost } from "./testing/seeded-host.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let metricsUrl: string;
let metricsDb: Awaited<ReturnType<typeof prepareCountingMetricsDb>>;
const children: HostProcess[] = [];

beforeAll(async () => {
  store = await createTestConfigStore();
  metricsUrl = (await createDatabase("metrics")).url;
  metricsDb = await prepareCountingMetricsDb(metricsUrl, { slowSeconds: 1.5 });
});

afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.kill("SIGKILL");
  await metricsDb.close();
  await store.close();
});

function start(panels: { id: string; view: string }[], env: Record<string, string> = {}, more: { id: string; view: string }[][] = []) {
  return startSeededHost({ store, metricsUrl, panels, more, env, children });
}

/** Waits (polling the database) until `panel` has logged `count` starts. */
async function startsReach(panel: string, count: number, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  while ((await metricsDb.count(panel)) < count) {
    if (Date.now() > until) throw new Error(`${panel} did not start ${count} times`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const isTerminal = (f: { event?: string }) => f.event === "draining";

describe("drain on SIGTERM with FRAMEWORK_MANUAL_SIG_HANDLE=true", () => {
  test("the drain order, observed from outside: readiness, no new metric query, terminal frames, in-flight query completes, pools released, exit 0", async () => {
    // Dashboard A's one panel takes 1.5 s and runs again at the first tick after it ended (every 100 ms);
    // dashboard B's one panel takes 5 s. SIGTERM lands while both run: A's query ends first, and B's keeps
    // the drain open long enough that a poller which had not stopped would start A's panel again while the
    // process still lives.
    const { host, path, cookie, open, pathOf } = await start([{ id: "slow", view: "slow_v" }], {}, [[{ id: "slower", view: "slower_v" }]]);
    const streams = [...(await open(15)), ...(await open(5, pathOf(1)))];
    for (const s of streams) {
      expect(s.status).toBe(200);
      expect(s.headers["content-type"]).toBe("text/event-stream");
      await s.waitFor((f) => f.event === "snapshot");
    }
    await startsReach("slower", 1);
    const slowBefore = await metricsDb.count("slow");
    await startsReach("slow", slowBefore + 1);
    const slowEndsBefore = await metricsDb.count("slow", "end");
    const slowerEndsBefore = await metricsDb.count("slower", "end");
    // A panel never has two runs at once and each dashboard's only panel is out (its start logged), so
    // nothing may be added to this count from here on.
    const startsAtSigterm = await metricsDb.count();

    const terminalSeen = Promise.race(streams.map((s) => s.waitFor(isTerminal).then(() => s)));
    host.kill("SIGTERM");
    // Precondition, checked rather than assumed: the drain began while both queries were still running.
    // A panel's `end` row is written before the host can see its result, so an `end` still missing once
    // the host logged `draining` proves the query had not ended; a next run would then be a violation.
    await host.waitForLog((l) => l.msg === "draining");
    expect(await metricsDb.count("slow", "end"), "SIGTERM landed after the running query ended").toBe(slowEndsBefore);
    expect(await metricsDb.count("slower", "end"), "SIGTERM landed after the running query ended").toBe(slowerEndsBefore);

    // Readiness already answers draining when the first terminal frame arrives.
    await terminalSeen;
    const ready = await get(host.port, "/api/ready");
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body).status).toBe("draining");

    // Every stream: retry within 2000..10000, then event: draining, then closed.
    const retries: number[] = [];
    for (const s of streams) {
      const frame = await s.waitFor(isTerminal);
      expect(frame.retry).toBeGreaterThanOrEqual(2000);
      expect(frame.retry).toBeLessThanOrEqual(10000);
      retries.push(frame.retry!);
      await s.closed;
      expect(s.frames.at(-1)?.frame.event).toBe("draining");
    }
    expect(new Set(retries).size).toBeGreaterThan(1);

    // While the in-flight query runs: the listener is open, health 200, a new stream gets 200 and the terminal frame at once.
    expect((await get(host.port, "/api/health")).status).toBe(200);
    const late = await openStream(host.port, path, cookie);
    expect(late.status).toBe(200);
    expect((await late.waitFor(() => true)).event).toBe("draining");
    await late.closed;
    const anonymousLate = await openStream(host.port, path);
    expect(anonymousLate.status).toBe(200);

    const { code } = await host.exited;
    const exitedAt = new Date();
    expect(code).toBe(0);
    expect(host.logs.find((l) => l.msg === "exiting")).toMatchObject({ code: 0, why: "drained" });

    // Both in-flight slow queries completed before the process exited.
    const log = await metricsDb.log();
    for (const [panel, before] of [
      ["slow", slowEndsBefore],
      ["slower", slowerEndsBefore],
    ] as const) {
      const ends = log.filter((r) => r.panel === panel && r.phase === "end");
      expect(ends.length).toBe(before + 1);
      expect(ends.at(-1)!.at.getTime()).toBeLessThanOrEqual(exitedAt.getTime());
    }
    // No metric query started after SIGTERM: every logged start belongs to a query running before it.
    expect(await metricsDb.count()).toBe(startsAtSigterm);
    // Every metric query settled and every source pool client was released, then every config-store client.
    expect(host.logs.find((l) => l.msg === "metric queries settled")).toMatchObject({ inFlight: 0 });
    const settledAt = host.logs.findIndex((l) => l.msg === "metric queries settled");
    expect(settledAt).toBeLessThan(host.logs.findIndex((l) => l.msg === "config store released"));
    expect(host.logs.find((l) => l.msg === "config store released")).toMatchObject({ totalCount: 0, waitingCount: 0 });
  });

  test("the grace bound: a query that never ends does not hold the exit; still exit 0", async () => {
    const { host, open } = await start([{ id: "forever", view: "forever_v" }], { SHUTDOWN_GRACE_MS: "1500" });
    const streams = await open(3);
    const before = await metricsDb.count("forever");
    await startsReach("forever", before + 1);
    host.kill("SIGTERM");
    for (const s of streams) await s.waitFor(isTerminal);
    const { code } = await host.exited;
    expect(code).toBe(0);
    expect(host.logs.find((l) => l.msg === "exiting")).toMatchObject({ code: 0, why: "grace elapsed" });
    expect(await metricsDb.count("forever", "end")).toBe(0);
  });

  test.each([
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const)("a second signal (%s) while draining exits at once", async (second, expected) => {
    const { host, open } = await start([{ id: "forever", view: "forever_v" }], { SHUTDOWN_GRACE_MS: "600000" });
    const streams = await open(2);
    const before = await metricsDb.count("forever");
    await startsReach("forever", before + 1);
    host.kill("SIGTERM");
    await host.waitForLog((l) => l.msg === "draining");
    for (const s of streams) await s.waitFor(isTerminal);
    expect((await get(host.port, "/api/ready")).status).toBe(503);
    host.kill(second);
    // The drain would wait for an hour-long query under a ten-minute grace; only the second signal ends it.
    const { code } = await host.exited;
    expect(code).toBe(expected);
    expect(host.logs.find((l) => l.msg === "exiting")).toMatchObject({ why: `second signal ${second} while draining` });
  });

  test("SIGINT while serving drains too (Ctrl-C of npm start)", async () => {
    const { host, open } = await start([{ id: "fast", view: "fast_v" }]);
    const [s] = await open(1);
    await s.waitFor((f) => f.event === "panel");
    host.kill("SIGINT");
    await s.waitFor(isTerminal);
    expect((await host.exited).code).toBe(0);
  });
});

describe("without the variable", () => {
  test.each([
    ["unset", {}],
    ["false", { FRAMEWORK_MANUAL_SIG_HANDLE: "false" }],
    ["true in development mode", { FRAMEWORK_MANUAL_SIG_HANDLE: "true", NODE_ENV: "development" }],
  ])("%s: SIGTERM exits 143 with no drain", async (_name, env) => {
    const { host, open } = await start([{ id: "fast", view: "fast_v" }], { FRAMEWORK_MANUAL_SIG_HANDLE: "", ...env });
    const [s]: StreamClient[] = await open(1);
    await s.waitFor((f) => f.event === "panel");
    host.kill("SIGTERM");
    const { code } = await host.exited;
    expect(code).toBe(143);
    await s.closed;
    expect(s.frames.some((f) => f.frame.event === "draining")).toBe(false);
    expect(host.logs.some((l) => l.msg === "draining")).toBe(false);
  });
});
