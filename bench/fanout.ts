// npm run bench -- fanout: real SSE subscribers on a real stream host process over loopback.
// Reports subscribers, metric queries per panel per tick counted at the database, delivery latency
// from the poller's completion of a panel to each subscriber's receipt (p50/p99), the stream host's
// RSS, and the queries a per-browser polling design would have issued for the same run.
// Also: the same clients on a bare node:http broadcaster of the same frames (bench/fanout-floor.ts, the floor);
// bytes per viewer per minute with full frames and with delta frames (time-bucketed panels, incremental ticks
// off and on); and compression of the stream measured on the floor at the full subscriber count.
// Both serve from built bundles on plain node, as the container runs the stream host (FANOUT_HOST=source: tsx).
// The single and floor scenarios connect in stages and print a memory line: idle RSS, RSS after the first viewer
// (pools, the SQL parser), and RSS and heap at a tenth, half and all of the subscribers with the slope per subscriber.
// FANOUT_ROUNDS=3 runs the single and floor pair three times in alternating order and prints the median ratios.
// FANOUT_TICKS=15 measures each scenario over 15 ticks instead of 5 (a p99 over more ticks varies less between
// rounds). Both count the deliveries of the ticks that completed inside the window, however late they arrive.
// FANOUT_SUBSCRIBERS=1000 shrinks the scenarios (default 10,000 sockets: `ulimit -n` must allow them);
// FANOUT_SCENARIO=single|floor|views|spread|deltas|compression runs one of them (comma-separated for several).
// FANOUT_FLOOR_RUNTIME=image runs the floor with the stream host image's memory settings too (default: node's).
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import http from "node:http";
import { fileURLToPath } from "node:url";
import zlib from "node:zlib";
import { saveCatalog } from "../lib/sources/index.ts";
import { readFileSync } from "node:fs";
import * as esbuild from "esbuild";
import { createSessionTokens } from "../lib/auth/session.ts";
import { productCompression } from "./fanout-compression.ts";
import { imageNodeFlags } from "../infra/dockerfile.ts";
import {
  BENCH_SESSION_SECRET,
  type BenchDatabases,
  type BenchSubscriber,
  clearLatencies,
  latenciesIn,
  mb,
  ms,
  onPanelLatency,
  percentile,
  refusals,
  requireOpenFiles,
  rssOf,
  startBenchDatabases,
  imageRuntimeEnv,
  startBenchHost,
  stopHost,
  subscribeMany,
  until,
} from "../stream-host/testing/bench-env.ts";

const REFRESH_MS = 2000;
const MEASURED_TICKS = fanoutTicks();

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Built bundles of the stream host and the floor, run on plain node (null: both from source under tsx). */
let builds: { host: string; floor: string } | null = null;

/**
 * Builds the stream host as the container image does (esbuild.config.mjs, `node dist/stream-host/main.mjs`) and the
 * floor into one temporary folder, so both serve on plain node: neither pays for tsx's loader and its transforms.
 */
async function buildBundles(): Promise<{ host: string; floor: string; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), "pulseboard-fanout-"));
  const built = spawnSync(process.execPath, ["esbuild.config.mjs", "--only", "stream-host", "--outdir", dir], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (built.status !== 0) throw new Error(`building the stream host failed:\n${built.stderr}${built.stdout}`);
  const floor = join(dir, "fanout-floor.mjs");
  await esbuild.build({
    entryPoints: [join(ROOT, "bench/fanout-floor.ts")],
    outfile: floor,
    platform: "node",
    format: "esm",
    logLevel: "error",
  });
  return { host: join(dir, "stream-host/main.mjs"), floor, dir };
}

/** One stage of a memory line: subscribers connected, the process's RSS and its V8 heap in use. */
interface MemoryPoint {
  subscribers: number;
  rss: number;
  heapUsed: number;
}

/** Where a memory line measures: a tenth, half and all of the subscribers (distinct, ascending). */
function stagesOf(total: number): number[] {
  return [...new Set([Math.max(2, Math.round(total / 10)), Math.max(2, Math.round(total / 2)), total])].filter((n) => n <= total);
}

