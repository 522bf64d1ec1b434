import type { QueryResult } from "../../lib/live/frames.ts";
import { Registry } from "prom-client";
import type pg from "pg";
import { createSessionTokens } from "../../lib/auth/session.ts";
import { parseConfig } from "../../lib/config/parse.ts";
import type { DashboardSpec, Panel } from "../../lib/dashboards/spec.ts";
import { type Logger, createLogger } from "../../lib/log/logger.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";
import { buildServiceDeps } from "../../lib/service/build-deps.ts";
import { newId } from "../../lib/store/ids.ts";
import { createWorkspace } from "../../lib/workspaces/store.ts";
import { type StreamHostOptions, createStreamHost } from "../app.ts";
import type { LoadedDashboard } from "../poller.ts";
import { createManualTimers } from "../../lib/lifecycle/manual-timers.ts";

export const SESSION_SECRET = "test-session-secret-0123456789abcdef";

/** A one-text-column result, as a stand-in RunPanel returns it. */
export function textResult(rows: string[][]): QueryResult {
  return { columns: [{ name: "v", type: "text" }], rows, truncated: false, elapsedMs: 1 };
}

export function panel(id: string, sourceId = "src_a"): Panel {
  return { id, title: `Panel ${id}`, type: "stat", sourceId, sql: `SELECT count(*) FROM t_${id}` };
}

export function spec(panels: Panel[], extra: Partial<DashboardSpec> = {}): DashboardSpec {
  return { title: "Traffic", refreshIntervalMs: 5000, time: { from: "now-1h", to: "now" }, panels, ...extra };
}

/** A workspace with viewer/editor/admin groups and a dashboard in it, written to the config store. */
export async function seedDashboard(pool: pg.Pool, s: DashboardSpec) {
  const tag = newId("ws").slice(3, 11);
  const ws = await createWorkspace(pool, {
    name: `ws ${tag}`,
    viewer_group: `viewers-${tag}`,
    editor_group: `editors-${tag}`,
    admin_group: `admins-${tag}`,
  });
  const id = newId("db");
  await pool.query(
    "INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by) VALUES ($1, $2, $3, 1, 'test', 'test')",
    [id, ws.id, JSON.stringify(s)],
  );
  return { workspace: ws, dashboardId: id };
}

/** Writes a new spec version and announces it the way the dashboard API does. */
export async function updateDashboard(pool: pg.Pool, id: string, s: DashboardSpec) {
  await pool.query("UPDATE dashboards SET spec = $2, version = version + 1, updated_at = now() WHERE id = $1", [id, JSON.stringify(s)]);
  await pool.query("SELECT pg_notify('pulseboard_dashboard_changed', $1)", [id]);
}

/** A stream host on a real config store with a fake panel runner, a manual clock and its own registry. */
export function createTestHost(opts: {
  url: string;
  pool: pg.Pool;
  env?: Record<string, string>;
  host?: StreamHostOptions;
  runPanel?: StreamHostOptions["runPanel"];
  /** The host's logger; default silent. */
  log?: Logger;
}) {
  const clock = createManualTimers();
  // Tests stand many viewers on one session cookie; the per-session cap has its own test (session-streams.test.ts).
  const { config } = parseConfig({
    DATABASE_URL: opts.url,
    SESSION_SECRET,
    NODE_ENV: "test",
    STREAMS_PER_SESSION_MAX: "100000",
    ...opts.env,
  });
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultCollectors: false });
  const deps = buildServiceDeps(config, { pool: opts.pool, metrics, log: opts.log ?? createLogger({ silent: true }), now: clock.now });
  const calls: { panelId: string; dashboard: LoadedDashboard }[] = [];
  const runPanel: NonNullable<StreamHostOptions["runPanel"]> =
    opts.runPanel ??
    (async (p, d) => {
      calls.push({ panelId: p.id, dashboard: d });
      return { columns: [{ name: "n", type: "int8" }], rows: [[calls.length]], truncated: false, elapsedMs: 1 };
    });
  const sessions = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: clock.now });
  const host = createStreamHost(deps, {
    runPanel,
    sessions,
    timers: clock.timers,
    monotonic: clock.now,
    listen: false,
    ...opts.host,
  });
  return {
    host,
    app: host.app,
    deps,
    clock,
    registry,
    calls,
    cookieFor: async (groups: string[]) =>
      `${config.SESSION_COOKIE_NAME}=${await sessions.mint({ sub: `user-${groups.join("+")}`, groups })}`,
  };
}

/** Lets promise callbacks and I/O completions run (real PostgreSQL round trips need real time). */
export const flush = () => new Promise<void>((r) => setImmediate(r));
