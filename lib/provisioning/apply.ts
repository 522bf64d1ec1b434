import { isDeepStrictEqual } from "node:util";
import type pg from "pg";
import { type AuditAction, PROVISIONING_ACTOR, recordAudit } from "../audit/store.ts";
import { defaultOf } from "../config/variables.ts";
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
  /** Reads a source's catalog and stores it on `db` (the run's transaction: the source may not be committed yet). */
  refreshCatalog: (source: Source, db: pg.PoolClient) => Promise<Source>;
  /** AUDIT_RETENTION_DAYS defaults to the variable's default when absent. */
  config: { MIN_REFRESH_INTERVAL_MS: number; SOURCES_PER_WORKSPACE_MAX: number; AUDIT_RETENTION_DAYS?: number };
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

// The key of the run's transaction-scoped advisory lock.
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
 * (no version or updated_at moves). The whole run is one transaction: the first failure throws an AppError naming the
 * entity and nothing of the run is applied (runner pools are evicted only after the commit). Every change is recorded
 * in the audit trail as `system:provisioning`, in the same transaction.
 */
export async function applyProvisioning(deps: ProvisionDeps, doc: ProvisioningDocument): Promise<ProvisionReport> {
  const report: ProvisionReport = { changes: [], unchanged: 0 };
  const told: ProvisionChange[] = [];
  const afterCommit: (() => void)[] = [];
  const db = await deps.pool.connect();
  const retention = { retentionDays: deps.config.AUDIT_RETENTION_DAYS ?? defaultOf("AUDIT_RETENTION_DAYS") };
  const record: Recorder = async (change, audit) => {
    report.changes.push(change);
    told.push(change);
    await recordAudit(
      db,
      {
        workspaceId: audit.workspaceId,
        actor: PROVISIONING_ACTOR,
        action: AUDIT_ACTION[change.kind][change.action],
        targetId: change.id,
        beforeVersion: audit.before ?? null,
        afterVersion: audit.after ?? null,
      },
      retention,
    );
  };
  const run: Run = { deps, db, record, report, later: (f) => afterCommit.push(f) };
  try {
    await db.query("BEGIN");
    // One provisioning run at a time per config store (every stream host task applies the file when it starts).
    await db.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [LOCK_KEY]);
    for (const ws of doc.workspaces) await step("workspace", ws.id, () => applyWorkspace(run, ws));
    for (const ws of doc.workspaces) {
      for (const s of ws.sources) await step("source", s.id, () => applySource(run, ws.id, s));
    }
    for (const ws of doc.workspaces) {
      for (const d of ws.dashboards) await step("dashboard", d.id, () => applyDashboard(run, ws.id, d));
    }
    for (const id of doc.delete.dashboards) await step("dashboard", id, () => removeDashboard(run, id));
    for (const id of doc.delete.sources) await step("source", id, () => removeSource(run, id));
    for (const e of doc.delete.workspaces) {
      const { id, force } = typeof e === "string" ? { id: e, force: false } : e;
      await step("workspace", id, () => removeWorkspace(run, id, force));
    }
    await db.query("COMMIT");
  } catch (err) {
    await db.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    db.release();
  }
  for (const f of afterCommit) f();
  // Told once committed, so a caller never prints a change that was rolled back.
  for (const change of told) deps.onChange?.(change);
  return report;
}

const AUDIT_ACTION: Record<EntityKind, Record<ProvisionChange["action"], AuditAction>> = {
  workspace: {
    created: "workspace.create",
    updated: "workspace.update",
    deleted: "workspace.delete",
    catalog_refreshed: "workspace.update",
  },
  source: { created: "source.create", updated: "source.update", deleted: "source.delete", catalog_refreshed: "source.catalog_refresh" },
  dashboard: {
    created: "dashboard.create",
    updated: "dashboard.update",
    deleted: "dashboard.delete",
    catalog_refreshed: "dashboard.update",
  },
};

/** One run's transaction and what its steps share. */
interface Run {
  deps: ProvisionDeps;
  db: pg.PoolClient;
  record: Recorder;
  report: ProvisionReport;
  /** Runs `f` once the run has committed (closing runner pools of changed or deleted sources). */
  later: (f: () => void) => void;
}

async function step(kind: EntityKind, id: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    throw about(kind, id, err);
  }
}

type Recorder = (change: ProvisionChange, audit: { workspaceId: string; before?: number | null; after?: number | null }) => Promise<void>;

async function applyWorkspace({ db, record, report }: Run, ws: WorkspaceEntry): Promise<void> {
  const want = { name: ws.name, viewer_group: ws.groups.viewer, editor_group: ws.groups.editor, admin_group: ws.groups.admin };
  const have = await getWorkspace(db, ws.id);
  if (!have) {
    await createWorkspace(db, { id: ws.id, ...want });
    await record({ kind: "workspace", id: ws.id, action: "created" }, { workspaceId: ws.id });
    return;
  }
  const fields = (Object.keys(want) as (keyof typeof want)[]).filter((k) => have[k] !== want[k]);
  if (fields.length === 0) {
    report.unchanged++;
    return;
  }
  await updateWorkspace(db, ws.id, want);
  await record({ kind: "workspace", id: ws.id, action: "updated", fields }, { workspaceId: ws.id });
}

