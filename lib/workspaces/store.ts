import type pg from "pg";
import { roleIn } from "../auth/roles.ts";
import type { Role } from "../auth/types.ts";
import { newId } from "../store/ids.ts";

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

/** One workspace by id, or null. */
export async function getWorkspace(pool: pg.Pool | pg.PoolClient, id: string): Promise<Workspace | null> {
  const { rows } = await pool.query<Workspace>(`SELECT ${COLUMNS} FROM workspaces WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Every workspace one of `groups` grants a role in, with the highest such role, ordered by name. */
export async function listWorkspacesForGroups(
  pool: pg.Pool | pg.PoolClient,
  groups: readonly string[],
): Promise<(Workspace & { role: Role })[]> {
  if (groups.length === 0) return [];
  const { rows } = await pool.query<Workspace>(
    `SELECT ${COLUMNS} FROM workspaces
      WHERE viewer_group = ANY($1::text[]) OR editor_group = ANY($1::text[]) OR admin_group = ANY($1::text[])
      ORDER BY name, id`,
    [groups],
  );
  return rows.flatMap((ws) => {
    const role = roleIn(groups, ws);
    return role ? [{ ...ws, role }] : [];
  });
}

/** Creates a workspace (and its empty limits row); `id` defaults to a fresh opaque id. */
export async function createWorkspace(
  pool: pg.Pool | pg.PoolClient,
  input: { id?: string; name: string; viewer_group: string; editor_group: string; admin_group: string },
): Promise<Workspace> {
  const id = input.id ?? newId("ws");
  const { rows } = await pool.query<Workspace>(
    `WITH ws AS (
       INSERT INTO workspaces (id, name, viewer_group, editor_group, admin_group)
       VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}
     ), lim AS (
       INSERT INTO workspace_limits (workspace_id) SELECT id FROM ws
     )
     SELECT * FROM ws`,
    [id, input.name, input.viewer_group, input.editor_group, input.admin_group],
  );
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