/** Lets a stage's connections settle and one tick go out before its memory is read. */
const settle = () => new Promise((r) => setTimeout(r, REFRESH_MS + 500));

function getText(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path, agent: false }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve(body));
      })
      .on("error", reject);
  });
}

/** The stream host's heap in use, from its own /api/metrics gauge (svc_nodejs_heap_size_used_bytes). */
async function hostHeapUsed(port: number): Promise<number> {
  const text = await getText(port, "/api/metrics");
  return Number(/^svc_nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? Number.NaN);
}

/** The floor's heap in use (its /memory answer, process.memoryUsage()). */
async function floorHeapUsed(port: number): Promise<number> {
  return (JSON.parse(await getText(port, "/memory")) as { heapUsed: number }).heapUsed;
}

/**
 * `<label> memory: idle …, first viewer …, at a/b/c subscribers RSS … heap … -> … KB RSS and … KB heap per subscriber`:
 * the fixed part (idle, then what the first viewer brings: pools, the SQL parser) and the slope between the first and
 * the last stage. Heap figures are read live (not after a collection): they carry some garbage.
 */
function memoryLine(label: string, idle: number, first: number, points: MemoryPoint[]): string {
  const a = points[0];
  const z = points[points.length - 1];
  const per = (x: number) => (z.subscribers > a.subscribers ? `${(x / (z.subscribers - a.subscribers) / 1024).toFixed(1)} KB` : "n/a");
  return `${label} memory: idle ${mb(idle)}, first viewer ${mb(first)} (+${mb(first - idle)}), at ${points.map((p) => p.subscribers).join("/")} subscribers RSS ${points.map((p) => mb(p.rss).replace(" MB", "")).join("/")} MB, heap used ${points.map((p) => mb(p.heapUsed).replace(" MB", "")).join("/")} MB -> ${per(z.rss - a.rss)} RSS and ${per(z.heapUsed - a.heapUsed)} heap per subscriber`;
}

const perMinute = (bytes: number, viewers: number, windowMs: number) => (bytes / Math.max(1, viewers)) * (60_000 / windowMs);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

interface ScenarioOptions {
  views?: number;
  /** Connects in stages and prints the memory line: idle, first viewer, and RSS and heap at a tenth, half and all. */
  memory?: boolean;
  env?: Record<string, string>;
  prepare?: Parameters<typeof startBenchHost>[1]["prepare"];
}

