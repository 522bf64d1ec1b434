import type pg from "pg";
import type { Catalog } from "../catalog/types.ts";
import { type DashboardSpec, dashboardSpecSchema } from "./spec.ts";
import { AppError } from "../http/errors.ts";
import { catalogVersion, getSourceInWorkspace } from "../sources/index.ts";
import type { Guard, MacroParam } from "../sql-guard/verdict.ts";
import { type PanelPointsWarning, panelPointsWarning } from "./points.ts";
import { newId } from "../store/ids.ts";
import { DASHBOARD_CHANGED_CHANNEL, DASHBOARD_COLUMNS, type Dashboard, dashboardFromRow } from "./store.ts";

/** Why one panel cannot be saved: a guard reason, or `source` when its source is not in the workspace. */
export interface PanelFailure {
  panelId: string;
  reason: string;
  message: string;
}

/** Why one query variable cannot be saved: its SQL's guard reason, or `source` when its source is not in the workspace. */
export interface VariableFailure {
  variable: string;
  reason: string;
  message: string;
}

export interface SaveDashboardDeps {
  /** Config-store pool, or a client inside the caller's transaction (a provisioning run). */
  pool: pg.Pool | pg.PoolClient;
  guard: Guard;
  /** DASHBOARD_VERSION_RETENTION: older versions are deleted by the save; absent deletes none (reads still cap). */
  versionRetention?: number;
  /**
   * MAX_WINDOW_POINTS and the clock the saved range is resolved at: the save then reports, as `warnings`, every
   * panel whose fixed bucket gives more points per series over that range than the browser keeps. Absent (paths
   * that show no save result to a person: provisioning, the demo): no warnings are computed.
   */
  points?: { maxWindowPoints: number; now: () => number };
}

/** A saved dashboard, with what its author should know (lib/dashboards/points.ts). */
export type SavedDashboard = Dashboard & { warnings: PanelPointsWarning[] };

export interface SaveDashboardInput {
  workspaceId: string;
  /** The `sub` of the person saving (created_by / updated_by). */
  userSub: string;
  /** A spec the caller parsed once (the route's schema, parseDashboardSpec, the provisioning document's schema). */
  spec: DashboardSpec;
  /** Absent: create a new dashboard. Present: update it, based on `baseVersion`. */
  dashboardId?: string;
  baseVersion?: number;
  /** On create only: the new dashboard's id (a provisioning file's stable id); a fresh random id otherwise. */
  newDashboardId?: string;
  /** Recorded with the new version in the dashboard's history (lib/dashboards/versions.ts). */
  message?: string;
}

type SourceCatalogs = Map<string, { catalog: Catalog | null; catalogVersion: string }>;

/** The catalogs of the distinct sources named, those of `workspaceId` only: a query or two per save. */
async function sourceCatalogs(pool: pg.Pool | pg.PoolClient, workspaceId: string, ids: Iterable<string>): Promise<SourceCatalogs> {
  const sources: SourceCatalogs = new Map();
  for (const id of new Set(ids)) {
    const source = await getSourceInWorkspace(pool, workspaceId, id);
    if (source) sources.set(id, { catalog: source.catalog, catalogVersion: catalogVersion(source) });
  }
  return sources;
}

/**
 * Runs every panel's SQL through the guard against its own source's catalog, with the spec's variables
 * declared (any other `$name` is refused). Sources must belong to `workspaceId`; a source from another
 * workspace is reported exactly like a missing one.
 */
export async function checkPanels(
  deps: Pick<SaveDashboardDeps, "pool" | "guard">,
  workspaceId: string,
  spec: Pick<DashboardSpec, "panels" | "variables">,
): Promise<PanelFailure[]> {
  return (await guardPanels(deps, workspaceId, spec)).failures;
}

/** As checkPanels, with the accepted panels' guarded statements (for the points warnings of a save). */
async function guardPanels(
  deps: Pick<SaveDashboardDeps, "pool" | "guard">,
  workspaceId: string,
  spec: Pick<DashboardSpec, "panels" | "variables">,
): Promise<{ failures: PanelFailure[]; accepted: { panelId: string; sql: string; params: MacroParam[] }[] }> {
  const sources = await sourceCatalogs(
    deps.pool,
    workspaceId,
    spec.panels.map((p) => p.sourceId),
  );
  const failures: PanelFailure[] = [];
  const accepted: { panelId: string; sql: string; params: MacroParam[] }[] = [];
  for (const panel of spec.panels) {
    const source = sources.get(panel.sourceId);
    if (!source) {
      failures.push({ panelId: panel.id, reason: "source", message: "the panel's source does not exist in this workspace" });
      continue;
    }
    const verdict = deps.guard.check(panel.sql, source.catalog, source.catalogVersion, spec.variables);
    if (!verdict.ok) failures.push({ panelId: panel.id, reason: verdict.reason, message: verdict.message });
    else accepted.push({ panelId: panel.id, sql: verdict.sql, params: verdict.params });
  }
  return { failures, accepted };
}

