import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import {
  ALL_VALUE,
  MAX_VARIABLE_OPTIONS,
  MAX_VARIABLE_VALUE_LENGTH,
  resolveTime,
  TimeExpressionSchema,
  VARIABLE_NAME,
  VariableSchema,
} from "../../../lib/dashboards/spec.ts";
import { readVariableOptions, selectionValues } from "../../../lib/dashboards/variables.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody } from "../../../lib/http/input.ts";
import type { QueryRunner } from "../../../lib/query/runner.ts";
import { variablesNamed } from "../../../lib/sql-guard/index.ts";
import { getSourceInWorkspace } from "../../../lib/sources/index.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";

export interface QueryPreviewRouteDeps {
  pool: pg.Pool;
  auth: Auth;
  runner: Pick<QueryRunner, "run">;
  /** Wall clock for resolving `now`-relative time expressions. */
  now: () => number;
}

export const QueryPreviewBodySchema = z
  .object({
    sourceId: z.string().min(1).max(64),
    sql: z.string().min(1).max(20_000).openapi({
      example: "SELECT $__timeGroup(ts, $__interval) AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
    }),
    time: z.object({ from: TimeExpressionSchema, to: TimeExpressionSchema }).openapi({ example: { from: "now-1h", to: "now" } }),
    variables: z
      .array(VariableSchema)
      .max(20)
      .optional()
      .openapi({ description: "The dashboard's variables as in its spec (saved or not): the statement may name them as `$name`." }),
    values: z
      .record(
        z.string().regex(VARIABLE_NAME, { error: "must name a variable" }),
        z
          .array(
            z
              .string()
              .max(MAX_VARIABLE_VALUE_LENGTH)
              .refine((v) => !v.includes("\u0000"), { error: "must not contain a NUL character" }),
          )
          .max(MAX_VARIABLE_OPTIONS),
      )
      .optional()
      .openapi({
        description:
          "The values to bind per variable name, as a viewer's `var-NAME` would give them; a variable left out binds its default. Bound as parameters exactly as the stream binds them, never spliced.",
        example: { status: ["500"] },
      }),
  })
  .superRefine((body, ctx) => {
    const declared = new Map((body.variables ?? []).map((v) => [v.name, v]));
    for (const [name, values] of Object.entries(body.values ?? {})) {
      const v = declared.get(name);
      if (!v) ctx.addIssue({ code: "custom", path: ["values", name], message: "names no variable in variables" });
      else if (values.length > 1 && v.multi !== true)
        ctx.addIssue({ code: "custom", path: ["values", name], message: "takes one value (the variable is not multi-value)" });
      else if (values.includes(ALL_VALUE) && (v.includeAll !== true || values.length > 1))
        ctx.addIssue({
          code: "custom",
          path: ["values", name],
          message: v.includeAll === true ? `${ALL_VALUE} (All) stands alone` : `${ALL_VALUE} (All) is not offered by this variable`,
        });
    }
  })
  .openapi("QueryPreview");

const CellSchema = z.union([z.string(), z.number(), z.boolean(), z.null(), z.any()]);

export const QueryResultSchema = z
  .object({
    columns: z.array(z.object({ name: z.string(), type: z.string() })),
    rows: z.array(z.array(CellSchema)).openapi({ description: "Rows as arrays in column order; timestamps are epoch milliseconds." }),
    truncated: z.boolean().openapi({ description: "True when the result was cut at MAX_QUERY_ROWS." }),
    elapsedMs: z.number(),
    range: z.object({ fromMs: z.number(), toMs: z.number() }).openapi({ description: "The resolved time range the macros were bound to." }),
  })
  .openapi("QueryResult");

/**
 * POST /api/workspaces/:workspaceId/query-preview: one guarded run of ad-hoc SQL (editor), over a range and the
 * dashboard's variables with the values the editor chose, bound the way the stream binds a view's.
 */
export function registerQueryPreviewRoutes(app: ApiRouter, deps: QueryPreviewRouteDeps): void {
  const { auth, pool, runner } = deps;
  const route = createRoute({
    method: "post",
    path: "/api/workspaces/{workspaceId}/query-preview",
    tags: ["query"],
    summary: "Run ad-hoc SQL through the guard against a source and time range (editor)",
    middleware: [
      auth.rejectCrossSite,
      auth.requireSession,
      auth.requireRole("editor", workspaceFromParam("workspaceId")),
      limitBody(64 * 1024),
    ] as const,
    request: {
      params: WorkspaceParamsSchema,
      body: { required: true, content: { "application/json": { schema: QueryPreviewBodySchema } } },
    },
    responses: {
      200: { description: "The result", content: { "application/json": { schema: QueryResultSchema } } },
      ...problems(400, 401, 403, 404, 422, 502, 504),
    },
  });
  app.openapi(route, async (c) => {
    const body = c.req.valid("json");
    const source = await getSourceInWorkspace(pool, c.var.workspaceId, body.sourceId);
    if (!source) throw new AppError("not_found", "No such source in this workspace.", { field: "sourceId" });
    const now = deps.now();
    const range = { fromMs: resolveTime(body.time.from, now), toMs: resolveTime(body.time.to, now) };
    if (range.fromMs > range.toMs) {
      throw new AppError("validation_failed", "Invalid request body: time: from must not be after to", {
        issues: [{ path: "time", message: "from must not be after to" }],
      });
    }
    const declared = body.variables ?? [];
    const workspaceId = c.var.workspaceId;
    // Bound as a viewer's stream binds them: a chosen value as is, All and the defaults from the variable's options
    // now (a query variable's SQL runs over the preview's range), and only the variables the statement names.
    const variableValues = await selectionValues(
      { variables: declared },
      body.values ?? {},
      (v) => readVariableOptions({ runner, getSource: (ws, id) => getSourceInWorkspace(pool, ws, id) }, workspaceId, v, range),
      variablesNamed(body.sql, declared),
    );
    const result = await runner.run({
      source,
      workspaceId: c.var.workspaceId,
      sql: body.sql,
      range,
      variables: declared.map((v) => ({ name: v.name, multi: v.multi })),
      variableValues,
    });
    c.header("cache-control", "no-store");
    return c.json({ ...result, range }, 200);
  });
}
