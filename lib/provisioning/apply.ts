import { isDeepStrictEqual } from "node:util";
import type pg from "pg";
import { deleteDashboard, saveDashboard } from "../dashboards/save.ts";
import type { Guard } from "../sql-guard/verdict.ts";
import { getDashboard } from "../dashboards/store.ts";
import { AppError } from "../http/errors.ts";
import type { QueryRunner } from "../query/runner.ts";
import { type Source, createSource, deleteSource, getSource, updateSource } from "../sources/store.ts";
import { createWorkspace, deleteWorkspace, getWorkspace, updateWorkspace } from "../workspaces/store.ts";
import type { DashboardEntry, ProvisioningDocument, SourceEntry, WorkspaceEntry } from "./document.ts";

/** The `created_by` / `updated_by` of dashboards a provisioning file writes. */
export const PROVISIONING_USER = "provisioning";

/** What applying a document needs: the same guard, runner and catalog refresh the API uses. */
export interface ProvisionDeps {
  pool: pg.Pool;
  /** Every dashboard goes through lib/dashboards/save.ts, so its panels pass this guard like an API save. */
  guard: Guard;
  /** Connection tests (host policy, grants, credentials) before a source is stored or reconnected. */
  runner: Pick<QueryRunner, "testConnection" | "evict" | "forget">;
  refreshCatalog: (source: Source) => Promise<Source>;
  config: { MIN_REFRESH_INTERVAL_MS: number; SOURCES_PER_WORKSPACE_MAX: number };
  /** Told of each change as it is made (the CLI prints them). */
  onChange?: (change: ProvisionChange) => void;
}

export type EntityKind = "workspace" | "source" | "dashboard";

/** One write a provisioning run made. */
export interface ProvisionChange {
  kind: EntityKind;
  id: string;
  action: "created" | "updated" | "deleted" | "catalog_refreshed";
  /** For updates: the fields that changed. */
  fields?: string[];
}

export interface ProvisionReport {
  changes: ProvisionChange[];
  /** Declared entities that already matched the file. */
  unchanged: number;
}

// One provisioning run at a time per config store (every stream host task applies the file when it starts).
const LOCK_KEY = "pulseboard:provision";

/** Source fields that decide where and as whom it connects: a change is tested before it is stored. */
const CONNECTION_FIELDS = ["host", "port", "database", "sslmode", "secretRef"] as const;
const SOURCE_FIELDS = [...CONNECTION_FIELDS, "name", "schemas", "notes", "timeColumnOverrides"] as const;

/** Wraps a failure so its message names the entity it happened to; the code (and so the HTTP status) is kept. */
function about(kind: EntityKind, id: string, err: unknown): unknown {
  if (err instanceof AppError)
    return new AppError(err.code, `${kind} ${id}: ${err.detail}`, { ...err.extra, entity: { kind, id } }, err.headers);
  return err;
}

/** JSON's view of a value: what a jsonb column gives back (no undefined members, key order irrelevant). */
const plain = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;

/**
 * Applies a validated provisioning document: upserts its workspaces, then their sources, then their dashboards, then
 * performs the explicit deletes (dashboards, sources, workspaces). Entities not named in the file are never touched.
 * What already matches the file is not written, so applying the same document twice makes no change the second time
 * (no version or updated_at moves). Stops at the first failure with an AppError naming the entity; what was applied
 * before it stays applied, and running again after the fix continues from there.
 */
