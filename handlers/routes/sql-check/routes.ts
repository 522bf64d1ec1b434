import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody } from "../../../lib/http/input.ts";
import { catalogVersion, getSourceInWorkspace } from "../../../lib/sources/index.ts";
import { GUARD_REASONS, type Guard, type GuardVerdict } from "../../../lib/sql-guard/verdict.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { SourceParamsSchema, workspaceOfSource } from "../sources/routes.ts";

export interface SqlCheckRouteDeps {
  pool: pg.Pool;
  auth: Auth;
  guard: Guard;
}

// The guard refuses past SQL_MAX_LENGTH (20,000 characters by default) with a verdict; a body beyond this
// is not a statement being typed and gets 400 naming the limit.
const MAX_CHECK_BODY = 256 * 1024;

export const SqlCheckBodySchema = z
  .object({
    sql: z.string().max(MAX_CHECK_BODY).openapi({ example: "SELECT * FROM pg_shadow" }),
    variables: z
      .array(z.object({ name: z.string().max(64), multi: z.boolean().optional() }))
      .max(20)
      .optional()
      .openapi({ description: "The dashboard's variables the statement may name (`$name`, `${name}`), as in its spec." }),
  })
  .openapi("SqlCheck");

/** The guard's verdict on a statement, without the expanded SQL: what an editor shows as you type. */
export const SqlVerdictSchema = z
  .union([
    z.object({ ok: z.literal(true) }),
    z.object({
      ok: z.literal(false),
      reason: z.enum(GUARD_REASONS),
      message: z.string().openapi({ description: "Names the refused table, column, function or keyword." }),
      location: z.number().int().min(0).optional().openapi({
        description:
          "Where the refused name, comment, keyword or syntax error starts: a UTF-16 offset into `sql` as sent (macros unexpanded). Absent when the refusal is about the whole statement.",
      }),
    }),
  ])
  .openapi("SqlVerdict");

/** The wire shape of a verdict (lib/sql-guard's GuardVerdict without the expansion). */
export type SqlVerdict = z.infer<typeof SqlVerdictSchema>;

/** A GuardVerdict as the check route sends it. */
export function verdictJson(v: GuardVerdict): SqlVerdict {
  if (v.ok) return { ok: true };
  return v.location === undefined
    ? { ok: false, reason: v.reason, message: v.message }
    : { ok: false, reason: v.reason, message: v.message, location: v.location };
}

/**
 * POST /api/sources/:sourceId/check (editor): the server's guard on one statement against the source's
 * catalog, nothing run. The panel editor calls it as you type; refusals here are not counted in
 * svc_sql_validation_rejections_total (a half-typed statement is not a refused query).
 */
export function registerSqlCheckRoutes(app: ApiRouter, deps: SqlCheckRouteDeps): void {
  const { auth, pool, guard } = deps;
  const route = createRoute({
    method: "post",
    path: "/api/sources/{sourceId}/check",
    tags: ["query"],
    summary: "The SQL guard's verdict on a statement for this source, with the place of what it refused (editor)",
    middleware: [
      auth.rejectCrossSite,
      auth.requireSession,
      auth.requireRole("editor", workspaceOfSource(pool)),
      limitBody(MAX_CHECK_BODY),
    ] as const,
    request: {
      params: SourceParamsSchema,
      body: { required: true, content: { "application/json": { schema: SqlCheckBodySchema } } },
    },
    responses: {
      200: { description: "The verdict", content: { "application/json": { schema: SqlVerdictSchema } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(route, async (c) => {
    const source = await getSourceInWorkspace(pool, c.var.workspaceId, c.req.valid("param").sourceId);
    if (!source) throw new AppError("not_found", "Not found.");
    const { sql, variables } = c.req.valid("json");
    return c.json(verdictJson(guard.check(sql, source.catalog, catalogVersion(source), variables)), 200);
  });
}
