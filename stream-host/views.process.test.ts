// Views on shared pollers, as a real stream host process serves them: 3 views (the saved one, another range, another
// variable value) x 100 viewers over real sockets cost exactly 3 queries per panel per tick, counted at the metrics
// database (each panel reads a view that logs every query it serves, stream-host/testing/seed.ts), and past
// MAX_VIEWS_PER_DASHBOARD a new view is 429 too_many_views while the open views' viewers keep their frames.
// Ticks come from spec changes (the config store's NOTIFY makes every view tick at once) under a one-hour
// cadence, so the count per tick is exact without any wall-clock assumption.
import { afterAll, beforeAll, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import { freePort } from "../lib/embedded/postgres.ts";
import type { DashboardSpec } from "../lib/dashboards/spec.ts";
import type { PanelUpdate, SnapshotFrame } from "../lib/live/frames.ts";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";
import { type HostProcess, type StreamClient, get, openStream, spawnStreamHost } from "./testing/child.ts";
import { prepareCountingMetricsDb, seedStreamFixture } from "./testing/seed.ts";

const SESSION_SECRET = "views-process-session-secret-0123456789";
const VIEWERS_PER_VIEW = 100;
const PANELS = [
  { id: "a", view: "fast_v", logged: "fast" },
  { id: "b", view: "counted_v", logged: "counted" },
];

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let metricsUrl: string;
let metricsDb: Awaited<ReturnType<typeof prepareCountingMetricsDb>>;
let host: HostProcess | null = null;

beforeAll(async () => {
  store = await createTestConfigStore();
  metricsUrl = (await createDatabase("views")).url;
  metricsDb = await prepareCountingMetricsDb(metricsUrl);
});

afterAll(async () => {
  if (host && host.child.exitCode === null && host.child.signalCode === null) host.kill("SIGKILL");
  await metricsDb.close();
  await store.close();
});

/** Polls until `ok()` holds (frames over real sockets, rows at the database); fails after 20 s. */
async function until(what: string, ok: () => boolean | Promise<boolean>) {
  const deadline = Date.now() + 20_000;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether `client` has a result of every panel from frame `from` on (a snapshot's panels count too). */
function hasResults(client: StreamClient, from: number): boolean {
  const seen = new Set<string>();
  for (const { frame } of client.frames.slice(from)) {
    if (frame.event === "snapshot") for (const p of (JSON.parse(frame.data ?? "{}") as SnapshotFrame).panels) seen.add(p.panelId);
    if (frame.event === "panel") {
      const u = JSON.parse(frame.data ?? "{}") as PanelUpdate;
      if ("result" in u) seen.add(u.panelId);
    }
  }
  return PANELS.every((p) => seen.has(p.id));
}

/** Queries each panel's view has served, counted at the metrics database. */
const counts = async () => Promise.all(PANELS.map((p) => metricsDb.count(p.logged)));

test("3 views x 100 viewers: exactly 3 queries per panel per tick at the database; past the view cap a new view is 429", async () => {
  const seeded = await seedStreamFixture(store.pool, {
    metricsUrl,
    panels: PANELS.map(({ id, view }) => ({ id, view })),
    refreshIntervalMs: 3_600_000,
  });
  const dashboardId = seeded.dashboardIds[0];
  // Each panel names the variable, so the three views run three distinct statements (bound values or range):
  // shared queries (COALESCE_PANEL_QUERIES) can never fold two of them into one.
  const { rows } = await store.pool.query("SELECT spec FROM dashboards WHERE id = $1", [dashboardId]);
  const spec = rows[0].spec as DashboardSpec;
  spec.variables = [{ name: "env", type: "custom", values: ["prod", "staging"], default: "prod" }];
  for (const p of spec.panels) p.sql = `${p.sql} WHERE $env::text <> ''`;
  await store.pool.query("UPDATE dashboards SET spec = $2 WHERE id = $1", [dashboardId, JSON.stringify(spec)]);
  host = await spawnStreamHost({
    DATABASE_URL: store.url,
    SESSION_SECRET,
    STREAM_PORT: String(await freePort()),
    NODE_ENV: "test",
    FRAMEWORK_MANUAL_SIG_HANDLE: "true",
    MAX_VIEWS_PER_DASHBOARD: "2",
    ...seeded.env,
  });
  const token = await createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600 }).mint({
    sub: "viewer-1",
    groups: [seeded.workspace.viewer_group],
  });
  const cookie = { cookie: `svc_session=${token}` };
  const path = (q: string) => `/api/dashboards/${dashboardId}/stream${q ? `?${q}` : ""}`;
  const views = ["", "from=now-6h", "var-env=staging"];
  const h = host;

  // Viewers of the three views arrive interleaved.
  const clients: StreamClient[] = [];
  for (let i = 0; i < VIEWERS_PER_VIEW; i++) {
    clients.push(...(await Promise.all(views.map((q) => openStream(h.port, path(q), cookie)))));
  }
  expect(clients.map((c) => c.status).every((s) => s === 200)).toBe(true);
  await until("every viewer has tick 1's results", () => clients.every((c) => hasResults(c, 0)));
  expect(await counts()).toEqual([3, 3]);

  // Past the cap (2 views besides the saved one) a new view is refused before any stream opens.
  const refused = await get(h.port, path("from=now-3h"), cookie);
  expect(refused.status).toBe(429);
  expect(refused.headers["retry-after"]).toMatch(/^\d+$/);
  expect(JSON.parse(refused.body).code).toBe("too_many_views");

  // Ticks 2 and 3: a spec change ticks every view at once; every viewer gets the new results.
  for (let tick = 2; tick <= 3; tick++) {
    const marks = clients.map((c) => c.frames.length);
    await store.pool.query(
      "UPDATE dashboards SET spec = jsonb_set(spec, '{title}', to_jsonb($2::text)), version = version + 1 WHERE id = $1",
      [dashboardId, `Views, tick ${tick}`],
    );
    await store.pool.query("SELECT pg_notify('pulseboard_dashboard_changed', $1)", [dashboardId]);
    await until(`every viewer has tick ${tick}'s results`, () => clients.every((c, i) => hasResults(c, marks[i])));
    expect(await counts()).toEqual([3 * tick, 3 * tick]);
  }
  // Every viewer saw its own view: one snapshot per viewer of each view.
  const served = clients.map((c) => JSON.parse(c.frames.find((f) => f.frame.event === "snapshot")?.frame.data ?? "{}") as SnapshotFrame);
  expect(served.filter((s) => s.view.saved).length).toBe(VIEWERS_PER_VIEW);
  expect(served.filter((s) => s.view.from === "now-6h").length).toBe(VIEWERS_PER_VIEW);
  expect(served.filter((s) => s.view.vars.env?.[0] === "staging").length).toBe(VIEWERS_PER_VIEW);

  for (const c of clients) c.close();
  h.kill("SIGTERM");
  expect((await h.exited).code).toBe(0);
  // Nothing ran after the last tick.
  expect(await counts()).toEqual([9, 9]);
});
