import type pg from "pg";
import type { DashboardSpec } from "./spec.ts";

type Queryable = pg.Pool | pg.PoolClient;

/** One saved version of a dashboard, as its history lists it. */
export interface DashboardVersionSummary {
  version: number;
  savedBy: string;
  savedAt: Date;
  message: string | null;
  title: string;
  panelCount: number;
}

/** One saved version with its spec. */
export interface DashboardVersion extends DashboardVersionSummary {
  spec: DashboardSpec;
}

interface Row {
  version: number;
  saved_by: string;
  saved_at: Date;
  message: string | null;
  spec: DashboardSpec;
}

function fromRow(r: Row): DashboardVersion {
  return {
    version: r.version,
    savedBy: r.saved_by,
    savedAt: r.saved_at,
    message: r.message,
    title: r.spec.title,
    panelCount: Array.isArray(r.spec.panels) ? r.spec.panels.length : 0,
    spec: r.spec,
  };
}

// Only the newest `retention` versions exist for a reader, whether or not a save has deleted the older ones
// yet (saves through a path without the setting, or a retention lowered since).
const VISIBLE = `version > (SELECT coalesce(max(version), 0) FROM dashboard_versions WHERE dashboard_id = $1) - $2::int`;

/** The history of a dashboard, newest first: at most `retention` versions (DASHBOARD_VERSION_RETENTION). */
export async function listVersions(db: Queryable, dashboardId: string, retention: number): Promise<DashboardVersionSummary[]> {
  // Title and panel count come out of the spec in the store: a history of 100 large specs is not shipped.
  const { rows } = await db.query<Omit<Row, "spec"> & { title: string; panel_count: number }>(
    `SELECT version, saved_by, saved_at, message, spec->>'title' AS title, jsonb_array_length(spec->'panels') AS panel_count
       FROM dashboard_versions WHERE dashboard_id = $1 AND ${VISIBLE} ORDER BY version DESC`,
    [dashboardId, retention],
  );
  return rows.map((r) => ({
    version: r.version,
    savedBy: r.saved_by,
    savedAt: r.saved_at,
    message: r.message,
    title: r.title,
    panelCount: r.panel_count,
  }));
}

/** One version of a dashboard with its spec, or null when it was never saved or is past the retention. */
export async function getVersion(db: Queryable, dashboardId: string, version: number, retention: number): Promise<DashboardVersion | null> {
  const { rows } = await db.query<Row>(
    `SELECT version, saved_by, saved_at, message, spec FROM dashboard_versions
      WHERE dashboard_id = $1 AND ${VISIBLE} AND version = $3`,
    [dashboardId, retention, version],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}
