import { createRoute, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import { isPlatformAdmin } from "../../../lib/auth/roles.ts";
import type { Role } from "../../../lib/auth/types.ts";
import type { Config } from "../../../lib/config/parse.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody } from "../../../lib/http/input.ts";
import type { QueryRunner } from "../../../lib/query/runner.ts";
import {
  createWorkspace,
  deleteWorkspace,
  getWorkspace,
  getWorkspaceSummary,
  listAllWorkspaces,
  listWorkspacesFor,
  updateWorkspace,
  type Workspace,
  WorkspaceGroupsSchema,
  WorkspaceIdSchema,
  WorkspaceNameSchema,
  type WorkspaceSummary,
} from "../../../lib/workspaces/store.ts";
import { type ApiEnv, type ApiRouter, problems } from "../../openapi.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";

export interface WorkspaceRouteDeps {
  config: Pick<Config, "PLATFORM_ADMIN_GROUP">;
  pool: pg.Pool;
  auth: Auth;
  /** A deleted workspace's sources: their pools are closed and their metric series dropped. */
  runner: Pick<QueryRunner, "forget">;
}

const RoleSchema = z.enum(["viewer", "editor", "admin"]);
// Re-wrapped with this module's z: schemas built before @hono/zod-openapi loaded lack `.openapi()`.
const GroupsSchema = z.object(WorkspaceGroupsSchema.shape).openapi("WorkspaceGroups", {
  description: "The OIDC groups that grant each role; an empty string means no group grants that role.",
});

/** One workspace as its member sees it; group names are shown to admins only. */
export const WorkspaceViewSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    role: RoleSchema,
    groups: z
      .object({ viewer: z.string(), editor: z.string(), admin: z.string() })
      .optional()
      .openapi({ description: "The OIDC groups granting each role; admins only" }),
  })
  .openapi("Workspace");
export type WorkspaceView = z.infer<typeof WorkspaceViewSchema>;

/** A workspace as a platform admin sees it: its groups and what it holds. */
export const AdminWorkspaceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    groups: GroupsSchema,
    dashboards: z.number().int(),
    sources: z.number().int(),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("AdminWorkspace");

const CreateWorkspaceSchema = z
  .object({
    id: z.string().pipe(WorkspaceIdSchema).optional().openapi({
      description:
        "A stable id of your choosing (ws_ plus up to 60 letters, digits, _ or -), e.g. to name it in SOURCE_SECRET_REFS before it exists; random when omitted.",
      example: "ws_checkout",
    }),
    name: z.string().pipe(WorkspaceNameSchema),
    groups: GroupsSchema,
  })
  .openapi("CreateWorkspace");

const UpdateWorkspaceSchema = z
  .object({
    name: z.string().pipe(WorkspaceNameSchema).optional(),
    groups: z.object(WorkspaceGroupsSchema.partial().shape).optional().openapi({ description: "Only the roles given change." }),
  })
  .refine((b) => b.name !== undefined || (b.groups !== undefined && Object.keys(b.groups).length > 0), {
    error: "send a new name, groups, or both",
  })
  .openapi("UpdateWorkspace");

const DeleteQuerySchema = z.object({
  force: z
    .enum(["true", "false"])
    .optional()
    .openapi({
      param: { name: "force", in: "query" },
      description:
        "true also deletes the workspace's dashboards and sources; without it a workspace that still holds any is refused with 409.",
    }),
});

function memberView(w: Pick<Workspace, "id" | "name" | "viewer_group" | "editor_group" | "admin_group">, role: Role): WorkspaceView {
  const v: WorkspaceView = { id: w.id, name: w.name, role };
  if (role === "admin") v.groups = { viewer: w.viewer_group, editor: w.editor_group, admin: w.admin_group };
  return v;
}

function adminView(w: WorkspaceSummary): z.infer<typeof AdminWorkspaceSchema> {
  return {
    id: w.id,
    name: w.name,
    groups: { viewer: w.viewer_group, editor: w.editor_group, admin: w.admin_group },
    dashboards: w.dashboards,
    sources: w.sources,
    createdAt: w.created_at.toISOString(),
  };
}

/** 403 unless the signed-in user is in PLATFORM_ADMIN_GROUP (after requireSession). */
export function requirePlatformAdmin(config: Pick<Config, "PLATFORM_ADMIN_GROUP">): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    if (!isPlatformAdmin(c.var.user.groups, config.PLATFORM_ADMIN_GROUP)) {
      throw new AppError(
        "forbidden",
        config.PLATFORM_ADMIN_GROUP
          ? "This needs the platform admin role: membership of the group PLATFORM_ADMIN_GROUP names."
          : "No platform admin group is configured (PLATFORM_ADMIN_GROUP), so workspaces are managed only by provisioning files.",
      );
    }
    await next();
  };
}

/**
 * Workspaces: mine (any signed-in user) and one of mine (viewer); and for platform admins (PLATFORM_ADMIN_GROUP) the
 * list of all, create, rename, set the role groups, and delete (refused with 409 while it holds dashboards or sources,
 * unless force=true).
 */
