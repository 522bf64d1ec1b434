import { createRoute, z } from "@hono/zod-openapi";
import { type GenerationResult, generateDashboard } from "../../../lib/ai/generate.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody } from "../../../lib/http/input.ts";
import { getSourceInWorkspace } from "../../../lib/sources/index.ts";
import { countingGuard } from "../../../lib/sql-guard/counting.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";
import { type AiRouteDeps, MODEL_CALL_PROBLEMS, UsageSchema } from "./shared.ts";

/** Body of POST /api/workspaces/:workspaceId/generate. */
export const GenerateRequestSchema = z.object({
  prompt: z.string().trim().min(1).max(4000),
  sourceId: z.string().min(1).max(64),
});

/** Response: a spec for review (save it with POST /api/workspaces/:workspaceId/dashboards). */
export const GenerateResultSchema = z
  .object({
    spec: z
      .looseObject({})
      .openapi({ description: "A DashboardSpec for review; save it with POST /api/workspaces/{workspaceId}/dashboards" }),
    dropped: z
      .array(z.object({ panelId: z.string(), title: z.string(), sql: z.string(), reason: z.string(), message: z.string() }))
      .openapi({ description: "Panels the guard still refused after the repair round, with its reason" }),
    repaired: z.array(z.string()).openapi({ description: "Panels refused at first and accepted after the repair round" }),
    warnings: z.array(z.string()),
    catalog: z.object({
      status: z.enum(["fresh", "stale"]),
      tablesTotal: z.number().int(),
      tablesIncluded: z.number().int(),
      omittedTables: z.array(z.string()),
    }),
    model: z.string(),
    usage: UsageSchema,
  })
  .openapi("GenerateResult");
export type GenerateResponse = GenerationResult;

/**
 * The Lambda function's deadline (epoch milliseconds) from the `x-amzn-lambda-context` header the Lambda Web
 * Adapter adds to every invocation, or undefined outside Lambda. Used only to shorten the request's model
 * calls, so a forged header can only cut its own sender's request short.
 */
export function functionDeadline(header: string | undefined): number | undefined {
  if (!header || header.length > 8192) return undefined;
  try {
    const deadline = (JSON.parse(header) as { deadline?: unknown }).deadline;
    return typeof deadline === "number" && Number.isFinite(deadline) && deadline > 0 ? deadline : undefined;
  } catch {
    return undefined;
  }
}

/** POST /api/workspaces/:workspaceId/generate (editor): prompt + source → a dashboard spec to review. */
export function registerGenerateRoute(app: ApiRouter, deps: AiRouteDeps): void {
  const { auth } = deps;
  const guard = countingGuard(deps.guard, deps.metrics);
  const route = createRoute({
    method: "post",
    path: "/api/workspaces/{workspaceId}/generate",
    tags: ["ai"],
    summary: "Generate a dashboard spec from a prompt and a source's catalog (editor); every panel is guarded",
    middleware: [
      auth.requireSession,
      auth.rejectCrossSite,
      auth.requireRole("editor", workspaceFromParam()),
      limitBody(64 * 1024),
    ] as const,
    request: {
      params: WorkspaceParamsSchema,
      body: { required: true, content: { "application/json": { schema: GenerateRequestSchema } } },
    },
    responses: {
      200: { description: "A spec to review", content: { "application/json": { schema: GenerateResultSchema } } },
      ...problems(400, 401, 403, 404, 422, 502, 504),
      ...MODEL_CALL_PROBLEMS,
    },
  });
  app.openapi(route, async (c) => {
    const { workspaceId, user } = c.var;
    const body = c.req.valid("json");
    const model = deps.ai.modelDeps();
    const source = await getSourceInWorkspace(deps.pool, workspaceId, body.sourceId);
    if (!source) throw new AppError("not_found", "No such source in this workspace.", { field: "sourceId" });
    const result: GenerateResponse = await generateDashboard(
      {
        model,
        guard,
        generationLog: deps.ai.generationLog,
        config: deps.config,
        now: deps.now,
        // One deadline for the whole request: what the function has left (CloudFront's read timeout matches it).
        deadlineAt: functionDeadline(c.req.header("x-amzn-lambda-context")),
      },
      { workspaceId, userSub: user.sub, prompt: body.prompt, source },
    );
    c.header("cache-control", "no-store");
    return c.json(result, 200);
  });
}
