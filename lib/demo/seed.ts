import type pg from "pg";
import type { DashboardSpec } from "../dashboards/spec.ts";
import { refreshCatalog } from "../catalog-refresh/refresh.ts";
import { parseDashboardSpec, saveDashboard } from "../dashboards/save.ts";
import type { Guard } from "../sql-guard/verdict.ts";
import type { QueryRunner } from "../query/runner.ts";
import { createSource, getSource } from "../sources/index.ts";
import { createWorkspace } from "../workspaces/store.ts";
import { DEMO_WORKSPACE_GROUPS } from "../dev-idp/users.ts";
import { DEMO_METRICS_DB, DEMO_SECRET_REF } from "./metrics-db.ts";

export interface DemoIds {
  workspaceId: string;
  sourceId: string;
  dashboardId: string;
}

/** The demo dashboard: live traffic and host metrics with every panel type. */
export function demoDashboardSpec(sourceId: string): DashboardSpec {
  return {
    title: "Demo: service traffic",
    refreshIntervalMs: 5000,
    time: { from: "now-1h", to: "now" },
    panels: [
      {
        id: "rpm",
        title: "Requests per minute by service",
        type: "timeseries",
        sourceId,
        sql: "SELECT $__timeGroup(ts, '1m') AS time, service, count(*) AS requests\nFROM http_requests\nWHERE $__timeFilter(ts)\nGROUP BY 1, 2\nORDER BY 1",
        unit: "req/min",
      },
      {
        id: "p95",
        title: "p95 latency",
        type: "timeseries",
        sourceId,
        sql: "SELECT $__timeGroup(ts, $__interval) AS time,\n       percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95_ms\nFROM http_requests\nWHERE $__timeFilter(ts)\nGROUP BY 1\nORDER BY 1",
        unit: "ms",
      },
      {
        id: "errors",
        title: "Error rate",
        type: "stat",
        sourceId,
        sql: "SELECT round(100.0 * count(*) FILTER (WHERE status >= 500) / greatest(count(*), 1), 2) AS error_pct\nFROM http_requests\nWHERE $__timeFilter(ts)",
        unit: "%",
      },
      {
        id: "cpu",
        title: "CPU by host",
        type: "timeseries",
        sourceId,
        sql: "SELECT $__timeGroup(time, $__interval) AS time, host, avg(cpu) AS cpu\nFROM host_metrics\nWHERE $__timeFilter(time)\nGROUP BY 1, 2\nORDER BY 1",
        unit: "%",
      },
      {
        id: "routes",
        title: "Slowest routes",
        type: "table",
        sourceId,
        sql: "SELECT route, count(*) AS requests, round(avg(latency_ms)::numeric, 1) AS avg_ms\nFROM http_requests\nWHERE $__timeFilter(ts)\nGROUP BY route\nORDER BY avg_ms DESC\nLIMIT 10",
      },
      {
        id: "status",
        title: "Responses by status",
        type: "bar",
        sourceId,
        sql: "SELECT status::text AS status, count(*) AS responses\nFROM http_requests\nWHERE $__timeFilter(ts)\nGROUP BY 1\nORDER BY 1",
      },
    ],
  };
}

/** The demo workspace's id, created on first start with the development identity provider's demo groups. */
export async function ensureDemoWorkspace(pool: pg.Pool): Promise<string> {
  const existing = (await pool.query<{ id: string }>("SELECT id FROM workspaces WHERE name = 'Demo'")).rows[0]?.id;
  return existing ?? (await createWorkspace(pool, { name: "Demo", ...DEMO_WORKSPACE_GROUPS })).id;
}

/**
 * Seeds (once) the demo workspace's source pointing at the demo metrics database through
 * secret_ref DEMO_READER, refreshes the source's catalog through the guarded runner, and saves the
 * demo dashboard through saveDashboard (the one save path, so its SQL passes the guard like any other).
 */
export async function seedDemo(deps: {
  pool: pg.Pool;
  workspaceId: string;
  guard: Guard;
  runner: Pick<QueryRunner, "execute">;
  minRefreshIntervalMs: number;
  metrics: { host: string; port: number };
}): Promise<DemoIds> {
  const { pool, workspaceId: ws } = deps;

  const existing = (await pool.query<{ id: string }>("SELECT id FROM sources WHERE workspace_id = $1 AND name = 'Demo metrics'", [ws]))
    .rows[0]?.id;
  if (existing) {
    // The embedded server may listen on a new port after a restart.
    await pool.query("UPDATE sources SET host = $2, port = $3 WHERE id = $1", [existing, deps.metrics.host, deps.metrics.port]);
  }
  const created =
    existing ??
    (
      await createSource(pool, ws, {
        name: "Demo metrics",
        host: deps.metrics.host,
        port: deps.metrics.port,
        database: DEMO_METRICS_DB,
        sslmode: "disable",
        secretRef: DEMO_SECRET_REF,
        notes:
          "http_requests: one row per HTTP request (latency_ms in milliseconds, status is the HTTP status).\nhost_metrics: one sample per host every 10 s (cpu in percent, mem_bytes in bytes).",
      })
    ).id;
  const source = await getSource(pool, created);
  if (!source) throw new Error("demo source vanished while seeding");
  await refreshCatalog({ db: pool, runner: deps.runner }, source);

  let dash = (await pool.query<{ id: string }>("SELECT id FROM dashboards WHERE workspace_id = $1 ORDER BY created_at LIMIT 1", [ws]))
    .rows[0]?.id;
  if (!dash) {
    const saved = await saveDashboard(
      { pool, guard: deps.guard },
      { workspaceId: ws, userSub: "seed", spec: parseDashboardSpec(demoDashboardSpec(source.id), deps.minRefreshIntervalMs) },
    );
    dash = saved.id;
  }
  return { workspaceId: ws, sourceId: source.id, dashboardId: dash };
}
