import type pg from "pg";
import { z } from "zod";
import { roleIn } from "../auth/roles.ts";
import type { Role, SessionUser } from "../auth/types.ts";
import { DASHBOARD_CHANGED_CHANNEL } from "../dashboards/store.ts";
import { AppError } from "../http/errors.ts";
import { newId } from "../store/ids.ts";

/**
 * A workspace id chosen by an operator (a provisioning file, or the create route's optional `id`): `ws_` and up to
 * 60 letters, digits, `_` or `-`. It is a metric label value and appears in SOURCE_SECRET_REFS grants, so it is short
 * and plain; ids the service makes itself are random (`ws_` + 16 characters).
 */
export const WorkspaceIdSchema = z
  .string()
  .regex(/^ws_[A-Za-z0-9_-]{1,60}$/, { error: "must be ws_ followed by 1 to 60 letters, digits, _ or -" });

/** A workspace's display name. */
export const WorkspaceNameSchema = z
  .string()
  .trim()
  .min(1, { error: "must not be empty" })
  .max(200)
  .regex(/^[^\u0000-\u001f\u007f]*$/, { error: "must not contain control characters" });

/** An OIDC group name; empty means no group grants that role. */
const GroupNameSchema = z
  .string()
  .trim()
  .max(256)
  .regex(/^[^\u0000-\u001f\u007f]*$/, { error: "must not contain control characters" });

/** The OIDC groups that grant each role in a workspace (API and provisioning files). */
export const WorkspaceGroupsSchema = z.object({ viewer: GroupNameSchema, editor: GroupNameSchema, admin: GroupNameSchema });
export type WorkspaceGroupsInput = z.infer<typeof WorkspaceGroupsSchema>;

/** A workspace row: its id, name and the OIDC groups that grant each role. */
export interface Workspace {
  id: string;
  name: string;
  viewer_group: string;
  editor_group: string;
  admin_group: string;
  created_at: Date;
}

/** Per-workspace overrides of the AI limits; null means the environment default. */
export interface WorkspaceLimits {
  workspace_id: string;
  llm_rate_per_minute: number | null;
  llm_daily_token_budget: number | null;
}

const COLUMNS = "id, name, viewer_group, editor_group, admin_group, created_at";

/**
 * NOTIFY channel on the config store; the payload is the id of a workspace whose role groups changed or that was
 * deleted, sent at commit. Stream hosts end the open streams of people who lost their role in it.
 */
export const WORKSPACE_ACCESS_CHANNEL = "pulseboard_workspace_access";

