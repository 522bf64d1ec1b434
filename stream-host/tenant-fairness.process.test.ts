// Fair connections between tenants, as a hostile tenant would try it: a real stream host process with
// SOURCE_HOST_CONNECTIONS_MAX=6 and two workspaces whose sources point at one metrics server. Workspace B's five
// sources and 20-panel dashboard (refreshing every 200 ms, half of its panels holding a connection 300 ms per query)
// ask for far more connections than the cap; workspace A's two-panel dashboard still gets a result for every panel
// from its first tick on and never a host_connection_limit error, while B is held to its share of the cap.
// Conditions are polled with generous timeouts; nothing asserts wall-clock times.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import type { DashboardSpec } from "../lib/dashboards/spec.ts";
import { freePort } from "../lib/embedded/postgres.ts";
import { createSource, saveCatalog } from "../lib/sources/index.ts";
import { newId } from "../lib/store/ids.ts";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";
import { type Workspace, createWorkspace } from "../lib/workspaces/store.ts";
import { type HostProcess, type StreamClient, openStream, spawnStreamHost } from "./testing/child.ts";

const SESSION_SECRET = "tenant-fairness-session-secret-0123456789";
const CAP = 6;

const CATALOG = {
  tables: ["plain_v", "busy_v"].map((name) => ({
    schema: "public",
    name,
    timeColumn: null,
    columns: [{ name: "n", type: "integer" }],
  })),
};

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let metricsUrl: string;
let metricsName: string;
let host: HostProcess;
let tenants: { a: { ws: Workspace; dashboard: string }; b: { ws: Workspace; dashboard: string } };

async function seedTenant(label: string, sources: number, panels: { view: string }[], refreshIntervalMs: number) {
  const tag = newId("ws")
    .slice(3, 11)
    .replace(/[^A-Za-z0-9]/g, "x");
  const ws = await createWorkspace(store.pool, {
    name: `tenant ${label} ${tag}`,
    viewer_group: `v-${label}-${tag}`,
    editor_group: `e-${label}-${tag}`,
    admin_group: `a-${label}-${tag}`,
  });
  const u = new URL(metricsUrl);
  const sourceIds: string[] = [];
  for (let i = 0; i < sources; i++) {
    const s = await createSource(store.pool, ws.id, {
      name: `${label} source ${i}`,
      host: u.hostname,
      port: Number(u.port),
      database: u.pathname.slice(1),
      sslmode: "disable",
      secretRef: `TENANT_${label.toUpperCase()}`,
    });
    await saveCatalog(store.pool, s.id, CATALOG, new Date());
    sourceIds.push(s.id);
  }
  const spec: DashboardSpec = {
    title: `Tenant ${label}`,
    refreshIntervalMs,
    time: { from: "now-1h", to: "now" },
    panels: panels.map((p, i) => ({
      id: `p${i}`,
      title: `p${i}`,
      type: "stat",
      sourceId: sourceIds[i % sourceIds.length]!,
      sql: `SELECT n FROM ${p.view}`,
    })),
  };
  const dashboard = newId("db");
  await store.pool.query(
    "INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by) VALUES ($1, $2, $3, 1, 'test', 'test')",
    [dashboard, ws.id, JSON.stringify(spec)],
  );
  return { ws, dashboard };
}

beforeAll(async () => {
  store = await createTestConfigStore();
  ({ url: metricsUrl, name: metricsName } = await createDatabase("fair"));
  const admin = new pg.Client({ connectionString: metricsUrl });
  await admin.connect();
  try {
    await admin.query(`
      CREATE VIEW plain_v AS SELECT 1 AS n;
      CREATE VIEW busy_v AS SELECT 1 AS n FROM pg_sleep(0.3);
    `);
  } finally {
    await admin.end();
  }
  tenants = {
    a: await seedTenant("a", 1, [{ view: "plain_v" }, { view: "plain_v" }], 500),
    // Alternating views over five sources: each source has two holding and two quick panels.
    b: await seedTenant(
      "b",
      5,
      Array.from({ length: 20 }, (_, i) => ({ view: i % 2 === 0 ? "busy_v" : "plain_v" })),
      200,
    ),
  };
  const u = new URL(metricsUrl);
  const user = decodeURIComponent(u.username);
  const pass = decodeURIComponent(u.password);
  host = await spawnStreamHost({
    DATABASE_URL: store.url,
    SESSION_SECRET,
    STREAM_PORT: String(await freePort()),
    NODE_ENV: "test",
    FRAMEWORK_MANUAL_SIG_HANDLE: "true",
    MIN_REFRESH_INTERVAL_MS: "200",
    DEFAULT_REFRESH_INTERVAL_MS: "500",
    SOURCE_HOST_CONNECTIONS_MAX: String(CAP),
    // B's panels repeat statements on a source (panels i and i + 10); shared queries would halve the pressure
    // this test is about.
    COALESCE_PANEL_QUERIES: "false",
    SOURCE_SECRET_REFS: `TENANT_A:${tenants.a.ws.id};TENANT_B:${tenants.b.ws.id}`,
    // The metrics database shares the loopback test server with the config store: allowed explicitly.
    SOURCE_ALLOWED_HOSTS: u.hostname,
    TENANT_A_USERNAME: user,
    TENANT_A_PASSWORD: pass,
    TENANT_B_USERNAME: user,
    TENANT_B_PASSWORD: pass,
  });
}, 120_000);

