// npm run bench -- fanout: real SSE subscribers on a real stream host process over loopback.
// Reports subscribers, metric queries per panel per tick counted at the database, delivery latency
// from the poller's completion of a panel to each subscriber's receipt (p50/p99), the stream host's
// RSS, and the queries a per-browser polling design would have issued for the same run.
// FANOUT_SUBSCRIBERS=1000 shrinks both scenarios (default 10,000 sockets: `ulimit -n` must allow them);
// FANOUT_SCENARIO=single|spread runs one of them.
import {
  type BenchDatabases,
  type BenchSubscriber,
  mb,
  ms,
  percentile,
  requireOpenFiles,
  rssOf,
  startBenchDatabases,
  startBenchHost,
  stopHost,
  subscribeMany,
  until,
} from "../stream-host/testing/bench-env.ts";

const REFRESH_MS = 2000;
const MEASURED_TICKS = 5;

async function scenario(db: BenchDatabases, name: string, dashboards: number, perDashboard: number, panelCount: number, views = 1) {
  const panels = Array.from({ length: panelCount }, (_, i) => ({ id: `p${i + 1}`, view: "counted_v" }));
  const { host, fixture, cookie } = await startBenchHost(db, { dashboards, panels, refreshIntervalMs: REFRESH_MS });
  try {
    const paths: string[] = [];
    for (let i = 0; i < perDashboard; i++) {
      // Views: subscribers spread round-robin over `views` ranges of the dashboard (one poller each).
      const view = views > 1 ? `?from=now-${(i % views) + 2}h` : "";
      for (const id of fixture.dashboardIds) paths.push(`/api/dashboards/${id}/stream${view}`);
    }
    const connectStart = performance.now();
    const subs = await subscribeMany(host.port, paths, cookie);
    const connectMs = performance.now() - connectStart;
    // Warm-up: every subscriber has its snapshot and at least one full tick.
    await until(() => subs.every((s) => s.snapshot && s.panelFrames >= panelCount), 120_000, "every subscriber's first tick");
    for (const s of subs) {
      s.latencies.length = 0;
      s.seen?.splice(0);
    }

    const t0 = new Date();
    let rssMax = 0;
    const end = Date.now() + MEASURED_TICKS * REFRESH_MS;
    while (Date.now() < end) {
      rssMax = Math.max(rssMax, rssOf(host.child.pid!).rss);
      await new Promise((r) => setTimeout(r, 250));
    }
    const t1 = new Date();
    // Let frames of queries that started inside the window arrive.
    await new Promise((r) => setTimeout(r, 1000));

    const queries = await countStarts(db, t0, t1);
    // Panel-ticks whose result came in inside the window, as the first subscriber of each dashboard saw them.
    let panelTicks = 0;
    const errors = new Map<string, number>();
    for (const s of subs) {
      if (!s.seen) continue;
      const inWindow = s.seen.filter((x) => x.at >= t0.getTime() && x.at <= t1.getTime());
      panelTicks += inWindow.length;
      for (const x of inWindow) if (x.code) errors.set(x.code, (errors.get(x.code) ?? 0) + 1);
    }
    const latencies: number[] = [];
    for (const s of subs as BenchSubscriber[]) for (const l of s.latencies) latencies.push(l);
    const dropped = subs.filter((s) => s.closed).length;
    const { peak } = rssOf(host.child.pid!);
    const perBrowser = panelTicks * perDashboard;

    console.log(`-- ${name}`);
    console.log(
      `subscribers                    ${subs.length} (${dashboards} dashboard(s) x ${perDashboard}), ${panelCount} panels each, refresh ${REFRESH_MS} ms`,
    );
    console.log(`connect all                    ${(connectMs / 1000).toFixed(1)} s`);
    console.log(
      `panel-ticks in window          ${panelTicks} (${MEASURED_TICKS} ticks x ${dashboards} x ${panelCount} expected: ${MEASURED_TICKS * dashboards * panelCount})`,
    );
    console.log(
      `metric queries at the database ${queries} -> ${(queries / Math.max(1, panelTicks)).toFixed(2)} per panel per tick (target 1)`,
    );
    console.log(`error frames in window         ${[...errors].map(([code, n]) => `${n} ${code}`).join(", ") || "none"}`);
    console.log(`per-browser polling would issue ${perBrowser} -> ratio ${(perBrowser / Math.max(1, queries)).toFixed(0)}x fewer queries`);
    console.log(
      `delivery latency               min ${ms(percentile(latencies, 0))}, p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}, max ${ms(percentile(latencies, 100))} over ${latencies.length} deliveries (target p99 <= 250 ms)`,
    );
    console.log(`stream host RSS                ${mb(rssMax)} in window, peak ${mb(peak)} (target <= 512 MB)`);
    console.log(`subscribers dropped            ${dropped}`);
    if (views > 1) {
      // panelTicks sums the first subscriber of every view; one view's panel-ticks are panelTicks / views.
      console.log(
        `views: viewers ${subs.length}, views ${views}, queries per panel per tick ${(queries / Math.max(1, panelTicks / views)).toFixed(2)} (p99 ${ms(percentile(latencies, 99))}, RSS ${mb(rssMax)})`,
      );
    }
    for (const s of subs) s.destroy();
  } finally {
    await stopHost(host);
  }
}

/** Metric queries that started at the database within [t0, t1] (logged by the counting views). */
async function countStarts(db: BenchDatabases, t0: Date, t1: Date): Promise<number> {
  const rows = await db.metrics.log();
  return rows.filter((r) => r.phase === "start" && r.at >= t0 && r.at <= t1).length;
}

/**
 * Subscribers per scenario: FANOUT_SUBSCRIBERS (default 10,000; a small machine or a low `ulimit -n` takes
 * 1000). The spread scenario shares them over 100 dashboards (at least one subscriber each).
 */
export function fanoutSize(env: Record<string, string | undefined> = process.env): number {
  const raw = env.FANOUT_SUBSCRIBERS?.trim();
  if (!raw) return 10_000;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) {
    throw new Error(`FANOUT_SUBSCRIBERS must be a whole number of subscribers (1 or more), got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

export async function run(): Promise<void> {
  const total = fanoutSize();
  const perDashboard = Math.max(1, Math.round(total / 100));
  // One client socket per subscriber here; the stream host child inherits the same limit for its side.
  requireOpenFiles(total + 500);
  const db = await startBenchDatabases();
  try {
    const only = process.env.FANOUT_SCENARIO;
    const count = (n: number) => n.toLocaleString("en-US");
    if (!only || only === "single") await scenario(db, `${count(total)} subscribers on one dashboard`, 1, total, 4);
    if (!only || only === "views") {
      const viewers = Math.min(total, 1000);
      await scenario(db, `${count(viewers)} viewers over 10 views of one dashboard`, 1, viewers, 4, 10);
    }
    if (!only || only === "spread") {
      await scenario(db, `100 dashboards x ${count(perDashboard)} subscribers`, 100, perDashboard, 2);
    }
  } finally {
    await db.stop();
  }
}
