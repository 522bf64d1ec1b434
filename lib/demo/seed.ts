import type pg from "pg";
import type { DashboardSpec } from "../dashboard/spec.ts";
import { newId } from "../store/ids.ts";
import { DEMO_METRICS_DB, DEMO_SECRET_REF } from "./metrics-db.ts";

import { DEMO_WORKSPACE_GROUPS } from "../dev-idp/users.ts";

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

/**
 * Seeds (once) the demo workspace, its source pointing at the demo metrics database through
 * secret_ref DEMO_READER, and the demo dashboard. Returns the ids, existing or new.
 */
export async function seedDemo(pool: pg.Pool, metrics: { host: string; port: number }): Promise<DemoIds> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(7140211002)");
    let ws = (await client.query<{ id: string }>("SELECT id FROM workspaces WHERE name = 'Demo'")).rows[0]?.id;
    if (!ws) {
      ws = newId("ws");
      await client.query(
        "INSERT INTO workspaces (id, name, viewer_group, editor_group, admin_group) VALUES ($1, 'Demo', $2, $3, $4)",
        [ws, DEMO_WORKSPACE_GROUPS.viewer_group, DEMO_WORKSPACE_GROUPS.editor_group, DEMO_WORKSPACE_GROUPS.admin_group],
      );
    }
    let src = (
      await client.query<{ id: string }>("SELECT id FROM sources WHERE workspace_id = $1 AND name = 'Demo metrics'", [ws])
    ).rows[0]?.id;
    if (!src) {
      src = newId("src");
      await client.query(
        `INSERT INTO sources (id, workspace_id, name, host, port, database, sslmode, secret_ref, notes)
         VALUES ($1, $2, 'Demo metrics', $3, $4, $5, 'disable', $6, $7)`,
        [
          src,
          ws,
          metrics.host,
          metrics.port,
          DEMO_METRICS_DB,
          DEMO_SECRET_REF,
          "http_requests: one row per HTTP request (latency_ms in milliseconds, status is the HTTP status).\nhost_metrics: one sample per host every 10 s (cpu in percent, mem_bytes in bytes).",
        ],
      );
    } else {
      // The embedded server may listen on a new port after a restart.
      await client.query("UPDATE sources SET host = $2, port = $3 WHERE id = $1", [src, metrics.host, metrics.port]);
    }
    let dash = (
      await client.query<{ id: string }>("SELECT id FROM dashboards WHERE workspace_id = $1 ORDER BY created_at LIMIT 1", [ws])
    ).rows[0]?.id;
    if (!dash) {
      dash = newId("db");
      await client.query(
        "INSERT INTO dashboards (id, workspace_id, spec, created_by, updated_by) VALUES ($1, $2, $3, 'seed', 'seed')",
        [dash, ws, JSON.stringify(demoDashboardSpec(src))],
      );
    }
    await client.query("COMMIT");
    return { workspaceId: ws, sourceId: src, dashboardId: dash };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
