import type { Hono } from "hono";
import type pg from "pg";
import type { Auth } from "../../lib/auth/create-auth.ts";
import { workspaceFromParam } from "../../lib/auth/middleware.ts";
import type { Role } from "../../lib/auth/types.ts";
import { getWorkspace, listWorkspacesForGroups } from "../../lib/workspaces/store.ts";

/** One workspace as the caller sees it; group names are shown to admins only. */
export interface WorkspaceView {
  id: string;
  name: string;
  role: Role;
  groups?: { viewer: string; editor: string; admin: string };
}

/** Response of GET /api/workspaces. */
export interface WorkspaceListResponse {
  workspaces: WorkspaceView[];
}

/** GET /api/workspaces (mine, with my role) and GET /api/workspaces/:workspaceId (viewer or better). */
export function registerWorkspaces(app: Hono<any>, deps: { pool: pg.Pool }, auth: Auth): void {
  app.get("/api/workspaces", auth.requireSession, async (c) => {
    const user = c.var.user;
    const rows = await listWorkspacesForGroups(deps.pool, user.groups);
    const body: WorkspaceListResponse = { workspaces: rows.map((w) => view(w, w.role)) };
    c.header("cache-control", "no-store");
    return c.json(body);
  });

  app.get("/api/workspaces/:workspaceId", auth.requireSession, auth.requireRole("viewer", workspaceFromParam()), async (c) => {
    const { workspaceId, role } = c.var;
    const ws = await getWorkspace(deps.pool, workspaceId);
    if (!ws) return c.notFound();
    c.header("cache-control", "no-store");
    return c.json(view(ws, role));
  });
}

function view(
  w: { id: string; name: string; viewer_group: string; editor_group: string; admin_group: string },
  role: Role,
): WorkspaceView {
  const v: WorkspaceView = { id: w.id, name: w.name, role };
  if (role === "admin") v.groups = { viewer: w.viewer_group, editor: w.editor_group, admin: w.admin_group };
  return v;
}