export async function applyProvisioning(deps: ProvisionDeps, doc: ProvisioningDocument): Promise<ProvisionReport> {
  const report: ProvisionReport = { changes: [], unchanged: 0 };
  const record = (change: ProvisionChange) => {
    report.changes.push(change);
    deps.onChange?.(change);
  };
  const lock = await deps.pool.connect();
  try {
    await lock.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [LOCK_KEY]);
    for (const ws of doc.workspaces) await step("workspace", ws.id, () => applyWorkspace(deps, ws, record, report));
    for (const ws of doc.workspaces) {
      for (const s of ws.sources) await step("source", s.id, () => applySource(deps, ws.id, s, record, report));
    }
    for (const ws of doc.workspaces) {
      for (const d of ws.dashboards) await step("dashboard", d.id, () => applyDashboard(deps, ws.id, d, record, report));
    }
    for (const id of doc.delete.dashboards) await step("dashboard", id, () => removeDashboard(deps, id, record));
    for (const id of doc.delete.sources) await step("source", id, () => removeSource(deps, id, record));
    for (const e of doc.delete.workspaces) {
      const { id, force } = typeof e === "string" ? { id: e, force: false } : e;
      await step("workspace", id, () => removeWorkspace(deps, id, force, record));
    }
    return report;
  } finally {
    await lock.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [LOCK_KEY]).catch(() => {});
    lock.release();
  }
}

async function step(kind: EntityKind, id: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    throw about(kind, id, err);
  }
}

type Recorder = (change: ProvisionChange) => void;

async function applyWorkspace(deps: ProvisionDeps, ws: WorkspaceEntry, record: Recorder, report: ProvisionReport): Promise<void> {
  const want = { name: ws.name, viewer_group: ws.groups.viewer, editor_group: ws.groups.editor, admin_group: ws.groups.admin };
  const have = await getWorkspace(deps.pool, ws.id);
  if (!have) {
    await createWorkspace(deps.pool, { id: ws.id, ...want });
    record({ kind: "workspace", id: ws.id, action: "created" });
    return;
  }
  const fields = (Object.keys(want) as (keyof typeof want)[]).filter((k) => have[k] !== want[k]);
  if (fields.length === 0) {
    report.unchanged++;
    return;
  }
  await updateWorkspace(deps.pool, ws.id, want);
  record({ kind: "workspace", id: ws.id, action: "updated", fields });
}

async function applySource(
  deps: ProvisionDeps,
  workspaceId: string,
  entry: SourceEntry,
  record: Recorder,
  report: ProvisionReport,
): Promise<void> {
  const { id, ...input } = entry;
  const have = await getSource(deps.pool, id);
  if (have && have.workspaceId !== workspaceId) {
    throw new AppError(
      "conflict",
      `it belongs to workspace ${have.workspaceId}; a source cannot move between workspaces (delete it there first).`,
    );
  }
  if (!have) {
    const at = new Date();
    const candidate: Source = {
      id,
      workspaceId,
      ...input,
      notes: input.notes ?? "",
      timeColumnOverrides: input.timeColumnOverrides ?? [],
      catalog: null,
      catalogRefreshedAt: null,
      version: 1,
      createdAt: at,
      updatedAt: at,
    };
    // As the API does: the host policy, the grant and the credentials are proven before anything is stored.
    await deps.runner.testConnection(candidate, { stored: false });
    const created = await createSource(
      deps.pool,
      workspaceId,
      { ...input },
      { id, maxPerWorkspace: deps.config.SOURCES_PER_WORKSPACE_MAX },
    );
    record({ kind: "source", id, action: "created" });
    await deps.refreshCatalog(created);
    return;
  }
  const want: Partial<Source> = { ...input };
  const fields = SOURCE_FIELDS.filter((k) => want[k] !== undefined && !isDeepStrictEqual(plain(want[k]), plain(have[k])));
  const reconnect = fields.some((f) => (CONNECTION_FIELDS as readonly string[]).includes(f));
  if (fields.length > 0) {
    if (reconnect) await deps.runner.testConnection({ ...have, ...want } as Source);
    const patch = Object.fromEntries(fields.map((f) => [f, want[f]]));
    const saved = await updateSource(deps.pool, workspaceId, id, have.version, patch);
    if (reconnect) deps.runner.evict(id);
    record({ kind: "source", id, action: "updated", fields });
    // Another database or schema list means another catalog, as on the API's update.
    if (reconnect || fields.includes("schemas") || fields.includes("timeColumnOverrides")) await deps.refreshCatalog(saved);
    return;
  }
  if (!have.catalogRefreshedAt) {
    // Created by an earlier run whose catalog refresh failed: dashboards cannot be saved until it is read.
    await deps.refreshCatalog(have);
    record({ kind: "source", id, action: "catalog_refreshed" });
    return;
  }
  report.unchanged++;
}