/**
 * Runs every query variable's SQL through the guard like a panel's. It lists options, so it names no variable
 * of its own: any `$name` in it is refused.
 */
export async function checkVariables(
  deps: Pick<SaveDashboardDeps, "pool" | "guard">,
  workspaceId: string,
  spec: Pick<DashboardSpec, "variables">,
): Promise<VariableFailure[]> {
  const queried = (spec.variables ?? []).filter((v) => v.type === "query" && v.sourceId !== undefined && v.sql !== undefined);
  if (queried.length === 0) return [];
  const sources = await sourceCatalogs(
    deps.pool,
    workspaceId,
    queried.map((v) => v.sourceId!),
  );
  const failures: VariableFailure[] = [];
  for (const v of queried) {
    const source = sources.get(v.sourceId!);
    if (!source) {
      failures.push({ variable: v.name, reason: "source", message: "the variable's source does not exist in this workspace" });
      continue;
    }
    const verdict = deps.guard.check(v.sql!, source.catalog, source.catalogVersion);
    if (!verdict.ok) failures.push({ variable: v.name, reason: verdict.reason, message: verdict.message });
  }
  return failures;
}

/**
 * Validates an untrusted spec against the refresh floor: the one parse of a spec that did not come through a
 * route's body schema (a chat proposal, a stored proposal being applied, the demo). Throws `validation_failed`
 * (400) naming every bad field as `spec.<path>`, the envelope the dashboards API gives for the same spec.
 */