export function registerWorkspaceRoutes(app: ApiRouter, deps: WorkspaceRouteDeps): void {
  const { auth, pool } = deps;
  const platformAdmin = requirePlatformAdmin(deps.config);
  const noStore = (c: { header(name: string, value: string): void }) => c.header("cache-control", "no-store");

  const mine = createRoute({
    method: "get",
    path: "/api/workspaces",
    tags: ["workspaces"],
    summary: "The workspaces I belong to, with my role",
    middleware: [auth.requireSession] as const,
    responses: {
      200: {
        description: "My workspaces",
        content: { "application/json": { schema: z.object({ workspaces: z.array(WorkspaceViewSchema) }) } },
      },
      ...problems(401),
    },
  });
  app.openapi(mine, async (c) => {
    const rows = await listWorkspacesFor(pool, c.var.user);
    noStore(c);
    return c.json({ workspaces: rows.map((w) => memberView(w, w.role)) }, 200);
  });

  const one = createRoute({
    method: "get",
    path: "/api/workspaces/{workspaceId}",
    tags: ["workspaces"],
    summary: "One workspace (viewer)",
    middleware: [auth.requireSession, auth.requireRole("viewer", workspaceFromParam())] as const,
    request: { params: WorkspaceParamsSchema },
    responses: {
      200: { description: "The workspace", content: { "application/json": { schema: WorkspaceViewSchema } } },
      ...problems(400, 401, 404),
    },
  });
  app.openapi(one, async (c) => {
    const ws = await getWorkspace(pool, c.var.workspaceId);
    if (!ws) throw new AppError("not_found", "Not found.");
    noStore(c);
    return c.json(memberView(ws, c.var.role), 200);
  });

  const listAll = createRoute({
    method: "get",
    path: "/api/admin/workspaces",
    tags: ["workspaces"],
    summary: "Every workspace with its groups and counts (platform admin)",
    middleware: [auth.requireSession, platformAdmin] as const,
    responses: {
      200: {
        description: "All workspaces",
        content: { "application/json": { schema: z.object({ workspaces: z.array(AdminWorkspaceSchema) }) } },
      },
      ...problems(401, 403),
    },
  });
  app.openapi(listAll, async (c) => {
    noStore(c);
    return c.json({ workspaces: (await listAllWorkspaces(pool)).map(adminView) }, 200);
  });

  const create = createRoute({
    method: "post",
    path: "/api/admin/workspaces",
    tags: ["workspaces"],
    summary: "Create a workspace with its role groups (platform admin)",
    middleware: [auth.rejectCrossSite, auth.requireSession, platformAdmin, limitBody(16 * 1024)] as const,
    request: { body: { required: true, content: { "application/json": { schema: CreateWorkspaceSchema } } } },
    responses: {
      201: { description: "Created", content: { "application/json": { schema: AdminWorkspaceSchema } } },
      ...problems(400, 401, 403, 409),
    },
  });
  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const ws = await createWorkspace(pool, {
      id: body.id,
      name: body.name,
      viewer_group: body.groups.viewer,
      editor_group: body.groups.editor,
      admin_group: body.groups.admin,
    });
    c.header("Location", `/api/admin/workspaces/${ws.id}`);
    return c.json(adminView({ ...ws, dashboards: 0, sources: 0 }), 201);
  });

  const read = createRoute({
    method: "get",
    path: "/api/admin/workspaces/{workspaceId}",
    tags: ["workspaces"],
    summary: "One workspace with its groups and counts (platform admin)",
    middleware: [auth.requireSession, platformAdmin] as const,
    request: { params: WorkspaceParamsSchema },
    responses: {
      200: { description: "The workspace", content: { "application/json": { schema: AdminWorkspaceSchema } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(read, async (c) => {
    const ws = await getWorkspaceSummary(pool, c.req.valid("param").workspaceId);
    if (!ws) throw new AppError("not_found", "Not found.");
    noStore(c);
    return c.json(adminView(ws), 200);
  });

  const update = createRoute({
    method: "patch",
    path: "/api/admin/workspaces/{workspaceId}",
    tags: ["workspaces"],
    summary: "Rename a workspace and/or set the groups that grant viewer, editor and admin (platform admin)",
    middleware: [auth.rejectCrossSite, auth.requireSession, platformAdmin, limitBody(16 * 1024)] as const,
    request: {
      params: WorkspaceParamsSchema,
      body: { required: true, content: { "application/json": { schema: UpdateWorkspaceSchema } } },
    },
    responses: {
      200: { description: "Saved", content: { "application/json": { schema: AdminWorkspaceSchema } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(update, async (c) => {
    const { name, groups } = c.req.valid("json");
    const id = c.req.valid("param").workspaceId;
    const saved = await updateWorkspace(pool, id, {
      name,
      viewer_group: groups?.viewer,
      editor_group: groups?.editor,
      admin_group: groups?.admin,
    });
    const ws = saved ? await getWorkspaceSummary(pool, id) : null;
    if (!ws) throw new AppError("not_found", "Not found.");
    return c.json(adminView(ws), 200);
  });

  const remove = createRoute({
    method: "delete",
    path: "/api/admin/workspaces/{workspaceId}",
    tags: ["workspaces"],
    summary: "Delete a workspace (platform admin); 409 while it holds dashboards or sources, unless force=true",
    middleware: [auth.rejectCrossSite, auth.requireSession, platformAdmin] as const,
    request: { params: WorkspaceParamsSchema, query: DeleteQuerySchema },
    responses: { 204: { description: "Deleted, with everything it held" }, ...problems(400, 401, 403, 404, 409) },
  });
  app.openapi(remove, async (c) => {
    const removed = await deleteWorkspace(pool, c.req.valid("param").workspaceId, { force: c.req.valid("query").force === "true" });
    for (const sourceId of removed.sources) deps.runner.forget(sourceId);
    return c.body(null, 204);
  });
}