async function applyDashboard(
  deps: ProvisionDeps,
  workspaceId: string,
  entry: DashboardEntry,
  record: Recorder,
  report: ProvisionReport,
): Promise<void> {
  const saveDeps = { pool: deps.pool, guard: deps.guard };
  const have = await getDashboard(deps.pool, entry.id);
  if (have && have.workspaceId !== workspaceId) {
    throw new AppError(
      "conflict",
      `it belongs to workspace ${have.workspaceId}; a dashboard cannot move between workspaces (delete it there first).`,
    );
  }
  if (!have) {
    await saveDashboard(saveDeps, { workspaceId, userSub: PROVISIONING_USER, spec: entry.spec, newDashboardId: entry.id });
    record({ kind: "dashboard", id: entry.id, action: "created" });
    return;
  }
  if (isDeepStrictEqual(plain(entry.spec), plain(have.spec))) {
    report.unchanged++;
    return;
  }
  // Based on the version just read: an edit that lands in between is a version_conflict, never overwritten unseen.
  await saveDashboard(saveDeps, {
    workspaceId,
    userSub: PROVISIONING_USER,
    dashboardId: entry.id,
    baseVersion: have.version,
    spec: entry.spec,
  });
  record({ kind: "dashboard", id: entry.id, action: "updated", fields: ["spec"] });
}

async function removeDashboard(deps: ProvisionDeps, id: string, record: Recorder): Promise<void> {
  const have = await getDashboard(deps.pool, id);
  if (!have) return;
  await deleteDashboard(deps.pool, { dashboardId: id, workspaceId: have.workspaceId, baseVersion: have.version });
  record({ kind: "dashboard", id, action: "deleted" });
}

async function removeSource(deps: ProvisionDeps, id: string, record: Recorder): Promise<void> {
  const have = await getSource(deps.pool, id);
  if (!have) return;
  // As the API: a source a panel still reads is not deleted.
  const { rows } = await deps.pool.query<{ id: string }>(
    `SELECT id FROM dashboards
      WHERE workspace_id = $1 AND spec->'panels' @> jsonb_build_array(jsonb_build_object('sourceId', $2::text))
      ORDER BY id`,
    [have.workspaceId, id],
  );
  if (rows.length > 0) {
    throw new AppError("conflict", `dashboard(s) ${rows.map((r) => r.id).join(", ")} still read it; change or delete them too.`, {
      dashboards: rows.map((r) => r.id),
    });
  }
  if (await deleteSource(deps.pool, have.workspaceId, id)) {
    deps.runner.forget(id);
    record({ kind: "source", id, action: "deleted" });
  }
}

async function removeWorkspace(deps: ProvisionDeps, id: string, force: boolean, record: Recorder): Promise<void> {
  if (!(await getWorkspace(deps.pool, id))) return;
  try {
    const removed = await deleteWorkspace(deps.pool, id, { force });
    for (const sourceId of removed.sources) deps.runner.forget(sourceId);
    record({ kind: "workspace", id, action: "deleted" });
  } catch (err) {
    if (err instanceof AppError && err.code === "conflict") {
      const { dashboards, sources } = err.extra as { dashboards: number; sources: number };
      throw new AppError(
        "conflict",
        `it still has ${dashboards} dashboard(s) and ${sources} source(s): list them under delete too, or write {id: ${id}, force: true} to delete them with it.`,
        err.extra,
      );
    }
    throw err;
  }
}
