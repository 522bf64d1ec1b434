import type pg from "pg";
import type { SessionUser } from "../auth/types.ts";

type Queryable = pg.Pool | pg.PoolClient;

/** Who made a change: a person (their `sub`), an API token (its id) or a process of the service (`provisioning`). */
export type ActorKind = "person" | "token" | "system";
export interface Actor {
  kind: ActorKind;
  id: string;
}

/** The actor a provisioning file's changes are recorded as. */
export const PROVISIONING_ACTOR: Actor = { kind: "system", id: "provisioning" };

/** The actor of a signed-in caller: the token for an API token, else the person. */
export function actorOf(user: Pick<SessionUser, "sub" | "token">): Actor {
  return user.token ? { kind: "token", id: user.token.id } : { kind: "person", id: user.sub };
}

/** Every kind of change the trail records, as `<target>.<verb>`. */
export const AUDIT_ACTIONS = [
  "workspace.create",
  "workspace.update",
  "workspace.delete",
  "source.create",
  "source.update",
  "source.delete",
  "source.catalog_refresh",
  "dashboard.create",
  "dashboard.update",
  "dashboard.delete",
  "limits.update",
  "token.create",
  "token.revoke",
  "sessions.revoke",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** The kind of thing an action changed: the part of the action before the dot (`user` for `sessions.revoke`). */
export type TargetKind = "workspace" | "source" | "dashboard" | "limits" | "token" | "user";

export function targetKindOf(action: AuditAction): TargetKind {
  if (action === "sessions.revoke") return "user";
  return action.slice(0, action.indexOf(".")) as TargetKind;
}

/** One change to record. Versions are the target's `version` before and after, for the targets that have one. */
export interface AuditInput {
  workspaceId: string;
  actor: Actor;
  action: AuditAction;
  targetId: string;
  beforeVersion?: number | null;
  afterVersion?: number | null;
  requestId?: string | null;
}

/** One recorded change. */
export interface AuditEntry {
  id: string;
  workspaceId: string;
  at: Date;
  actor: Actor;
  action: AuditAction;
  target: { kind: TargetKind; id: string };
  beforeVersion: number | null;
  afterVersion: number | null;
  requestId: string | null;
}

/** AUDIT_RETENTION_DAYS (0 keeps entries forever) and the clock it is measured by. */
export interface AuditRetention {
  retentionDays: number;
  now?: () => number;
}

const cutoff = (r: AuditRetention): string | null =>
  r.retentionDays > 0 ? new Date((r.now ?? Date.now)() - r.retentionDays * 86_400_000).toISOString() : null;

/**
 * Records changes, and sweeps the entries past retention in the same statement. Runs on `db`: inside the
 * caller's transaction when given a client, so a change and its record commit together.
 */
export async function recordAudit(db: Queryable, entries: AuditInput | AuditInput[], retention: AuditRetention): Promise<void> {
  const list = Array.isArray(entries) ? entries : [entries];
  if (list.length === 0) return;
  const at = new Date((retention.now ?? Date.now)()).toISOString();
  await db.query(
    `WITH swept AS (DELETE FROM audit_log WHERE $2::timestamptz IS NOT NULL AND created_at < $2::timestamptz)
     INSERT INTO audit_log (workspace_id, actor_kind, actor_id, action, target_kind, target_id, before_version, after_version,
                            request_id, created_at)
     SELECT e.workspace_id, e.actor_kind, e.actor_id, e.action, e.target_kind, e.target_id, e.before_version, e.after_version,
            e.request_id, $3::timestamptz
       FROM jsonb_to_recordset($1::jsonb) AS e(workspace_id text, actor_kind text, actor_id text, action text, target_kind text,
                                               target_id text, before_version int, after_version int, request_id text)`,
    [
      JSON.stringify(
        list.map((e) => ({
          workspace_id: e.workspaceId,
          actor_kind: e.actor.kind,
          actor_id: e.actor.id,
          action: e.action,
          target_kind: targetKindOf(e.action),
          target_id: e.targetId,
          before_version: e.beforeVersion ?? null,
          after_version: e.afterVersion ?? null,
          request_id: e.requestId ?? null,
        })),
      ),
      cutoff(retention),
      at,
    ],
  );
}

/** Filters of a trail read; every one optional. `before` is an entry id to page back from. */
export interface AuditFilter {
  actorKind?: ActorKind;
  actorId?: string;
  action?: AuditAction;
  targetKind?: TargetKind;
  targetId?: string;
  since?: Date;
  until?: Date;
  before?: string;
  limit: number;
}

interface Row {
  id: string;
  workspace_id: string;
  actor_kind: ActorKind;
  actor_id: string;
  action: AuditAction;
  target_kind: TargetKind;
  target_id: string;
  before_version: number | null;
  after_version: number | null;
  request_id: string | null;
  created_at: Date;
}

/** A workspace's trail, newest first, within retention, filtered. */
export async function listAudit(db: Queryable, workspaceId: string, f: AuditFilter, retention: AuditRetention): Promise<AuditEntry[]> {
  const { rows } = await db.query<Row>(
    `SELECT id::text, workspace_id, actor_kind, actor_id, action, target_kind, target_id, before_version, after_version,
            request_id, created_at
       FROM audit_log
      WHERE workspace_id = $1
        AND ($2::timestamptz IS NULL OR created_at >= $2::timestamptz)
        AND ($3::text IS NULL OR actor_kind = $3)
        AND ($4::text IS NULL OR actor_id = $4)
        AND ($5::text IS NULL OR action = $5)
        AND ($6::text IS NULL OR target_kind = $6)
        AND ($7::text IS NULL OR target_id = $7)
        AND ($8::timestamptz IS NULL OR created_at >= $8::timestamptz)
        AND ($9::timestamptz IS NULL OR created_at < $9::timestamptz)
        AND ($10::bigint IS NULL OR id < $10::bigint)
      ORDER BY audit_log.id DESC
      LIMIT $11`,
    [
      workspaceId,
      cutoff(retention),
      f.actorKind ?? null,
      f.actorId ?? null,
      f.action ?? null,
      f.targetKind ?? null,
      f.targetId ?? null,
      f.since?.toISOString() ?? null,
      f.until?.toISOString() ?? null,
      f.before ?? null,
      f.limit,
    ],
  );
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspace_id,
    at: r.created_at,
    actor: { kind: r.actor_kind, id: r.actor_id },
    action: r.action,
    target: { kind: r.target_kind, id: r.target_id },
    beforeVersion: r.before_version,
    afterVersion: r.after_version,
    requestId: r.request_id,
  }));
}
