// npm run bench -- scrape: /api/metrics latency of a real stream host process whose registry holds the
// series of 500 dashboards (each with a subscriber and a ticking poller), through the token gate.
import http from "node:http";
import { percentile, ms, startBenchDatabases, startBenchHost, stopHost, subscribeMany, until } from "../stream-host/testing/bench-env.ts";

const DASHBOARDS = 500;
const SCRAPES = 300;
const TOKEN = "bench-metrics-token-0123456789abcdef";

// Prometheus keeps its scrape connection open; so does the benchmark.
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function scrape(port: number): Promise<{ ms: number; body: string; status: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/api/metrics", headers: { authorization: `Bearer ${TOKEN}` }, agent }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
      res.on("end", () => resolve({ ms: performance.now() - started, body, status: res.statusCode ?? 0 }));
    });
    req.on("error", reject);
  });
}

export async function run(): Promise<void> {
  const db = await startBenchDatabases();
  try {
    const { host, fixture, cookie } = await startBenchHost(db, {
      dashboards: DASHBOARDS,
      panels: [{ id: "p1", view: "plain_v" }],
      refreshIntervalMs: Number(process.env.SCRAPE_REFRESH_MS ?? 2000),
      env: { METRICS_TOKEN: TOKEN },
    });
    try {
      const subs = await subscribeMany(
        host.port,
        fixture.dashboardIds.map((id) => `/api/dashboards/${id}/stream`),
        cookie,
      );
      await until(() => subs.every((s) => s.panelFrames >= 1), 120_000, "every dashboard's first tick");
      const first = await scrape(host.port);
      if (first.status !== 200) throw new Error(`scrape answered ${first.status}`);
      const dashboards = new Set(
        [...first.body.matchAll(/svc_poller_tick_duration_seconds_count\{dashboard="([^"]+)"\}/g)].map((m) => m[1]),
      );
      const lines = first.body.split("\n").filter((l) => l && !l.startsWith("#")).length;
      const times: number[] = [];
      for (let i = 0; i < SCRAPES; i++) times.push((await scrape(host.port)).ms);
      console.log(`dashboards with series         ${dashboards.size} (pollers ticking every 2 s while scraping)`);
      console.log(`samples per scrape             ${lines} (${(first.body.length / 1024).toFixed(0)} KiB)`);
      console.log(
        `scrape latency                 p50 ${ms(percentile(times, 50))}, p99 ${ms(percentile(times, 99))}, max ${ms(percentile(times, 100))} over ${SCRAPES} scrapes (target p99 <= 25 ms)`,
      );
      for (const s of subs) s.destroy();
      agent.destroy();
    } finally {
      await stopHost(host);
    }
  } finally {
    await db.stop();
  }
}