export function parseDashboardSpec(spec: unknown, minRefreshIntervalMs: number): DashboardSpec {
  const parsed = dashboardSpecSchema(minRefreshIntervalMs).safeParse(spec);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => ({ path: ["spec", ...i.path.map(String)].join("."), message: i.message }));
  throw new AppError("validation_failed", `Invalid dashboard spec: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, {
    issues,
  });
}

/** The `guard_rejected` of a save: every refused panel and query variable, by id and name. */
function refusal(panels: PanelFailure[], variables: VariableFailure[]): AppError {
  const all = [...panels.map((f) => ({ what: f.panelId, ...f })), ...variables.map((f) => ({ what: `$${f.variable}`, ...f }))];
  const noun = variables.length === 0 ? "panel" : panels.length === 0 ? "variable" : "panel or variable";
  return new AppError(
    "guard_rejected",
    `${all.length === 1 ? `A ${noun} was` : `${all.length} ${noun}s were`} refused: ${all
      .map((f) => `${f.what} (${f.reason}): ${f.message}`)
      .join("; ")}`,
    { reason: all[0].reason, panels, ...(variables.length > 0 ? { variables } : {}) },
  );
}

/**
 * The one way a dashboard is written (API create/update, the AI chat "apply proposal" route, provisioning):
 * takes a parsed spec, guards every panel's and query variable's SQL against its source's catalog, then inserts, or
 * updates only if the stored version still equals `baseVersion` (one atomic statement, so of two
 * saves from the same version exactly one wins and the other gets `version_conflict`). A change is
 * announced on DASHBOARD_CHANGED_CHANNEL in the same statement, so running pollers pick it up, and the
 * same statement records the new version in `dashboard_versions` (the history) and deletes the versions
 * past `versionRetention`.
 */
export async function saveDashboard(deps: SaveDashboardDeps, input: SaveDashboardInput): Promise<SavedDashboard> {
  const { spec } = input;
  if (input.dashboardId !== undefined && (input.baseVersion === undefined || !Number.isSafeInteger(input.baseVersion))) {
    throw new AppError("validation_failed", "An update must carry the version it was based on.", { field: "version" });
  }
  const { failures, accepted } = await guardPanels(deps, input.workspaceId, spec);
  const variableFailures = await checkVariables(deps, input.workspaceId, spec);
  if (failures.length > 0 || variableFailures.length > 0) throw refusal(failures, variableFailures);
  const warnings: PanelPointsWarning[] = [];
  if (deps.points) {
    const at = { maxWindowPoints: deps.points.maxWindowPoints, now: deps.points.now() };
    for (const a of accepted) {
      const w = panelPointsWarning(a.panelId, a, spec.time, at);
      if (w) warnings.push(w);
    }
  }
  const saved = await write(deps, input);
  return { ...saved, warnings };
}

/** The insert or the version-checked update of a save whose panels passed. */
async function write(deps: SaveDashboardDeps, input: SaveDashboardInput): Promise<Dashboard> {
  const { spec } = input;

  if (input.dashboardId === undefined) {
    const { rows } = await deps.pool
      .query(
        `WITH d AS (
         INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by)
         VALUES ($1, $2, $3::jsonb, 1, $4, $4) RETURNING ${DASHBOARD_COLUMNS}
       ), v AS (
         INSERT INTO dashboard_versions (dashboard_id, version, spec, saved_by, saved_at, message)
         SELECT id, version, spec, updated_by, updated_at, $6 FROM d
       )
       SELECT d.*, pg_notify($5, d.id) FROM d`,
        [
          input.newDashboardId ?? newId("db"),
          input.workspaceId,
          JSON.stringify(spec),
          input.userSub,
          DASHBOARD_CHANGED_CHANNEL,
          input.message ?? null,
        ],
      )
      .catch((err: unknown) => {
        if ((err as { code?: string }).code === "23505") throw new AppError("conflict", "A dashboard with this id already exists.");
        throw err;
      });
    return dashboardFromRow(rows[0]);
  }

  const { rows } = await deps.pool.query(
    `WITH d AS (
       UPDATE dashboards SET spec = $4::jsonb, version = version + 1, updated_by = $5, updated_at = now()
        WHERE id = $1 AND workspace_id = $2 AND version = $3
        RETURNING ${DASHBOARD_COLUMNS}
     ), v AS (
       INSERT INTO dashboard_versions (dashboard_id, version, spec, saved_by, saved_at, message)
       SELECT id, version, spec, updated_by, updated_at, $7 FROM d
     ), pruned AS (
       DELETE FROM dashboard_versions WHERE dashboard_id = $1 AND version <= (SELECT version FROM d) - $8::int
     )
     SELECT d.*, pg_notify($6, d.id) FROM d`,
    [
      input.dashboardId,
      input.workspaceId,
      input.baseVersion,
      JSON.stringify(spec),
      input.userSub,
      DASHBOARD_CHANGED_CHANNEL,
      input.message ?? null,
      deps.versionRetention ?? null,
    ],
  );
  if (rows[0]) return dashboardFromRow(rows[0]);
  throw await missingOrConflict(deps.pool, input.dashboardId, input.workspaceId, input.baseVersion!);
}

/**
 * Deletes a dashboard (when `baseVersion` is given, only if it still has that version) and announces it. Returns the
 * version it had when deleted (the audit trail's "before").
 */
export async function deleteDashboard(
  pool: pg.Pool | pg.PoolClient,
  input: { dashboardId: string; workspaceId: string; baseVersion?: number },
): Promise<number> {
  const { rows } = await pool.query<{ version: number }>(
    `WITH d AS (
       DELETE FROM dashboards WHERE id = $1 AND workspace_id = $2 AND ($3::int IS NULL OR version = $3::int) RETURNING id, version
     )
     SELECT pg_notify($4, d.id), d.version FROM d`,
    [input.dashboardId, input.workspaceId, input.baseVersion ?? null, DASHBOARD_CHANGED_CHANNEL],
  );
  if (rows.length === 0) throw await missingOrConflict(pool, input.dashboardId, input.workspaceId, input.baseVersion);
  return rows[0]!.version;
}

async function missingOrConflict(
  pool: pg.Pool | pg.PoolClient,
  id: string,
  workspaceId: string,
  baseVersion: number | undefined,
): Promise<AppError> {
  const { rows } = await pool.query<{ version: number }>("SELECT version FROM dashboards WHERE id = $1 AND workspace_id = $2", [
    id,
    workspaceId,
  ]);
  const current = rows[0]?.version;
  if (current === undefined) return new AppError("not_found", "Not found.");
  return new AppError(
    "version_conflict",
    `The dashboard was changed by someone else: your edit is based on version ${baseVersion}, it is now at version ${current}. Reload it and apply your edit again.`,
    { currentVersion: current, baseVersion },
  );
}
