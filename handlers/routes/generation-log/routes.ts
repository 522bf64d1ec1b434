import { createRoute, z } from "@hono/zod-openapi";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import type { AiRouteDeps } from "../ai/shared.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";

/** Query of GET /api/workspaces/:workspaceId/generation-log. */
export const GenerationLogQuerySchema = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .optional()
    .openapi({ param: { name: "limit", in: "query" }, description: "Entries per page (1 to 200)" }),
  before: z
    .string()
    .regex(/^\d{1,18}$/)
    .optional()
    .openapi({ param: { name: "before", in: "query" }, description: "The id of the last entry of the previous page" }),
});

const GenerationLogEntrySchema = z
  .object({
    id: z.string(),
    userSub: z.string(),
    route: z.string().openapi({ description: "generate, source_draft or chat" }),
    prompt: z
      .string()
      .openapi({ description: "Redacted (emails, secrets, credentials in URLs, long digit runs) and capped at AI_LOG_MAX_CHARS" }),
    result: z.unknown().openapi({ description: "What the model returned (a spec, a draft or an answer)" }),
    model: z.string(),
    inputTokens: z.number().int(),
    outputTokens: z.number().int(),
    cost: z.number(),
    outcome: z.string().openapi({ description: "ok, provider_error, provider_timeout, invalid_output or cancelled" }),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("GenerationLogEntry");

/** Response: newest first; page with `before` = the last id. */
export const GenerationLogSchema = z.object({
  entries: z.array(GenerationLogEntrySchema),
  retentionDays: z.number().int().openapi({ description: "GENERATION_LOG_RETENTION_DAYS" }),
});

/** GET /api/workspaces/:workspaceId/generation-log (admin): the workspace's redacted AI log. */
export function registerGenerationLogRoutes(app: ApiRouter, deps: AiRouteDeps): void {
  const { auth } = deps;
  const route = createRoute({
    method: "get",
    path: "/api/workspaces/{workspaceId}/generation-log",
    tags: ["ai"],
    summary: "The workspace's redacted AI generation log, newest first (admin)",
    middleware: [auth.requireSession, auth.requireRole("admin", workspaceFromParam())] as const,
    request: { params: WorkspaceParamsSchema, query: GenerationLogQuerySchema },
    responses: {
      200: { description: "Log entries", content: { "application/json": { schema: GenerationLogSchema } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(route, async (c) => {
    const body = {
      entries: await deps.ai.generationLog.list(c.var.workspaceId, c.req.valid("query")),
      retentionDays: deps.config.GENERATION_LOG_RETENTION_DAYS,
    };
    c.header("cache-control", "no-store");
    return c.json(body, 200);
  });
}
