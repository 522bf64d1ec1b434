// Shared set-up of the stream-host benchmarks (bench/fanout.ts, scrape.ts, drain.ts): an embedded
// PostgreSQL with a migrated config store and a counting metrics database, a real stream host child
// process over loopback, and a light SSE client that can hold thousands of connections.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createSessionTokens } from "../../lib/auth/session.ts";
import { freePort, startEmbeddedPostgres } from "../../lib/embedded/postgres.ts";
import { migrate } from "../../lib/store/migrate.ts";
import { imageEnv, imageNodeFlags } from "../../infra/dockerfile.ts";
import { type HostProcess, spawnStreamHost } from "./child.ts";
import { prepareCountingMetricsDb, seedStreamFixture } from "./seed.ts";

export const BENCH_SESSION_SECRET = "bench-session-secret-0123456789abcdef";

/** Starts PostgreSQL, a config store and a counting metrics database; `stop` removes everything. */
export async function startBenchDatabases() {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-bench-pg-"));
  const { chmod } = await import("node:fs/promises");
  await chmod(dir, 0o755);
  const server = await startEmbeddedPostgres({ dataDir: join(dir, "data") });
  const admin = new pg.Client({ connectionString: server.url("postgres") });
  await admin.connect();
  await admin.query("CREATE DATABASE bench_config");
  await admin.query("CREATE DATABASE bench_metrics");
  await admin.end();
  const configUrl = server.url("bench_config");
  const metricsUrl = server.url("bench_metrics");
  const pool = new pg.Pool({ connectionString: configUrl, max: 4 });
  pool.on("error", () => {});
  await migrate(pool);
  const metrics = await prepareCountingMetricsDb(metricsUrl);
  return {
    configUrl,
    metricsUrl,
    pool,
    metrics,
    async stop() {
      await metrics.close().catch(() => {});
      await pool.end().catch(() => {});
      await server.stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export type BenchDatabases = Awaited<ReturnType<typeof startBenchDatabases>>;

/** Seeds dashboards and starts a stream host child for them. */
export async function startBenchHost(
  db: BenchDatabases,
  opts: {
    dashboards: number;
    panels: { id: string; view: string }[];
    refreshIntervalMs: number;
    env?: Record<string, string>;
    /** Runs after the fixture is seeded and before the host starts (to change its dashboards or catalog). */
    prepare?: (fixture: Awaited<ReturnType<typeof seedStreamFixture>>) => Promise<void>;
    /**
     * The host's entry: default the source under tsx; a built bundle (`.mjs`) runs on plain node with imageRuntimeEnv()
     * and the node flags of the image's CMD (imageNodeFlags).
     */
    entry?: string;
  },
) {
  const fixture = await seedStreamFixture(db.pool, {
    metricsUrl: db.metricsUrl,
    panels: opts.panels,
    refreshIntervalMs: opts.refreshIntervalMs,
    dashboards: opts.dashboards,
  });
  await opts.prepare?.(fixture);
  const host = await spawnStreamHost(
    {
      DATABASE_URL: db.configUrl,
      SESSION_SECRET: BENCH_SESSION_SECRET,
      STREAM_PORT: String(await freePort()),
      NODE_ENV: "test",
      MIN_REFRESH_INTERVAL_MS: String(Math.min(2000, opts.refreshIntervalMs)),
      FRAMEWORK_MANUAL_SIG_HANDLE: "true",
      ...(opts.entry?.endsWith(".mjs") ? imageRuntimeEnv() : {}),
      ...fixture.env,
      ...opts.env,
    },
    opts.entry,
    opts.entry?.endsWith(".mjs") ? imageNodeFlags("Dockerfile.stream-host") : [],
  );
  const token = await createSessionTokens({ secret: BENCH_SESSION_SECRET, ttlSeconds: 3600 }).mint({
    sub: "bench",
    groups: [fixture.workspace.viewer_group],
  });
  return { host, fixture, cookie: `svc_session=${token}` };
}

/**
 * The runtime settings the stream host's image sets in its ENV (infra/Dockerfile.stream-host): glibc's malloc tunables
 * and NODE_OPTIONS, which shape its memory (with the node flags of its CMD, imageNodeFlags). A built bundle runs with
 * them, as the container runs it; the source under tsx runs with node's defaults.
 */
export function imageRuntimeEnv(): Record<string, string> {
  const env = imageEnv("Dockerfile.stream-host");
  const picked: Record<string, string> = {};
  for (const k of ["GLIBC_TUNABLES", "NODE_OPTIONS"]) if (env[k] !== undefined) picked[k] = env[k];
  return picked;
}

/** Resident set size of a process in bytes (current and peak), from /proc. */
export function rssOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

/**
 * A minimal SSE subscriber for benchmarks: no frame objects, only what the figures need. For every
 * `panel` frame it records receipt time minus the frame's `at` (the instant the panel's result was
 * in, i.e. the poller's completion), and it notices the terminal `draining` frame.
 */
export interface BenchSubscriber {
  status: number;
  /** Bytes received after the response head (on the wire: compressed bytes when the stream is compressed). */
  bytes: number;
  latencies: number[];
  /** The tick's `at` of each latency sample (same index): a window counts the ticks that completed in it. */
  latencyAts: number[];
  panelFrames: number;
  /** For sample subscribers only: every (panel, at) seen, one per panel per tick. */
  /** Panel frames seen (sampled subscribers only), with the error code of an error frame. */
  seen: { panelId: string; at: number; code?: string }[] | null;
  snapshot: boolean;
  draining: boolean;
  terminalAt: number;
  closed: boolean;
  destroy(): void;
}

const PANEL_AT = /"panelId":"([^"]+)","at":(\d+)/;
const ERROR_CODE = /"error":\{"code":"([^"]+)"/;