/** One workspace by id, or null. */
export async function getWorkspace(pool: pg.Pool | pg.PoolClient, id: string): Promise<Workspace | null> {
  const { rows } = await pool.query<Workspace>(`SELECT ${COLUMNS} FROM workspaces WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/**
 * Every workspace one of `groups` grants a role in, with the highest such role, ordered by name; `revoked` (the
 * workspaces a session lost by a workspace admin's revocation) are left out.
 */
export async function listWorkspacesForGroups(
  pool: pg.Pool | pg.PoolClient,
  groups: readonly string[],
  revoked: readonly string[] = [],
): Promise<(Workspace & { role: Role })[]> {
  if (groups.length === 0) return [];
  const { rows } = await pool.query<Workspace>(
    `SELECT ${COLUMNS} FROM workspaces
      WHERE viewer_group = ANY($1::text[]) OR editor_group = ANY($1::text[]) OR admin_group = ANY($1::text[])
      ORDER BY name, id`,
    [groups],
  );
  return rows.flatMap((ws) => {
    const role = revoked.includes(ws.id) ? null : roleIn(groups, ws);
    return role ? [{ ...ws, role }] : [];
  });
}

/** The workspaces a caller has a role in: an API token's one workspace, or those its groups grant (listWorkspacesForGroups). */
export async function listWorkspacesFor(
  pool: pg.Pool | pg.PoolClient,
  user: Pick<SessionUser, "groups" | "token" | "revokedWorkspaces">,
): Promise<(Workspace & { role: Role })[]> {
  if (!user.token) return listWorkspacesForGroups(pool, user.groups, user.revokedWorkspaces);
  const ws = await getWorkspace(pool, user.token.workspaceId);
  return ws ? [{ ...ws, role: user.token.role }] : [];
}

/**
 * Whether a caller is an admin of at least one workspace: an API token with the admin role, or groups holding some
 * workspace's admin group (a workspace whose access a workspace admin revoked for this session does not count).
 */
export async function isAdminOfAnyWorkspace(
  pool: pg.Pool | pg.PoolClient,
  user: Pick<SessionUser, "groups" | "token" | "revokedWorkspaces">,
): Promise<boolean> {
  if (user.token) return user.token.role === "admin";
  if (user.groups.length === 0) return false;
  const { rowCount } = await pool.query(
    "SELECT 1 FROM workspaces WHERE admin_group <> '' AND admin_group = ANY($1::text[]) AND NOT (id = ANY($2::text[])) LIMIT 1",
    [user.groups, user.revokedWorkspaces ?? []],
  );
  return (rowCount ?? 0) > 0;
}

/** Creates a workspace (and its empty limits row); `id` defaults to a fresh opaque id. */
export async function createWorkspace(
  pool: pg.Pool | pg.PoolClient,
  input: { id?: string; name: string; viewer_group: string; editor_group: string; admin_group: string },
): Promise<Workspace> {
  const id = input.id ?? newId("ws");
  const { rows } = await pool
    .query<Workspace>(
      `WITH ws AS (
         INSERT INTO workspaces (id, name, viewer_group, editor_group, admin_group)
         VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}
       ), lim AS (
         INSERT INTO workspace_limits (workspace_id) SELECT id FROM ws
       )
       SELECT * FROM ws`,
      [id, input.name, input.viewer_group, input.editor_group, input.admin_group],
    )
    .catch((err: unknown) => {
      // The id is the primary key: a second workspace with an operator-chosen id is a conflict, not a 500.
      if ((err as { code?: string }).code === "23505") throw new AppError("conflict", "A workspace with this id already exists.", { id });
      throw err;
    });
  return rows[0]!;
}

/** The limits row of a workspace (all-null overrides when none was stored), or null if the workspace does not exist. */
export async function getWorkspaceLimits(pool: pg.Pool | pg.PoolClient, workspaceId: string): Promise<WorkspaceLimits | null> {
  const { rows } = await pool.query<{ id: string; llm_rate_per_minute: number | null; llm_daily_token_budget: string | null }>(
    `SELECT w.id, l.llm_rate_per_minute, l.llm_daily_token_budget
       FROM workspaces w LEFT JOIN workspace_limits l ON l.workspace_id = w.id
      WHERE w.id = $1`,
    [workspaceId],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    workspace_id: r.id,
    llm_rate_per_minute: r.llm_rate_per_minute,
    llm_daily_token_budget: r.llm_daily_token_budget === null ? null : Number(r.llm_daily_token_budget),
  };
}

/** Sets the limits overrides (null clears one); returns null if the workspace does not exist. */
export async function setWorkspaceLimits(
  pool: pg.Pool | pg.PoolClient,
  workspaceId: string,
  limits: { llm_rate_per_minute: number | null; llm_daily_token_budget: number | null },
): Promise<WorkspaceLimits | null> {
  const { rows } = await pool.query<{ workspace_id: string; llm_rate_per_minute: number | null; llm_daily_token_budget: string | null }>(
    `INSERT INTO workspace_limits (workspace_id, llm_rate_per_minute, llm_daily_token_budget, updated_at)
     SELECT id, $2, $3, now() FROM workspaces WHERE id = $1
     ON CONFLICT (workspace_id) DO UPDATE
       SET llm_rate_per_minute = EXCLUDED.llm_rate_per_minute,
           llm_daily_token_budget = EXCLUDED.llm_daily_token_budget,
           updated_at = now()
     RETURNING workspace_id, llm_rate_per_minute, llm_daily_token_budget`,
    [workspaceId, limits.llm_rate_per_minute, limits.llm_daily_token_budget],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    workspace_id: r.workspace_id,
    llm_rate_per_minute: r.llm_rate_per_minute,
    llm_daily_token_budget: r.llm_daily_token_budget === null ? null : Number(r.llm_daily_token_budget),
  };
}

/** A workspace with what it holds, for the platform admin's list. */
export interface WorkspaceSummary extends Workspace {
  dashboards: number;
  sources: number;
}

/** Every workspace with its dashboard and source counts, ordered by name (platform admins only). */
export async function listAllWorkspaces(pool: pg.Pool | pg.PoolClient): Promise<WorkspaceSummary[]> {
  const { rows } = await pool.query<WorkspaceSummary>(
    `SELECT ${COLUMNS},
            (SELECT count(*)::int FROM dashboards d WHERE d.workspace_id = w.id) AS dashboards,
            (SELECT count(*)::int FROM sources s WHERE s.workspace_id = w.id) AS sources
       FROM workspaces w
      ORDER BY lower(name), id`,
  );
  return rows;
}

/** One workspace with its counts, or null. */
export async function getWorkspaceSummary(pool: pg.Pool | pg.PoolClient, id: string): Promise<WorkspaceSummary | null> {
  const { rows } = await pool.query<WorkspaceSummary>(
    `SELECT ${COLUMNS},
            (SELECT count(*)::int FROM dashboards d WHERE d.workspace_id = w.id) AS dashboards,
            (SELECT count(*)::int FROM sources s WHERE s.workspace_id = w.id) AS sources
       FROM workspaces w WHERE id = $1`,
    [id],
  );
  return rows[0] ?? null;
}

/** The fields of a workspace a platform admin may change; absent fields stay as they are. */
export interface WorkspacePatch {
  name?: string;
  viewer_group?: string;
  editor_group?: string;
  admin_group?: string;
}

/**
 * Renames a workspace and/or sets its role groups; returns the stored row, or null when it does not exist. A patch
 * that changes nothing writes nothing (provisioning re-applies count on it).
 */
export async function updateWorkspace(pool: pg.Pool | pg.PoolClient, id: string, patch: WorkspacePatch): Promise<Workspace | null> {
  // A change of the role groups is announced on WORKSPACE_ACCESS_CHANNEL at commit (a rename is not).
  const { rows } = await pool.query<Workspace>(
    `WITH old AS (SELECT viewer_group, editor_group, admin_group FROM workspaces WHERE id = $1),
          u AS (UPDATE workspaces SET
                  name = coalesce($2, name),
                  viewer_group = coalesce($3, viewer_group),
                  editor_group = coalesce($4, editor_group),
                  admin_group = coalesce($5, admin_group)
                WHERE id = $1
                  AND (name, viewer_group, editor_group, admin_group) IS DISTINCT FROM
                      (coalesce($2, name), coalesce($3, viewer_group), coalesce($4, editor_group), coalesce($5, admin_group))
                RETURNING ${COLUMNS})
     SELECT u.*, CASE WHEN (u.viewer_group, u.editor_group, u.admin_group) IS DISTINCT FROM
                           (old.viewer_group, old.editor_group, old.admin_group)
                      THEN pg_notify($6, u.id) END AS notified
       FROM u, old`,
    [id, patch.name ?? null, patch.viewer_group ?? null, patch.editor_group ?? null, patch.admin_group ?? null, WORKSPACE_ACCESS_CHANNEL],
  );
  const row = rows[0];
  if (!row) return getWorkspace(pool, id);
  const { notified: _, ...ws } = row as Workspace & { notified?: unknown };
  return ws;
}

/** What deleting a workspace removed with it. */
export interface DeletedWorkspace {
  dashboards: string[];
  sources: string[];
}

/**
 * Deletes a workspace. One that still holds dashboards or sources is refused with `conflict` (naming the counts)
 * unless `force`, which deletes them with it (chat history, generation log and limits always go with it). Deleted
 * dashboards are announced on DASHBOARD_CHANGED_CHANNEL at commit, so stream hosts end their streams. Throws
 * `not_found` when there is no such workspace. Returns the ids removed, so the caller can close source pools.
 */
export async function deleteWorkspace(db: pg.Pool | pg.PoolClient, id: string, opts: { force?: boolean } = {}): Promise<DeletedWorkspace> {
  // A client is already inside its caller's transaction (a provisioning run): the delete joins it.
  if ("release" in db) return deleteWorkspaceIn(db, id, opts);
  const client = await db.connect();
  try {
    await client.query("BEGIN");
    const deleted = await deleteWorkspaceIn(client, id, opts);
    await client.query("COMMIT");
    return deleted;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

async function deleteWorkspaceIn(client: pg.PoolClient, id: string, opts: { force?: boolean }): Promise<DeletedWorkspace> {
  const { rows: ws } = await client.query<{ id: string }>("SELECT id FROM workspaces WHERE id = $1 FOR UPDATE", [id]);
  if (ws.length === 0) throw new AppError("not_found", "Not found.");
  const { rows: counts } = await client.query<{ dashboards: number; sources: number }>(
    `SELECT (SELECT count(*)::int FROM dashboards WHERE workspace_id = $1) AS dashboards,
            (SELECT count(*)::int FROM sources WHERE workspace_id = $1) AS sources`,
    [id],
  );
  const { dashboards, sources } = counts[0]!;
  if ((dashboards > 0 || sources > 0) && !opts.force) {
    throw new AppError(
      "conflict",
      `The workspace still has ${dashboards} dashboard(s) and ${sources} source(s). Delete them first, or delete with force=true to remove them with it.`,
      { dashboards, sources },
    );
  }
  const { rows: deletedDashboards } = await client.query<{ id: string }>(
    `WITH d AS (DELETE FROM dashboards WHERE workspace_id = $1 RETURNING id)
     SELECT d.id, pg_notify($2, d.id) FROM d`,
    [id, DASHBOARD_CHANGED_CHANNEL],
  );
  const { rows: deletedSources } = await client.query<{ id: string }>("DELETE FROM sources WHERE workspace_id = $1 RETURNING id", [id]);
  await client.query("WITH w AS (DELETE FROM workspaces WHERE id = $1 RETURNING id) SELECT pg_notify($2, w.id) FROM w", [
    id,
    WORKSPACE_ACCESS_CHANNEL,
  ]);
  return { dashboards: deletedDashboards.map((r) => r.id), sources: deletedSources.map((r) => r.id) };
}
