import type pg from "pg";
import type { DashboardSpec } from "./spec.ts";

type Queryable = pg.Pool | pg.PoolClient;

/** NOTIFY channel on the config store; payload is the dashboard id that changed or was deleted. */
export const DASHBOARD_CHANGED_CHANNEL = "pulseboard_dashboard_changed";

/** A stored dashboard: its spec and the version every update must be based on. */
export interface Dashboard {
  id: string;
  workspaceId: string;
  spec: DashboardSpec;
  version: number;
  createdBy: string;
  updatedBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What the dashboard list shows: no SQL, just enough to pick one. */
export interface DashboardSummary {
  id: string;
  title: string;
  version: number;
  panelCount: number;
  updatedBy: string;
  updatedAt: Date;
}

interface Row {
  id: string;
  workspace_id: string;
  spec: DashboardSpec;
  version: number;
  created_by: string;
  updated_by: string;
  created_at: Date;
  updated_at: Date;
}

export const DASHBOARD_COLUMNS = "id, workspace_id, spec, version, created_by, updated_by, created_at, updated_at";

/** Maps a `dashboards` row (selected with DASHBOARD_COLUMNS) to a Dashboard. */
export function dashboardFromRow(r: Row): Dashboard {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    spec: r.spec,
    version: r.version,
    createdBy: r.created_by,
    updatedBy: r.updated_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** One dashboard by id, or null. */
export async function getDashboard(db: Queryable, id: string): Promise<Dashboard | null> {
  const { rows } = await db.query<Row>(`SELECT ${DASHBOARD_COLUMNS} FROM dashboards WHERE id = $1`, [id]);
  return rows[0] ? dashboardFromRow(rows[0]) : null;
}

/** The workspace a dashboard belongs to, or null when it does not exist (the auth middleware's resolver). */
export async function dashboardWorkspaceId(db: Queryable, id: string): Promise<string | null> {
  const { rows } = await db.query<{ workspace_id: string }>("SELECT workspace_id FROM dashboards WHERE id = $1", [id]);
  return rows[0]?.workspace_id ?? null;
}

/** The dashboards of one workspace, ordered by title. */
export async function listDashboards(db: Queryable, workspaceId: string): Promise<DashboardSummary[]> {
  const { rows } = await db.query<{
    id: string;
    title: string;
    version: number;
    panel_count: number;
    updated_by: string;
    updated_at: Date;
  }>(
    `SELECT id, spec->>'title' AS title, version, jsonb_array_length(spec->'panels') AS panel_count, updated_by, updated_at
       FROM dashboards WHERE workspace_id = $1
      ORDER BY lower(spec->>'title'), id`,
    [workspaceId],
  );
  return rows.map((r) => ({
    id: r.id,
    title: r.title,
    version: r.version,
    panelCount: r.panel_count,
    updatedBy: r.updated_by,
    updatedAt: r.updated_at,
  }));
}