async function applySource({ deps, db, record, report, later }: Run, workspaceId: string, entry: SourceEntry): Promise<void> {
  const { id, ...input } = entry;
  const have = await getSource(db, id);
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
    const created = await createSource(db, workspaceId, { ...input }, { id, maxPerWorkspace: deps.config.SOURCES_PER_WORKSPACE_MAX });
    await record({ kind: "source", id, action: "created" }, { workspaceId, after: created.version });
    await deps.refreshCatalog(created, db);
    return;
  }
  const want: Partial<Source> = { ...input };
  const fields = SOURCE_FIELDS.filter((k) => want[k] !== undefined && !isDeepStrictEqual(plain(want[k]), plain(have[k])));
  const reconnect = fields.some((f) => (CONNECTION_FIELDS as readonly string[]).includes(f));
  if (fields.length > 0) {
    if (reconnect) await deps.runner.testConnection({ ...have, ...want } as Source);
    const patch = Object.fromEntries(fields.map((f) => [f, want[f]]));
    const saved = await updateSource(db, workspaceId, id, have.version, patch);
    if (reconnect) later(() => deps.runner.evict(id));
    await record({ kind: "source", id, action: "updated", fields }, { workspaceId, before: have.version, after: saved.version });
    // Another database or schema list means another catalog, as on the API's update.
    if (reconnect || fields.includes("schemas") || fields.includes("timeColumnOverrides")) await deps.refreshCatalog(saved, db);
    return;
  }
  if (!have.catalogRefreshedAt) {
    // A source whose catalog was never read (created before runs were one transaction, or by the API while its
    // source was down): dashboards cannot be saved until it is read.
    await deps.refreshCatalog(have, db);
    await record({ kind: "source", id, action: "catalog_refreshed" }, { workspaceId, before: have.version, after: have.version });
    return;
  }
  report.unchanged++;
}

async function applyDashboard({ deps, db, record, report }: Run, workspaceId: string, entry: DashboardEntry): Promise<void> {
  const saveDeps = { pool: db, guard: deps.guard };
  const have = await getDashboard(db, entry.id);
  if (have && have.workspaceId !== workspaceId) {
    throw new AppError(
      "conflict",
      `it belongs to workspace ${have.workspaceId}; a dashboard cannot move between workspaces (delete it there first).`,
    );
  }
  if (!have) {
    const created = await saveDashboard(saveDeps, { workspaceId, userSub: PROVISIONING_USER, spec: entry.spec, newDashboardId: entry.id });
    await record({ kind: "dashboard", id: entry.id, action: "created" }, { workspaceId, after: created.version });
    return;
  }
  if (isDeepStrictEqual(plain(entry.spec), plain(have.spec))) {
    report.unchanged++;
    return;
  }
  // Based on the version just read: an edit that lands in between is a version_conflict, never overwritten unseen.
  const saved = await saveDashboard(saveDeps, {
    workspaceId,
    userSub: PROVISIONING_USER,
    dashboardId: entry.id,
    baseVersion: have.version,
    spec: entry.spec,
  });
  await record(
    { kind: "dashboard", id: entry.id, action: "updated", fields: ["spec"] },
    { workspaceId, before: have.version, after: saved.version },
  );
}

async function removeDashboard({ db, record }: Run, id: string): Promise<void> {
  const have = await getDashboard(db, id);
  if (!have) return;
  await deleteDashboard(db, { dashboardId: id, workspaceId: have.workspaceId, baseVersion: have.version });
  await record({ kind: "dashboard", id, action: "deleted" }, { workspaceId: have.workspaceId, before: have.version });
}

async function removeSource({ deps, db, record, later }: Run, id: string): Promise<void> {
  const have = await getSource(db, id);
  if (!have) return;
  // As the API: a source a panel still reads is not deleted.
  const { rows } = await db.query<{ id: string }>(
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
  if ((await deleteSource(db, have.workspaceId, id)) !== null) {
    later(() => deps.runner.forget(id));
    await record({ kind: "source", id, action: "deleted" }, { workspaceId: have.workspaceId, before: have.version });
  }
}

async function removeWorkspace({ deps, db, record, later }: Run, id: string, force: boolean): Promise<void> {
  if (!(await getWorkspace(db, id))) return;
  try {
    const removed = await deleteWorkspace(db, id, { force });
    later(() => {
      for (const sourceId of removed.sources) deps.runner.forget(sourceId);
    });
    await record({ kind: "workspace", id, action: "deleted" }, { workspaceId: id });
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