async function scenario(
  db: BenchDatabases,
  name: string,
  dashboards: number,
  perDashboard: number,
  panelCount: number,
  o: ScenarioOptions = {},
) {
  const views = o.views ?? 1;
  // Each panel's statement differs (an alias), so panels of one dashboard are one query each; the same panel on
  // other dashboards is the same statement and shares its query (COALESCE_PANEL_QUERIES).
  const panels = Array.from({ length: panelCount }, (_, i) => ({ id: `p${i + 1}`, view: `counted_v AS p${i + 1}` }));
  const { host, fixture, cookie } = await startBenchHost(db, {
    dashboards,
    panels,
    refreshIntervalMs: REFRESH_MS,
    // /api/metrics open to loopback: the memory line reads the host's heap from its own gauges.
    env: { METRICS_ALLOWED_CIDRS: "127.0.0.1/32", ...o.env },
    prepare: o.prepare,
    entry: builds?.host,
  });
  try {
    const paths: string[] = [];
    for (let i = 0; i < perDashboard; i++) {
      // Views: subscribers spread round-robin over `views` ranges of the dashboard (one poller each).
      const view = views > 1 ? `?from=now-${(i % views) + 2}h` : "";
      for (const id of fixture.dashboardIds) paths.push(`/api/dashboards/${id}/stream${view}`);
    }
    const pid = host.child.pid!;
    const sampled = new Set<string>();
    let connectMs = 0;
    const subs: BenchSubscriber[] = [];
    const connect = async (upTo: number) => {
      const started = performance.now();
      subs.push(...(await subscribeMany(host.port, paths.slice(subs.length, upTo), cookie, { sampled })));
      connectMs += performance.now() - started;
    };
    let memory: string | null = null;
    if (o.memory) {
      // Idle: started, listening, no subscriber. First viewer: its first tick is in (pools open, the SQL parser loaded).
      const idle = rssOf(pid).rss;
      await connect(1);
      await until(() => subs[0].panelFrames >= panelCount, 60_000, "the first viewer's first tick");
      await settle();
      const first = rssOf(pid).rss;
      const points: MemoryPoint[] = [];
      for (const n of stagesOf(paths.length)) {
        await connect(n);
        await settle();
        points.push({ subscribers: n, rss: rssOf(pid).rss, heapUsed: await hostHeapUsed(host.port) });
      }
      memory = memoryLine("stream host", idle, first, points);
    }
    await connect(paths.length);
    const retried = [...refusals].map(([status, n]) => `${n} x ${status}`).join(", ");
    refusals.clear();
    // Warm-up: every subscriber has its snapshot and at least one full tick.
    await until(() => subs.every((s) => s.snapshot && s.panelFrames >= panelCount), 120_000, "every subscriber's first tick");
    clearLatencies(subs);
    for (const s of subs) s.seen?.splice(0);

    const t0 = new Date();
    const cpu0 = cpuSecondsOf(host.child.pid!);
    const bytes0 = subs.reduce((n, s) => n + s.bytes, 0);
    let rssMax = 0;
    const end = Date.now() + MEASURED_TICKS * REFRESH_MS;
    while (Date.now() < end) {
      rssMax = Math.max(rssMax, rssOf(host.child.pid!).rss);
      await new Promise((r) => setTimeout(r, 250));
    }
    const t1 = new Date();
    const cpu = cpuSecondsOf(host.child.pid!) - cpu0;
    const bytes = subs.reduce((n, s) => n + s.bytes, 0) - bytes0;
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
    const latencies = latenciesIn(subs, t0.getTime(), t1.getTime());
    const dropped = subs.filter((s) => s.closed).length;
    const { peak } = rssOf(host.child.pid!);
    // panelTicks sums the first subscriber of every view of every dashboard; each viewer of a view sees that view's.
    const perBrowser = (panelTicks / views) * perDashboard;
    const windowMs = t1.getTime() - t0.getTime();

    console.log(`-- ${name}`);
    console.log(
      `subscribers                    ${subs.length} (${dashboards} dashboard(s) x ${perDashboard}), ${panelCount} panels each, refresh ${REFRESH_MS} ms`,
    );
    console.log(
      `connect all                    ${(connectMs / 1000).toFixed(1)} s (answers retried after a second, as the web client does: ${retried || "none"})`,
    );
    console.log(
      `panel-ticks in window          ${panelTicks} (${MEASURED_TICKS} ticks x ${dashboards} dashboard(s) x ${views} view(s) x ${panelCount} panels expected: ${MEASURED_TICKS * dashboards * views * panelCount})`,
    );
    // Panels changed by `prepare` read other tables than the counting view: their queries are not counted.
    if (!o.prepare) {
      console.log(
        `metric queries at the database ${queries} -> ${(queries / Math.max(1, panelTicks)).toFixed(2)} per panel per view per tick (target <= 1; identical panels of other dashboards share theirs)`,
      );
    }
    console.log(`error frames in window         ${[...errors].map(([code, n]) => `${n} ${code}`).join(", ") || "none"}`);
    if (!o.prepare) {
      console.log(
        `per-browser polling would issue ${perBrowser} -> ratio ${(perBrowser / Math.max(1, queries)).toFixed(0)}x fewer queries`,
      );
    }
    console.log(
      `delivery latency               min ${ms(percentile(latencies, 0))}, p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}, max ${ms(percentile(latencies, 100))} over ${latencies.length} deliveries (target p99 <= 250 ms)`,
    );
    console.log(`stream host RSS                ${mb(rssMax)} in window, peak ${mb(peak)} (target <= 512 MB)`);
    if (memory) console.log(memory);
    console.log(
      `stream host CPU                ${cpu.toFixed(2)} s over ${(windowMs / 1000).toFixed(1)} s (${((cpu / windowMs) * 60_000).toFixed(1)} s per minute)`,
    );
    console.log(`bytes per viewer per minute    ${kb(perMinute(bytes, subs.length, windowMs))} (on the wire, HTTP chunk framing included)`);
    console.log(`subscribers dropped            ${dropped}`);
    if (views > 1) {
      console.log(
        `views: viewers ${subs.length}, views ${views}, queries per panel per view per tick ${(queries / Math.max(1, panelTicks)).toFixed(2)} (${(queries / Math.max(1, panelTicks / views)).toFixed(2)} per panel per tick over the ${views} views), p99 ${ms(percentile(latencies, 99))}, RSS ${mb(rssMax)}`,
      );
    }
    for (const s of subs) s.destroy();
    return {
      latencies,
      rssMax,
      cpu,
      windowMs,
      bytesPerViewerMinute: perMinute(bytes, subs.length, windowMs),
      queries,
      panelTicks,
      ticksHeld: panelTicks >= MEASURED_TICKS * dashboards * views * panelCount,
    };
  } finally {
    await stopHost(host);
  }
}

