import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import { AUDIT_ACTIONS, type AuditEntry, type AuditRetention, listAudit } from "../../../lib/audit/store.ts";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";

export interface AuditRouteDeps {
  pool: pg.Pool;
  auth: Auth;
  /** AUDIT_RETENTION_DAYS: older entries are never returned (and are swept on write). */
  retention: AuditRetention;
}

const ACTOR_KINDS = ["person", "token", "system"] as const;
const TARGET_KINDS = ["workspace", "source", "dashboard", "limits", "token", "user"] as const;

export const AuditEntrySchema = z
  .object({
    id: z.string().openapi({ description: "Increasing; pass the last one as `before` for the next page" }),
    at: z.string().openapi({ format: "date-time" }),
    actor: z.object({
      kind: z.enum(ACTOR_KINDS).openapi({ description: "person (a signed-in user), token (an API token) or system (provisioning)" }),
      id: z.string().openapi({ description: "The person's sub, the token's id, or the process (`provisioning`)" }),
    }),
    action: z.enum(AUDIT_ACTIONS),
    target: z.object({ kind: z.enum(TARGET_KINDS), id: z.string() }),
    beforeVersion: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The target's version before the change (dashboards, sources); null otherwise" }),
    afterVersion: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The target's version after the change; null for a delete or an unversioned target" }),
    requestId: z.string().nullable().openapi({ description: "The X-Request-Id of the request that made the change, as in the access log" }),
  })
  .openapi("AuditEntry");

const ISO = z.iso.datetime({ offset: true });
const Text = z.string().min(1).max(512);

export const AuditQuerySchema = z.object({
  actorKind: z
    .enum(ACTOR_KINDS)
    .optional()
    .openapi({ param: { name: "actorKind", in: "query" } }),
  actorId: Text.optional().openapi({ param: { name: "actorId", in: "query" }, description: "A person's sub or a token's id" }),
  action: z
    .enum(AUDIT_ACTIONS)
    .optional()
    .openapi({ param: { name: "action", in: "query" } }),
  targetKind: z
    .enum(TARGET_KINDS)
    .optional()
    .openapi({ param: { name: "targetKind", in: "query" } }),
  targetId: Text.optional().openapi({ param: { name: "targetId", in: "query" } }),
  since: ISO.optional().openapi({ param: { name: "since", in: "query" }, description: "Entries at or after this instant" }),
  until: ISO.optional().openapi({ param: { name: "until", in: "query" }, description: "Entries before this instant" }),
  before: z
    .string()
    .regex(/^[1-9][0-9]{0,17}$/, { error: "must be an entry id" })
    .optional()
    .openapi({ param: { name: "before", in: "query" }, description: "Entries older than this entry id (the next page)" }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(500)
    .default(100)
    .openapi({ param: { name: "limit", in: "query" } }),
});

function entryJson(e: AuditEntry) {
  return { ...e, at: e.at.toISOString() };
}

/** The audit trail of a workspace (admin): newest first, filtered, paged by entry id. */
export function registerAuditRoutes(app: ApiRouter, deps: AuditRouteDeps): void {
  const { auth, pool } = deps;
  const list = createRoute({
    method: "get",
    path: "/api/workspaces/{workspaceId}/audit",
    tags: ["audit"],
    summary: "The workspace's audit trail: who changed what, when, and the versions before and after (admin)",
    middleware: [auth.requireSession, auth.requireRole("admin", workspaceFromParam("workspaceId"))] as const,
    request: { params: WorkspaceParamsSchema, query: AuditQuerySchema },
    responses: {
      200: {
        description: "Entries, newest first; `next` is the `before` of the following page, null on the last",
        content: {
          "application/json": {
            schema: z.object({ entries: z.array(AuditEntrySchema), next: z.string().nullable() }).openapi("AuditPage"),
          },
        },
      },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(list, async (c) => {
    const q = c.req.valid("query");
    const entries = await listAudit(
      pool,
      c.var.workspaceId,
      { ...q, since: q.since ? new Date(q.since) : undefined, until: q.until ? new Date(q.until) : undefined },
      deps.retention,
    );
    c.header("cache-control", "no-store");
    const next = entries.length === q.limit ? entries[entries.length - 1]!.id : null;
    return c.json({ entries: entries.map(entryJson), next }, 200);
  });
}
