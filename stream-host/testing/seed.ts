import pg from "pg";
import type { DashboardSpec } from "../../lib/dashboards/spec.ts";
import { createSource, saveCatalog } from "../../lib/sources/index.ts";
import { newId } from "../../lib/store/ids.ts";
import { createWorkspace } from "../../lib/workspaces/store.ts";

/**
 * Prepares a metrics database whose views count every query that reaches them. The count is kept
 * at the database, outside the query's own transaction (which is read-only and rolled back): each
 * view calls log_query(), which inserts through dblink on a separate connection.
 *
 * - `fast_v`: logs `start`, returns at once.
 * - `counted_v`: the same through a logging connection each backend keeps open (dblink_connect once), so
 *   counting costs about a millisecond instead of a new connection per query: for benchmarks that run
 *   hundreds of queries a second through a source's few slots.
 * - `slow_v`: logs `start`, sleeps `slowSeconds`, logs `end`; `slower_v` the same with `slowerSeconds`.
 * - `forever_v`: logs `start`, sleeps an hour.
 * - `plain_v`: no logging, no sleep (for the benchmarks' cheap panels).
 */
export async function prepareCountingMetricsDb(url: string, opts: { slowSeconds?: number; slowerSeconds?: number } = {}) {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const connstr = (await admin.query("SELECT format('%L', $1::text) AS q", [url])).rows[0].q as string;
    await admin.query(`
      CREATE EXTENSION IF NOT EXISTS dblink;
      CREATE TABLE IF NOT EXISTS query_log (
        id bigserial PRIMARY KEY, panel text NOT NULL, phase text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
      CREATE OR REPLACE FUNCTION log_query(p text, phase text) RETURNS int LANGUAGE plpgsql AS $f$
      BEGIN
        PERFORM dblink_exec(${connstr}, format('INSERT INTO query_log (panel, phase) VALUES (%L, %L)', p, phase));
        RETURN 1;
      END $f$;
      CREATE OR REPLACE FUNCTION log_query_kept(p text, phase text) RETURNS int LANGUAGE plpgsql AS $f$
      BEGIN
        IF NOT ('query_logger' = ANY (coalesce(dblink_get_connections(), '{}'))) THEN
          PERFORM dblink_connect('query_logger', ${connstr});
        END IF;
        PERFORM dblink_exec('query_logger', format('INSERT INTO query_log (panel, phase) VALUES (%L, %L)', p, phase));
        RETURN 1;
      END $f$;
      CREATE OR REPLACE FUNCTION sleepy(p text, secs float8) RETURNS int LANGUAGE plpgsql AS $f$
      BEGIN
        PERFORM log_query(p, 'start');
        PERFORM pg_sleep(secs);
        PERFORM log_query(p, 'end');
        RETURN 1;
      END $f$;
      CREATE OR REPLACE VIEW fast_v AS SELECT log_query('fast', 'start') AS n;
      CREATE OR REPLACE VIEW counted_v AS SELECT log_query_kept('counted', 'start') AS n;
      CREATE OR REPLACE VIEW slow_v AS SELECT sleepy('slow', ${Number(opts.slowSeconds ?? 1.5)}) AS n;
      CREATE OR REPLACE VIEW slower_v AS SELECT sleepy('slower', ${Number(opts.slowerSeconds ?? 5)}) AS n;
      CREATE OR REPLACE VIEW forever_v AS SELECT sleepy('forever', 3600) AS n;
      CREATE OR REPLACE VIEW plain_v AS SELECT 1 AS n, now() AS at;
    `);
  } finally {
    await admin.end();
  }
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on("error", () => {});
  return {
    /** Rows of query_log, oldest first. */
    async log(): Promise<{ panel: string; phase: string; at: Date }[]> {
      return (await pool.query("SELECT panel, phase, at FROM query_log ORDER BY id")).rows;
    },
    async count(panel?: string, phase = "start"): Promise<number> {
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM query_log WHERE phase = $1 AND ($2::text IS NULL OR panel = $2)", [
        phase,
        panel ?? null,
      ]);
      return rows[0].n;
    },
    close: () => pool.end(),
  };
}

const CATALOG = {
  tables: ["fast_v", "counted_v", "slow_v", "slower_v", "forever_v", "plain_v"].map((name) => ({
    schema: "public",
    name,
    timeColumn: null,
    columns: [{ name: "n", type: "integer" }],
  })),
};

/**
 * A workspace, a source on the metrics database (credentials through secret_ref METRICS, catalog
 * saved) and `dashboards` dashboards with the given panels.
 */
export async function seedStreamFixture(
  pool: pg.Pool,
  opts: {
    metricsUrl: string;
    panels: { id: string; view: string }[];
    refreshIntervalMs: number;
    dashboards?: number;
    /** Further dashboards with their own panels, after the `dashboards` copies of `panels`. */
    more?: { id: string; view: string }[][];
  },
) {
  const tag = newId("ws")
    .slice(3, 11)
    .replace(/[^A-Za-z0-9]/g, "x");
  const workspace = await createWorkspace(pool, {
    name: `stream ${tag}`,
    viewer_group: `viewers-${tag}`,
    editor_group: `editors-${tag}`,
    admin_group: `admins-${tag}`,
  });
  const u = new URL(opts.metricsUrl);
  const source = await createSource(pool, workspace.id, {
    name: "metrics",
    host: u.hostname,
    port: Number(u.port),
    database: u.pathname.slice(1),
    sslmode: "disable",
    secretRef: "METRICS",
  });
  await saveCatalog(pool, source.id, CATALOG, new Date());
  const specOf = (panels: { id: string; view: string }[]): DashboardSpec => ({
    title: "Stream fixture",
    refreshIntervalMs: opts.refreshIntervalMs,
    time: { from: "now-1h", to: "now" },
    panels: panels.map((p) => ({ id: p.id, title: p.id, type: "stat", sourceId: source.id, sql: `SELECT n FROM ${p.view}` })),
  });
  const all = [...Array.from({ length: opts.dashboards ?? 1 }, () => opts.panels), ...(opts.more ?? [])];
  const dashboardIds: string[] = [];
  for (const panels of all) {
    const id = newId("db");
    await pool.query(
      "INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by) VALUES ($1, $2, $3, 1, 'test', 'test')",
      [id, workspace.id, JSON.stringify(specOf(panels))],
    );
    dashboardIds.push(id);
  }
  return {
    workspace,
    sourceId: source.id,
    dashboardIds,
    /** Environment granting the source's secret_ref to the workspace with the metrics database's credentials. */
    env: {
      SOURCE_SECRET_REFS: `METRICS:${workspace.id}`,
      // The metrics database shares the loopback test server with the config store: allowed explicitly.
      SOURCE_ALLOWED_HOSTS: u.hostname,
      METRICS_USERNAME: decodeURIComponent(u.username),
      METRICS_PASSWORD: decodeURIComponent(u.password),
    },
  };
}