afterAll(async () => {
  if (host && host.child.exitCode === null && host.child.signalCode === null) {
    host.kill("SIGTERM");
    await host.exited;
  }
  await store?.close();
}, 60_000);

interface PanelFrame {
  panelId: string;
  at: number;
  result?: unknown;
  error?: { code: string; message: string };
}

function panelFrames(s: StreamClient, from = 0): PanelFrame[] {
  return s.frames
    .slice(from)
    .filter((f) => f.frame.event === "panel")
    .map((f) => JSON.parse(f.frame.data ?? "null") as PanelFrame);
}

/** Resolves once `n` panel frames matching `pred` arrived on `s` after its first `from` frames. */
async function frames(s: StreamClient, n: number, pred: (f: PanelFrame) => boolean, from = 0, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = panelFrames(s, from).filter(pred);
    if (got.length >= n) return got;
    if (Date.now() > deadline) throw new Error(`only ${got.length} of ${n} matching panel frames arrived`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The stream host's connections to the metrics database right now (its pools' application_name). */
async function metricsConnections(): Promise<number> {
  const { rows } = await store.pool.query(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'pulseboard'",
    [metricsName],
  );
  return rows[0].n;
}

async function cookieOf(ws: Workspace, sub: string) {
  const token = await createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600 }).mint({ sub, groups: [ws.viewer_group] });
  return { cookie: `svc_session=${token}` };
}

describe("two workspaces on one metrics server, SOURCE_HOST_CONNECTIONS_MAX=6", () => {
  test("workspace B's five sources and 20 panels cannot make workspace A's panels fail with host_connection_limit", async () => {
    const b = await openStream(host.port, `/api/dashboards/${tenants.b.dashboard}/stream`, await cookieOf(tenants.b.ws, "viewer-b"));
    expect(b.status).toBe(200);
    // B is past its share: some of its own panels are refused (the pressure this test is about), others get results.
    await frames(b, 1, (f) => f.error?.code === "host_connection_limit");
    await frames(b, 10, (f) => f.result !== undefined);
    // B's pools now hold connections (idle between B's ticks, or running) on every source it could reach.
    let peak = 0;
    const sample = async () => {
      peak = Math.max(peak, await metricsConnections());
    };
    for (let i = 0; i < 10; i++) await sample();

    const a = await openStream(host.port, `/api/dashboards/${tenants.a.dashboard}/stream`, await cookieOf(tenants.a.ws, "viewer-a"));
    expect(a.status).toBe(200);
    await a.waitFor((f) => f.event === "snapshot");
    // Within its first two ticks each of A's panels has a result: the first frame of each panel is one.
    const firstTwo = await frames(a, 4, () => true);
    for (const id of ["p0", "p1"]) {
      const first = firstTwo.find((f) => f.panelId === id);
      expect(first, `first frame of ${id}`).toBeDefined();
      expect(first!.error, `first frame of ${id}`).toBeUndefined();
      expect(first!.result).toBeDefined();
    }
    // Forty more of A's panel frames (twenty ticks) while B keeps pressing: none is an error.
    const markB = b.frames.length;
    const later = await frames(a, 40, () => true);
    for (let i = 0; i < 10; i++) await sample();
    expect(later.filter((f) => f.error)).toEqual([]);
    // B kept running meanwhile, and kept being held to its share.
    await frames(b, 1, (f) => f.error?.code === "host_connection_limit", markB);
    await frames(b, 10, (f) => f.result !== undefined, markB);
    // The cap held throughout the samples.
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(CAP);
    a.close();
    b.close();
  }, 180_000);
});