export function subscribe(
  port: number,
  path: string,
  cookie: string,
  opts: { sample?: boolean; now?: () => number; onSocket?: (socket: net.Socket) => void } = {},
): Promise<BenchSubscriber> {
  const now = opts.now ?? Date.now;
  // A raw socket rather than http.get: thousands of subscribers share one benchmark process, and the
  // less each receipt costs here, the less the figures measure the client instead of the host.
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    opts.onSocket?.(socket);
    socket.setNoDelay(true);
    const sub: BenchSubscriber = {
      status: 0,
      bytes: 0,
      latencies: [],
      latencyAts: [],
      panelFrames: 0,
      seen: opts.sample ? [] : null,
      snapshot: false,
      draining: false,
      terminalAt: 0,
      closed: false,
      destroy: () => socket.destroy(),
    };
    let head = true;
    let rest = "";
    socket.setEncoding("latin1");
    socket.on("connect", () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: ${cookie}\r\nAccept: text/event-stream\r\n\r\n`);
    });
    socket.on("data", (chunk: string) => {
      const t = now();
      let text = rest + chunk;
      if (head) {
        const end = text.indexOf("\r\n\r\n");
        if (end === -1) {
          rest = text;
          return;
        }
        sub.status = Number(text.slice(9, 12));
        head = false;
        text = text.slice(end + 4);
        sub.bytes += text.length;
        resolve(sub);
      } else sub.bytes += chunk.length;
      // Chunk-size lines of the HTTP framing sit between frames; the markers below are found regardless.
      const blocks = text.split("\n\n");
      rest = blocks.pop() ?? "";
      // A tick's panel frames arrive together when the tick completes; latency is counted from the
      // latest `at` among them (the tick's completion), for each frame delivered.
      let latest = 0;
      let panelsHere = 0;
      for (const b of blocks) {
        if (b.includes("event: panel")) {
          // event: panel and event: panel-delta frames alike.
          const m = PANEL_AT.exec(b);
          if (m) {
            const at = Number(m[2]);
            if (at > latest) latest = at;
            panelsHere++;
            sub.seen?.push({ panelId: m[1], at, code: ERROR_CODE.exec(b)?.[1] });
          }
          sub.panelFrames++;
        } else if (b.includes("event: snapshot")) sub.snapshot = true;
        else if (b.includes("event: draining")) {
          sub.draining = true;
          sub.terminalAt = t;
        }
      }
      for (let i = 0; i < panelsHere; i++) {
        sub.latencies.push(t - latest);
        sub.latencyAts.push(latest);
      }
    });
    socket.on("close", () => {
      sub.closed = true;
      if (head) reject(new Error("connection closed before the response"));
    });
    socket.on("error", (err) => {
      if (head) reject(err);
    });
  });
}

/**
 * Subscribers refused with a status the web client retries (503 config_store_unavailable while the store is slow
 * to answer a connection storm, 429), and how often, by status: the benchmarks retry them as browsers do.
 */
export const refusals = new Map<number, number>();

/** How long a connection storm may go without a single answer before subscribeMany reports it and fails. */
const STALL_MS = 60_000;

/**
 * Opens `count` subscribers with at most `concurrency` connection attempts at a time. A subscriber answered 503 or
 * 429 tries again after a second, up to 10 times, as the web client does (counted in `refusals`).
 */
export async function subscribeMany(
  port: number,
  paths: string[],
  cookie: string,
  opts: { concurrency?: number; sampled?: Set<string> } = {},
): Promise<BenchSubscriber[]> {
  const concurrency = opts.concurrency ?? 250;
  // Paths whose first subscriber is already connected (a scenario connecting in stages passes one set to each call).
  const sampled = opts.sampled ?? new Set<string>();
  const subs: BenchSubscriber[] = new Array(paths.length);
  let next = 0;
  /** Attempts waiting for their response head: the stall report below describes them. */
  const waiting = new Map<number, { path: string; since: number; socket?: net.Socket }>();
  let answered = 0;
  const attempt = async (i: number, sample: boolean) => {
    const entry: { path: string; since: number; socket?: net.Socket } = { path: paths[i], since: Date.now() };
    waiting.set(i, entry);
    try {
      return await subscribe(port, paths[i], cookie, { sample, onSocket: (socket) => (entry.socket = socket) });
    } finally {
      waiting.delete(i);
      answered++;
    }
  };
  async function worker() {
    while (next < paths.length && !stalled) {
      const i = next++;
      // The first subscriber of every dashboard keeps a record of each (panel, tick) it saw.
      const sample = !sampled.has(paths[i]);
      sampled.add(paths[i]);
      let sub = await attempt(i, sample);
      for (let n = 0; n < 10 && (sub.status === 503 || sub.status === 429); n++) {
        refusals.set(sub.status, (refusals.get(sub.status) ?? 0) + 1);
        sub.destroy();
        await new Promise((r) => setTimeout(r, 1000));
        sub = await attempt(i, sample);
      }
      subs[i] = sub;
    }
  }
  // A connection storm that stops being answered is reported, not waited on forever: after STALL_MS without any
  // answer, the attempts still waiting are described (connected or not, request sent, bytes back) and the run fails.
  let stalled: string | null = null;
  let lastAnswered = -1;
  let lastProgress = Date.now();
  const watch = setInterval(() => {
    if (answered !== lastAnswered) {
      lastAnswered = answered;
      lastProgress = Date.now();
      return;
    }
    if (Date.now() - lastProgress < STALL_MS || waiting.size === 0) return;
    const states = new Map<string, number>();
    for (const w of waiting.values()) {
      const so = w.socket;
      const state = !so
        ? "no socket"
        : so.connecting
          ? "still connecting"
          : so.bytesRead > 0
            ? "answer incomplete"
            : "request sent, no byte back";
      states.set(state, (states.get(state) ?? 0) + 1);
    }
    const oldest = Math.max(...[...waiting.values()].map((w) => Date.now() - w.since));
    stalled = `${waiting.size} connection attempts unanswered for ${(STALL_MS / 1000).toFixed(0)} s (oldest ${(oldest / 1000).toFixed(0)} s; ${answered} answered, ${subs.filter(Boolean).length} of ${paths.length} open): ${[...states].map(([k, n]) => `${n} ${k}`).join(", ")}; ${new Set([...waiting.values()].map((w) => w.path)).size} distinct paths`;
    for (const w of waiting.values()) w.socket?.destroy();
  }, 1000);
  try {
    await Promise.all(
      Array.from({ length: concurrency }, () =>
        worker().catch((err) => {
          if (!stalled) throw err;
        }),
      ),
    );
  } finally {
    clearInterval(watch);
  }
  if (stalled) {
    for (const s of subs) s?.destroy();
    throw new Error(`the connection storm stalled: ${stalled}`);
  }
  const bad = new Map<number, number>();
  for (const s of subs) if (s.status !== 200) bad.set(s.status, (bad.get(s.status) ?? 0) + 1);
  if (bad.size > 0) {
    throw new Error(`subscribers were refused: ${[...bad].map(([status, n]) => `${n} with ${status}`).join(", ")}`);
  }
  return subs;
}

/**
 * The latency samples of every subscriber for the ticks that completed (`at`) in [fromMs, toMs]: every delivery of
 * those ticks, however late, and none of a tick that began before the window or after it.
 */
export function latenciesIn(subs: readonly BenchSubscriber[], fromMs: number, toMs: number): number[] {
  const out: number[] = [];
  for (const s of subs) {
    for (let i = 0; i < s.latencies.length; i++) {
      const at = s.latencyAts[i]!;
      if (at >= fromMs && at <= toMs) out.push(s.latencies[i]!);
    }
  }
  return out;
}

/** Forgets every subscriber's latency samples (the start of a measuring window). */
export function clearLatencies(subs: readonly BenchSubscriber[]): void {
  for (const s of subs) {
    s.latencies.length = 0;
    s.latencyAts.length = 0;
  }
}

const PANEL_AT_ALL = new RegExp(PANEL_AT.source, "g");

/**
 * Reads a decoded SSE body and calls `onPanel` with the receipt time minus `at` for every panel frame (full or
 * delta) in it: the latency sample of the benches' sampled viewers.
 */
export function onPanelLatency(body: NodeJS.ReadableStream, onPanel: (latencyMs: number) => void): void {
  let rest = "";
  body.setEncoding("utf8");
  body.on("data", (chunk: string) => {
    const t = Date.now();
    const blocks = (rest + chunk).split("\n\n");
    rest = blocks.pop() ?? "";
    for (const b of blocks) {
      if (!b.startsWith("event: panel")) continue;
      for (const m of b.matchAll(PANEL_AT_ALL)) onPanel(t - Number(m[2]));
    }
  });
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Polls `cond` every 50 ms (benchmarks only). */
export async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string) {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function stopHost(host: HostProcess) {
  if (host.child.exitCode === null && host.child.signalCode === null) {
    host.kill("SIGKILL");
    await host.exited;
  }
}

/** The soft limit on open files of this process (from /proc), or null where unknown. */
export function openFileLimit(): number | null {
  try {
    const m = /Max open files\s+(\d+)/.exec(readFileSync("/proc/self/limits", "utf8"));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Refuses to start a run that would run out of file descriptors half-way, with the fix in the message. */
export function requireOpenFiles(needed: number) {
  const limit = openFileLimit();
  if (limit !== null && limit < needed) {
    throw new Error(
      `this benchmark opens about ${needed} sockets but the open-file limit is ${limit}; run it after \`ulimit -n ${needed}\``,
    );
  }
}

export const mb = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MB`;
export const ms = (v: number) => `${v.toFixed(1)} ms`;
