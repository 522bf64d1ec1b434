// Dependency faults as an operator's chaos test sees them: a real stream host process
// (stream-host/main.ts) whose config store and one metrics store are separate embedded PostgreSQL
// servers started here, each stopped and restarted, or hung with SIGSTOP on its postmaster and
// every backend and resumed with SIGCONT. A second metrics source on the run's shared server stays
// healthy throughout. Conditions are polled with generous timeouts; nothing asserts wall-clock times.
import { readFileSync, readdirSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import type { DashboardSpec } from "../lib/dashboards/spec.ts";
import { type EmbeddedPostgresHandle, freePort, startEmbeddedPostgres } from "../lib/embedded/postgres.ts";
import { createSource, saveCatalog } from "../lib/sources/index.ts";
import { newId } from "../lib/store/ids.ts";
import { migrate } from "../lib/store/migrate.ts";
import { createDatabase } from "../lib/testing/pg.ts";
import { createWorkspace } from "../lib/workspaces/store.ts";
import { type HostProcess, type StreamClient, get, openStream, spawnStreamHost } from "./testing/child.ts";
import type { SseFrame } from "./testing/sse-parse.ts";
import { updateDashboard } from "./testing/fixture.ts";

const SESSION_SECRET = "dependency-faults-session-secret-0123456789";

/** One embedded PostgreSQL of this file, which the tests stop, start, freeze and thaw. */
interface Server {
  dir: string;
  handle: EmbeddedPostgresHandle;
  port: number;
}

async function startServer(): Promise<Server> {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-faults-"));
  // The server may run as a separate postgres user (when tests run as root): it must be able to enter the folder.
  await chmod(dir, 0o755);
  // SCRAM, the default: the runner refuses weaker password exchanges for sources.
  const handle = await startEmbeddedPostgres({ dataDir: join(dir, "data") });
  return { dir, handle, port: handle.port };
}

async function restart(s: Server): Promise<void> {
  s.handle = await startEmbeddedPostgres({ dataDir: join(s.dir, "data"), port: s.port });
}

/** The postmaster and every process it started (backends and helpers), read from /proc. */
function serverProcesses(s: Server): number[] {
  const postmaster = Number(readFileSync(join(s.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  const pids = [postmaster];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // The parent pid is the second field after the command name, which is in parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === postmaster) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

function freeze(s: Server): number[] {
  const pids = serverProcesses(s);
  for (const pid of pids) process.kill(pid, "SIGSTOP");
  return pids;
}

function thaw(s: Server, frozen: number[]): void {
  for (const pid of new Set([...frozen, ...serverProcesses(s)])) {
    try {
      process.kill(pid, "SIGCONT");
    } catch {
      // Gone.
    }
  }
}

let config: Server;
let metrics: Server;
let configUrl: string;
let healthyUrl: string;
let store: pg.Pool;
let host: HostProcess;
let cookie: Record<string, string>;
let dashboards: { mixed: string; other: string };
let specs: { mixed: DashboardSpec };
const frozen: { server: Server; pids: number[] }[] = [];

const CATALOG = {
  tables: [{ schema: "public", name: "series_v", timeColumn: null, columns: [{ name: "n", type: "integer" }] }],
};

/** A database whose one view answers at once. */
async function prepareMetricsDb(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query("CREATE OR REPLACE VIEW series_v AS SELECT 1 AS n");
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  [config, metrics] = await Promise.all([startServer(), startServer()]);
  configUrl = config.handle.url("postgres");
  const metricsUrl = metrics.handle.url("postgres");
  healthyUrl = (await createDatabase("healthy")).url;
  await Promise.all([prepareMetricsDb(metricsUrl), prepareMetricsDb(healthyUrl)]);

  store = new pg.Pool({ connectionString: configUrl, max: 2 });
  store.on("error", () => {});
  await migrate(store);
  const tag = newId("ws")
    .slice(3, 11)
    .replace(/[^A-Za-z0-9]/g, "x");
  const ws = await createWorkspace(store, {
    name: `faults ${tag}`,
    viewer_group: `v-${tag}`,
    editor_group: `e-${tag}`,
    admin_group: `a-${tag}`,
  });
  const sourceOf = async (name: string, url: string, secretRef: string) => {
    const u = new URL(url);
    const s = await createSource(store, ws.id, {
      name,
      host: u.hostname,
      port: Number(u.port),
      database: u.pathname.slice(1),
      sslmode: "disable",
      secretRef,
    });
    await saveCatalog(store, s.id, CATALOG, new Date());
    return s.id;
  };
  const faulty = await sourceOf("faulty", metricsUrl, "FAULTY");
  const healthy = await sourceOf("healthy", healthyUrl, "HEALTHY");
  const spec = (panels: { id: string; sourceId: string }[]): DashboardSpec => ({
    title: "Faults",
    refreshIntervalMs: 200,
    time: { from: "now-1h", to: "now" },
    panels: panels.map((p) => ({ id: p.id, title: p.id, type: "stat", sourceId: p.sourceId, sql: "SELECT n FROM series_v" })),
  });
  specs = {
    mixed: spec([
      { id: "healthy", sourceId: healthy },
      { id: "faulty", sourceId: faulty },
    ]),
  };
  const insert = async (s: DashboardSpec) => {
    const id = newId("db");
    await store.query(
      "INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by) VALUES ($1, $2, $3, 1, 'test', 'test')",
      [id, ws.id, JSON.stringify(s)],
    );
    return id;
  };
  dashboards = { mixed: await insert(specs.mixed), other: await insert(spec([{ id: "healthy", sourceId: healthy }])) };

  const creds = (url: string) => ({ user: decodeURIComponent(new URL(url).username), pass: decodeURIComponent(new URL(url).password) });
  host = await spawnStreamHost({
    DATABASE_URL: configUrl,
    SESSION_SECRET,
    STREAM_PORT: String(await freePort()),
    NODE_ENV: "test",
    FRAMEWORK_MANUAL_SIG_HANDLE: "true",
    MIN_REFRESH_INTERVAL_MS: "200",
    DEFAULT_REFRESH_INTERVAL_MS: "200",
    PG_POOL_MAX: "3",
    READINESS_CHECK_TIMEOUT_MS: "2000",
    CONFIG_STORE_STATEMENT_TIMEOUT_MS: "1500",
    QUERY_TIMEOUT_SECONDS: "1",
    SOURCE_SECRET_REFS: `FAULTY:${ws.id};HEALTHY:${ws.id}`,
    SOURCE_ALLOWED_HOSTS: "127.0.0.1",
    FAULTY_USERNAME: creds(metricsUrl).user,
    FAULTY_PASSWORD: creds(metricsUrl).pass,
    HEALTHY_USERNAME: creds(healthyUrl).user,
    HEALTHY_PASSWORD: creds(healthyUrl).pass,
  });
  const token = await createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600 }).mint({
    sub: "viewer-1",
    groups: [ws.viewer_group],
  });
  cookie = { cookie: `svc_session=${token}` };
}, 180_000);

afterAll(async () => {
  for (const f of frozen) thaw(f.server, f.pids);
  if (host && host.child.exitCode === null && host.child.signalCode === null) {
    host.kill("SIGTERM");
    await host.exited;
  }
  await store?.end().catch(() => {});
  for (const s of [config, metrics]) {
    if (!s) continue;
    await s.handle.stop().catch(() => {});
    await rm(s.dir, { recursive: true, force: true });
  }
}, 120_000);

const streamPath = (id: string) => `/api/dashboards/${id}/stream`;

interface PanelFrame {
  panelId: string;
  at: number;
  result?: unknown;
  error?: { code: string; message: string };
}

/** Resolves once `n` more panel frames matching `pred` arrived on `s` after this call. */
async function more(s: StreamClient, n: number, pred: (f: PanelFrame) => boolean, timeoutMs = 60_000): Promise<PanelFrame[]> {
  const start = s.frames.length;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = panelFrames(s, start).filter(pred);
    if (got.length >= n) return got;
    if (Date.now() > deadline) throw new Error(`only ${got.length} of ${n} matching panel frames arrived`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The panel frames that arrived on `s` after its first `from` frames, in arrival order. */
function panelFrames(s: StreamClient, from: number): PanelFrame[] {
  return s.frames
    .slice(from)
    .filter((f) => f.frame.event === "panel")
    .map((f) => JSON.parse(f.frame.data ?? "null") as PanelFrame);
}

async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function readiness(): Promise<{
  status: number;
  body: { status: string; checks: { database: { status: string; reason?: string } } };
}> {
  const r = await get(host.port, "/api/ready");
  return { status: r.status, body: JSON.parse(r.body) };
}

/** A new stream's answer: the status, and for a refusal its body and Retry-After. */
async function newStream(id: string): Promise<{ status: number; retryAfter?: string; body?: { code: string } }> {
  const s = await openStream(host.port, streamPath(id), cookie);
  if (s.status === 200) {
    s.close();
    return { status: 200 };
  }
  const r = await get(host.port, streamPath(id), cookie);
  s.close();
  return { status: r.status, retryAfter: r.headers["retry-after"] as string | undefined, body: r.body ? JSON.parse(r.body) : undefined };
}

/** The config store's connections from the stream host's pool (application_name pulseboard). */
async function poolConnections(): Promise<number> {
  const { rows } = await store.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pulseboard'");
  return rows[0].n;
}

async function listening(): Promise<boolean> {
  const { rows } = await store.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pulseboard-listen'");
  return rows[0].n > 0;
}

/** After the store's return: a spec change made now reaches the open stream as `event: dashboard`. */
async function specChangeArrives(s: StreamClient, title: string): Promise<void> {
  await until(() => listening().catch(() => false), "the listener is back on the config store");
  await updateDashboard(store, dashboards.mixed, { ...specs.mixed, title });
  await s.waitFor((f: SseFrame) => f.event === "dashboard" && JSON.parse(f.data ?? "null")?.title === title, 30_000);
}

function noAddressInLogs(): void {
  const text = JSON.stringify(host.logs);
  for (const port of [config.port, metrics.port]) expect(text).not.toContain(`:${port}`);
  expect(text).not.toContain("127.0.0.1");
  expect(text).not.toContain("localhost");
}

describe("config store faults with subscribers attached", () => {
  test("stopped: open dashboards keep getting results from the healthy metrics store, new streams get the coded 503, and it recovers", async () => {
    const s = await openStream(host.port, streamPath(dashboards.mixed), cookie);
    expect(s.status).toBe(200);
    await more(s, 2, (f) => f.result !== undefined && f.panelId === "healthy");

    await config.handle.stop();
    try {
      await until(async () => (await readiness()).status === 503, "readiness reports the store down");
      expect((await readiness()).body.status).toBe("not_ready");
      // 60 ticks at a 200 ms cadence, well past the 5 s source cache (a read that fails used to drop the
      // source): every panel keeps sending results, none is an error.
      const after = await more(s, 120, (f) => f.panelId === "healthy" || f.panelId === "faulty");
      expect(after.filter((f) => f.error)).toEqual([]);

      const refused = await newStream(dashboards.other);
      expect(refused.status).toBe(503);
      expect(refused.retryAfter).toBe("5");
      expect(refused.body).toMatchObject({ code: "config_store_unavailable" });
    } finally {
      await restart(config);
    }
    await until(async () => (await readiness()).status === 200, "readiness back");
    expect((await newStream(dashboards.other)).status).toBe(200);
    await host.waitForLog((l) => l.msg === "config-store listener back");
    await specChangeArrives(s, "After the restart");
    s.close();
    noAddressInLogs();
  }, 180_000);

  test("hung (SIGSTOP): results keep arriving, new streams get the coded 503 within the readiness bound, the pool never exhausts, and it recovers", async () => {
    const s = await openStream(host.port, streamPath(dashboards.mixed), cookie);
    expect(s.status).toBe(200);
    await more(s, 2, (f) => f.result !== undefined && f.panelId === "healthy");

    const pids = freeze(config);
    frozen.push({ server: config, pids });
    try {
      await until(async () => (await readiness()).body.checks.database.reason === "TIMEOUT", "readiness reports TIMEOUT");
      // More new streams than the pool has connections, while the store is frozen: each is refused with the code.
      for (let i = 0; i < 5; i++) {
        const refused = await newStream(dashboards.other);
        expect(refused.status).toBe(503);
        expect(refused.retryAfter).toBe("5");
        expect(refused.body).toMatchObject({ code: "config_store_unavailable" });
      }
      const after = await more(s, 120, (f) => f.panelId === "healthy" || f.panelId === "faulty");
      expect(after.filter((f) => f.error)).toEqual([]);
    } finally {
      thaw(config, pids);
      frozen.pop();
    }
    await until(async () => (await readiness()).status === 200, "readiness back");
    // The pool was not exhausted: a stream opens at once, and the host holds no more connections than PG_POOL_MAX.
    expect((await newStream(dashboards.other)).status).toBe(200);
    expect(await poolConnections()).toBeLessThanOrEqual(3);
    await specChangeArrives(s, "After the hang");
    s.close();
    noAddressInLogs();
  }, 180_000);
});

describe("metrics store faults", () => {
  test("stopped: only its panels fail, with a code; the other source's panels and dashboards keep their results; it recovers", async () => {
    const s = await openStream(host.port, streamPath(dashboards.mixed), cookie);
    await more(s, 1, (f) => f.result !== undefined && f.panelId === "faulty");
    await metrics.handle.stop();
    try {
      const failed = await more(s, 3, (f) => f.panelId === "faulty" && f.error !== undefined);
      for (const f of failed) expect(["connection_refused", "connection_lost", "server_error", "starting_up"]).toContain(f.error!.code);
      const healthy = await more(s, 10, (f) => f.panelId === "healthy");
      expect(healthy.filter((f) => f.error)).toEqual([]);
    } finally {
      await restart(metrics);
    }
    await more(s, 2, (f) => f.panelId === "faulty" && f.result !== undefined);
    s.close();
    noAddressInLogs();
  }, 180_000);

  test("hung (SIGSTOP): the hung panel's run keeps its slot until the server can confirm its statement ended; the same dashboard's healthy panel keeps its cadence; it recovers on SIGCONT", async () => {
    const s = await openStream(host.port, streamPath(dashboards.mixed), cookie);
    const other = await openStream(host.port, streamPath(dashboards.other), cookie);
    await more(s, 1, (f) => f.result !== undefined && f.panelId === "faulty");
    const pids = freeze(metrics);
    frozen.push({ server: metrics, pids });
    const mark = s.frames.length;
    try {
      // A frozen server can neither cancel the hung panel's statement nor say that it ended
      // (pg_stat_activity, docs/query-runner.md), so its run holds its slot rather than starting another
      // backend; the healthy panel of the same dashboard keeps its cadence meanwhile.
      const healthyMeanwhile = await more(s, 10, (f) => f.panelId === "healthy");
      expect(healthyMeanwhile.filter((f) => f.error)).toEqual([]);
      // Once its statement outlived the timeout (and the runner's grace), the hung panel says why, once: one
      // run held, no new one started, no result.
      const faulty = () => panelFrames(s, mark).filter((f) => f.panelId === "faulty");
      await until(() => faulty().length > 0, "the hung panel's frame naming the held statement");
      await more(s, 10, (f) => f.panelId === "healthy");
      expect(faulty()).toEqual([
        {
          panelId: "faulty",
          at: expect.any(Number),
          error: { code: "query_held", reason: "query_held", message: expect.stringMatching(/has not confirmed that it ended/) },
        },
      ]);
      // The dashboard without the hung source keeps its cadence throughout.
      const healthy = await more(other, 10, (f) => f.panelId === "healthy");
      expect(healthy.filter((f) => f.error)).toEqual([]);
    } finally {
      thaw(metrics, pids);
      frozen.pop();
    }
    await more(s, 2, (f) => f.panelId === "faulty" && f.result !== undefined, 120_000);
    s.close();
    other.close();
    noAddressInLogs();
  }, 240_000);
});