/** Metric queries that started at the database within [t0, t1] (logged by the counting views). */
async function countStarts(db: BenchDatabases, t0: Date, t1: Date): Promise<number> {
  const rows = await db.metrics.log();
  return rows.filter((r) => r.phase === "start" && r.at >= t0 && r.at <= t1).length;
}

type Env = Record<string, string | undefined>;

/** A whole-number setting of the bench from `env[name]`: `fallback` when unset, else an integer in [min, max]. */
function wholeSetting(env: Env, name: string, what: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `(${min} or more)` : `from ${min} to ${max}`;
    throw new Error(`${name} must be a whole number of ${what} ${range}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/**
 * Subscribers per scenario: FANOUT_SUBSCRIBERS (default 10,000; a small machine or a low `ulimit -n` takes
 * 1000). The spread scenario shares them over 100 dashboards (at least one subscriber each).
 */
export function fanoutSize(env: Env = process.env): number {
  return wholeSetting(env, "FANOUT_SUBSCRIBERS", "subscribers", 10_000, 1);
}

/** FANOUT_TICKS: ticks in each scenario's measuring window (default 5). */
export function fanoutTicks(env: Env = process.env): number {
  return wholeSetting(env, "FANOUT_TICKS", "ticks", 5, 1, 100);
}

/** FANOUT_ROUNDS: pairs of the single and floor scenarios to run, alternating their order (default 1). */
export function fanoutRounds(env: Env = process.env): number {
  return wholeSetting(env, "FANOUT_ROUNDS", "rounds", 1, 1, 20);
}

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/**
 * FANOUT_FLOOR_RUNTIME: `node` (default) runs the floor's bundle on node's defaults; `image` gives it the stream host
 * image's memory settings too (its ENV's GLIBC_TUNABLES and NODE_OPTIONS, its CMD's node flags), to see what they do
 * for a bare broadcaster.
 */
export function floorRuntime(env: Env = process.env): "node" | "image" {
  const v = env.FANOUT_FLOOR_RUNTIME ?? "node";
  if (v !== "node" && v !== "image") throw new Error(`FANOUT_FLOOR_RUNTIME must be node or image, got ${JSON.stringify(v)}`);
  return v;
}

/** Starts the floor broadcaster (bench/fanout-floor.ts) as a child process and waits until it listens. */
async function startFloor(env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const image = builds !== null && floorRuntime() === "image";
  const args = builds
    ? [...(image ? imageNodeFlags("Dockerfile.stream-host") : []), builds.floor]
    : ["--import", "tsx", "bench/fanout-floor.ts"];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", FLOOR_REFRESH_MS: String(REFRESH_MS), ...(image ? imageRuntimeEnv() : {}), ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (c: string) => {
      out += c;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`the floor broadcaster exited with ${code}`)));
  });
  return { child, port };
}

async function stopFloor(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

/**
 * A viewer that decodes the stream (gunzip or raw inflate per Content-Encoding) and records, for every panel
 * frame, receipt time minus its `at`: the latency sample of the compressed runs.
 */
function decodingViewer(port: number): Promise<{ latencies: number[]; frames: number; destroy(): void }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/", agent: false }, (res) => {
      const enc = res.headers["content-encoding"];
      const decoder = enc === "gzip" ? zlib.createGunzip() : enc === "deflate" ? zlib.createInflateRaw() : null;
      const body = decoder ? res.pipe(decoder) : res;
      const v = { latencies: [] as number[], frames: 0, destroy: () => req.destroy() };
      onPanelLatency(body, (latency) => {
        v.frames++;
        v.latencies.push(latency);
      });
      body.on("error", () => {});
      resolve(v);
    });
    req.on("error", reject);
  });
}

/**
 * `viewers` clients on the floor broadcaster: raw sockets counting bytes (and, uncompressed, reading frames as the
 * stream-host scenarios do), plus 20 decoding viewers for latency. Prints one line and returns its figures.
 */
async function floorScenario(
  label: string,
  viewers: number,
  env: Record<string, string>,
  panelCount: number,
  o: { memory?: boolean } = {},
) {
  const { child, port } = await startFloor({ FLOOR_PANELS: String(panelCount), ...env });
  const pid = child.pid!;
  try {
    // The raw sockets send the stream host's request (a stream path and a session cookie of the same length): the
    // floor ignores both, but holds each request as the host does, so the two keep the same bytes per connection.
    const { path, cookie } = await floorRequest();
    // The decoding viewers are spread over the connection order (a broadcaster writes in that order, so the last
    // to connect are the last served): one before each twentieth of the raw sockets.
    const subs: BenchSubscriber[] = [];
    const sample: Awaited<ReturnType<typeof decodingViewer>>[] = [];
    const idle = rssOf(pid).rss;
    let first = 0;
    const stages = o.memory ? stagesOf(viewers) : [];
    const points: MemoryPoint[] = [];
    for (let i = 0; i < 20; i++) {
      sample.push(await decodingViewer(port));
      if (i === 0 && o.memory) {
        await until(() => sample[0].frames >= panelCount, 60_000, "the first viewer's first tick");
        await settle();
        first = rssOf(pid).rss;
      }
      const n = Math.floor(((i + 1) * viewers) / 20) - Math.floor((i * viewers) / 20);
      if (n > 0) {
        subs.push(
          ...(await subscribeMany(
            port,
            Array.from({ length: n }, () => path),
            cookie,
          )),
        );
      }
      if (stages.length > 0 && subs.length >= stages[0]) {
        stages.shift();
        await settle();
        points.push({ subscribers: subs.length, rss: rssOf(pid).rss, heapUsed: await floorHeapUsed(port) });
      }
    }
    await until(() => sample.every((v) => v.frames >= panelCount), 120_000, "every sampled viewer's first tick");
    for (const v of sample) v.latencies.length = 0;
    clearLatencies(subs);
    const cpu0 = cpuSecondsOf(pid);
    const bytes0 = subs.reduce((n, x) => n + x.bytes, 0);
    const frames0 = sample[0].frames;
    const t0 = Date.now();
    let rssMax = 0;
    while (Date.now() < t0 + MEASURED_TICKS * REFRESH_MS) {
      rssMax = Math.max(rssMax, rssOf(pid).rss);
      await new Promise((r) => setTimeout(r, 250));
    }
    const windowMs = Date.now() - t0;
    const cpu = cpuSecondsOf(pid) - cpu0;
    const bytes = subs.reduce((n, x) => n + x.bytes, 0) - bytes0;
    // Ticks the first viewer received in the window: the floor's cadence on this machine (its timer, its write loop).
    const ticks = Math.floor((sample[0].frames - frames0) / panelCount);
    // As for the stream host: the last tick of the window reaches its last viewers after the window ends.
    await new Promise((r) => setTimeout(r, 1000));
    // Uncompressed, every raw socket reads the frames (as in the stream-host scenarios); compressed, the sample does.
    const uncompressed = (env.FLOOR_COMPRESS ?? "none") === "none";
    const latencies = uncompressed ? latenciesIn(subs, t0, t0 + windowMs) : sample.flatMap((v) => v.latencies);
    const dropped = subs.filter((x) => x.closed).length;
    for (const x of subs) x.destroy();
    for (const v of sample) v.destroy();
    const figures = {
      cpu,
      windowMs,
      rssMax,
      latencies,
      bytesPerViewerMinute: perMinute(bytes, subs.length, windowMs),
      ticksHeld: ticks >= MEASURED_TICKS,
    };
    console.log(
      `${label}: viewers ${subs.length}, bytes per viewer per minute ${kb(figures.bytesPerViewerMinute)}, CPU ${((cpu / windowMs) * 60_000).toFixed(1)} s per minute, p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))} (${uncompressed ? "every viewer" : "20 decoding viewers spread over the connection order"}), RSS ${mb(rssMax)}, ticks in window ${ticks} of ${MEASURED_TICKS}, dropped ${dropped}`,
    );
    if (o.memory && points.length > 0) console.log(memoryLine(label, idle, first, points));
    return figures;
  } finally {
    await stopFloor(child);
  }
}

/** The request line's path and session cookie of a stream-host subscriber, at the same lengths, for the floor's clients. */
async function floorRequest(): Promise<{ path: string; cookie: string }> {
  const token = await createSessionTokens({ secret: BENCH_SESSION_SECRET, ttlSeconds: 3600 }).mint({
    sub: "bench",
    groups: ["viewers-00000000"],
  });
  return { path: "/api/dashboards/db_0000000000000000/stream", cookie: `svc_session=${token}` };
}

/** A time-bucketed panel over `series` (4 hosts, a row each every 10 s): incremental ticks apply to it. */
const BUCKETED_SQL =
  "SELECT $__timeGroup(ts, '1m') AS time, host, avg(v) AS v FROM series WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1";

/** 6 h of `series` history and a writer adding the 4 hosts' rows every second while the scenario runs. */
async function prepareSeries(db: BenchDatabases) {
  const pg = (await import("pg")).default;
  const client = new pg.Client({ connectionString: db.metricsUrl });
  await client.connect();
  await client.query(`
    CREATE TABLE IF NOT EXISTS series (ts timestamptz NOT NULL, host text NOT NULL, v double precision NOT NULL);
    CREATE INDEX IF NOT EXISTS series_ts ON series (ts);
    TRUNCATE series;
    INSERT INTO series SELECT t, 'host-' || h, random() * 100
      FROM generate_series(now() - interval '6 hours', now(), interval '10 seconds') AS t, generate_series(1, 4) AS h;
    ANALYZE series;`);
  const writer = setInterval(() => {
    void client.query("INSERT INTO series SELECT now(), 'host-' || h, random() * 100 FROM generate_series(1, 4) AS h").catch(() => {});
  }, 1000);
  return {
    /** Points the fixture's dashboards at the bucketed panel and adds `series` to its source's catalog. */
    prepare: async (fixture: { sourceId: string; dashboardIds: string[] }) => {
      await saveCatalog(
        db.pool,
        fixture.sourceId,
        {
          tables: [
            {
              schema: "public",
              name: "series",
              timeColumn: "ts",
              columns: [
                { name: "ts", type: "timestamp with time zone" },
                { name: "host", type: "text" },
                { name: "v", type: "double precision" },
              ],
            },
          ],
        },
        new Date(),
      );
      await db.pool.query(
        `UPDATE dashboards SET spec = jsonb_set(jsonb_set(spec, '{time}', '{"from":"now-6h","to":"now"}'),
           '{panels}', (SELECT jsonb_agg(jsonb_set(jsonb_set(p, '{sql}', to_jsonb($2::text)), '{type}', '"timeseries"')) FROM jsonb_array_elements(spec->'panels') AS p))
         WHERE id = ANY($1)`,
        [fixture.dashboardIds, BUCKETED_SQL],
      );
    },
    stop: async () => {
      clearInterval(writer);
      await client.end();
    },
  };
}

const SCENARIOS = ["single", "floor", "views", "spread", "deltas", "compression"] as const;

export async function run(): Promise<void> {
  const total = fanoutSize();
  const perDashboard = Math.max(1, Math.round(total / 100));
  // One client socket per subscriber here; the stream host child inherits the same limit for its side.
  requireOpenFiles(total + 500);
  const chosen = (process.env.FANOUT_SCENARIO ?? SCENARIOS.join(",")).split(",").map((x) => x.trim());
  for (const c of chosen) {
    if (!(SCENARIOS as readonly string[]).includes(c))
      throw new Error(`FANOUT_SCENARIO: unknown scenario ${c}; choose from ${SCENARIOS.join(", ")}`);
  }
  const count = (n: number) => n.toLocaleString("en-US");
  // FANOUT_HOST=source serves both from source under tsx (as before the bundles); default: the built bundles.
  const source = process.env.FANOUT_HOST === "source";
  if (!source && process.env.FANOUT_HOST !== undefined && process.env.FANOUT_HOST !== "bundle") {
    throw new Error(`FANOUT_HOST must be bundle or source, got ${JSON.stringify(process.env.FANOUT_HOST)}`);
  }
  const built = source ? null : await buildBundles();
  builds = built;
  console.log(
    source
      ? "stream host and floor: from source under tsx (FANOUT_HOST=source)"
      : `stream host and floor: built bundles on plain node, as the container runs the stream host, with its image's ${Object.entries(
          imageRuntimeEnv(),
        )
          .map(([k, v]) => `${k}=${v}`)
          .join(
            " ",
          )} and its CMD's node ${imageNodeFlags("Dockerfile.stream-host").join(" ")}; the floor ${floorRuntime() === "image" ? "with the same (FANOUT_FLOOR_RUNTIME=image)" : "on node's defaults"} (FANOUT_HOST=source: both under tsx)`,
  );
  const db = await startBenchDatabases();
  try {
    const runSingle = () => scenario(db, `${count(total)} subscribers on one dashboard`, 1, total, 4, { memory: true });
    const runFloor = () => {
      console.log(`-- the floor: a bare node:http broadcaster of the same frames, ${count(total)} subscribers`);
      return floorScenario("floor", total, { FLOOR_ROWS: "1" }, 4, { memory: true });
    };
    if (chosen.includes("single") && chosen.includes("floor")) {
      // FANOUT_ROUNDS pairs, alternating which goes first (ABBA), so drift in the machine's load falls on both.
      const rounds = fanoutRounds();
      const ratios: { p99: number; rss: number; cpu: number }[] = [];
      for (let r = 0; r < rounds; r++) {
        let single: Awaited<ReturnType<typeof scenario>>;
        let floor: Awaited<ReturnType<typeof floorScenario>>;
        if (r % 2 === 0) {
          single = await runSingle();
          floor = await runFloor();
        } else {
          floor = await runFloor();
          single = await runSingle();
        }
        const cpuMin = (x: { cpu: number; windowMs: number }) => (x.cpu / x.windowMs) * 60_000;
        const p99 = [percentile(single.latencies, 99), percentile(floor.latencies, 99)];
        const ratio = {
          p99: p99[0] / Math.max(1, p99[1]),
          rss: single.rssMax / floor.rssMax,
          cpu: cpuMin(single) / Math.max(0.01, cpuMin(floor)),
        };
        ratios.push(ratio);
        console.log(
          `fanout vs floor: p99 ${ms(p99[0])} vs ${ms(p99[1])}, CPU ${cpuMin(single).toFixed(1)} vs ${cpuMin(floor).toFixed(1)} s per minute, RSS ${mb(single.rssMax)} vs ${mb(floor.rssMax)}, cadence held ${single.ticksHeld ? "yes" : "no"} vs ${floor.ticksHeld ? "yes" : "no"}`,
        );
        console.log(
          `fanout floor: p99 ${ratio.p99.toFixed(2)}x, RSS ${ratio.rss.toFixed(2)}x (target <= 1.1x; CPU ${ratio.cpu.toFixed(2)}x)${rounds > 1 ? ` round ${r + 1} of ${rounds}` : ""}`,
        );
      }
      if (rounds > 1) {
        const median = (xs: number[]) => percentile(xs, 50);
        console.log(
          `fanout floor: p99 ${median(ratios.map((x) => x.p99)).toFixed(2)}x, RSS ${median(ratios.map((x) => x.rss)).toFixed(2)}x (target <= 1.1x; CPU ${median(ratios.map((x) => x.cpu)).toFixed(2)}x) median of ${rounds} rounds; p99 ratios ${ratios.map((x) => x.p99.toFixed(2)).join(", ")}`,
        );
      }
    } else if (chosen.includes("single")) await runSingle();
    else if (chosen.includes("floor")) await runFloor();
    if (chosen.includes("views")) {
      const viewers = Math.min(total, 1000);
      await scenario(db, `${count(viewers)} viewers over 10 views of one dashboard`, 1, viewers, 4, { views: 10 });
    }
    if (chosen.includes("spread")) {
      await scenario(db, `100 dashboards x ${count(perDashboard)} subscribers`, 100, perDashboard, 2);
    }
    if (chosen.includes("deltas")) {
      // The same time-bucketed panels with incremental ticks off (every tick a full frame) and on (panel-delta).
      const viewers = Math.min(total, 1000);
      const series = await prepareSeries(db);
      try {
        const arms: Record<string, number> = {};
        for (const [arm, every] of [
          ["full", "0"],
          ["delta", "720"],
        ] as const) {
          const r = await scenario(db, `${count(viewers)} viewers, 4 time-bucketed panels over 6 h, ${arm} frames`, 1, viewers, 4, {
            env: { INCREMENTAL_FULL_QUERY_EVERY_TICKS: every },
            prepare: series.prepare,
          });
          arms[arm] = r.bytesPerViewerMinute;
        }
        console.log(
          `fanout deltas: bytes per viewer per minute full ${kb(arms.full)} delta ${kb(arms.delta)} ratio ${(arms.full / Math.max(1, arms.delta)).toFixed(1)}x (${count(viewers)} viewers, 4 panels, refresh ${REFRESH_MS} ms)`,
        );
      } finally {
        await series.stop();
      }
    }
    if (chosen.includes("compression")) {
      // Delta-sized ticks (8 rows per panel, 4 panels) to every viewer, as the stream sends them between full queries.
      console.log(`-- compression on the floor broadcaster, ${count(total)} viewers, 4 panels of 8 rows per tick`);
      const modes: Record<string, Awaited<ReturnType<typeof floorScenario>>> = {};
      // FANOUT_COMPRESSION picks modes (comma-separated); per-connection gzip at 10,000 viewers takes many minutes.
      const picked = (process.env.FANOUT_COMPRESSION ?? "none,gzip,shared").split(",").map((m) => m.trim());
      for (const mode of ["none", "gzip", "shared"].filter((m) => picked.includes(m))) {
        modes[mode] = await floorScenario(`compression ${mode}`, total, { FLOOR_ROWS: "8", FLOOR_COMPRESS: mode }, 4);
      }
      const cpuMin = (m: string) => (modes[m].cpu / modes[m].windowMs) * 60_000;
      if (modes.none && modes.gzip && modes.shared)
        console.log(
          `compression: bytes per viewer per minute none ${kb(modes.none.bytesPerViewerMinute)} gzip per connection ${kb(modes.gzip.bytesPerViewerMinute)} (${(modes.none.bytesPerViewerMinute / modes.gzip.bytesPerViewerMinute).toFixed(1)}x less) shared deflate ${kb(modes.shared.bytesPerViewerMinute)} (${(modes.none.bytesPerViewerMinute / modes.shared.bytesPerViewerMinute).toFixed(1)}x less); CPU s per minute none ${cpuMin("none").toFixed(1)} gzip ${cpuMin("gzip").toFixed(1)} shared ${cpuMin("shared").toFixed(1)}`,
        );
      await productCompression({ db, viewers: total, prepareSeries, cpuSecondsOf });
    }
  } finally {
    await db.stop();
    if (built) rmSync(built.dir, { recursive: true, force: true });
    builds = null;
  }
}
