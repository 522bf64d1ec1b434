import { createRoute, z } from "@hono/zod-openapi";
import { type SourceDraftResult, draftSourceNotes } from "../../../lib/ai/source-draft.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody } from "../../../lib/http/input.ts";
import { getSourceInWorkspace } from "../../../lib/sources/index.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { SourceParamsSchema, workspaceOfSource } from "../sources/routes.ts";
import { type AiRouteDeps, MODEL_CALL_PROBLEMS, UsageSchema } from "./shared.ts";

/** Body of POST /api/sources/:sourceId/draft (optional). */
export const SourceDraftRequestSchema = z.object({ instructions: z.string().trim().max(2000).optional() });

/** Response: the draft for review; save `notes` (edited or not) with the sources API. */
export const SourceDraftResultSchema = z
  .object({
    draft: z
      .looseObject({})
      .openapi({ description: "The structured draft: a summary and, per table, a description, time column, units and suggested panels" }),
    notes: z.string().openapi({ description: "The draft as Markdown, to review and save as the source's notes" }),
    warnings: z.array(z.string()),
    catalog: z.object({ tablesTotal: z.number().int(), tablesIncluded: z.number().int(), omittedTables: z.array(z.string()) }),
    model: z.string(),
    usage: UsageSchema,
  })
  .openapi("SourceDraftResult");
export type SourceDraftResponse = SourceDraftResult;

/** POST /api/sources/:sourceId/draft (admin): the model drafts notes for the source from its catalog. */
export function registerSourceDraftRoute(app: ApiRouter, deps: AiRouteDeps): void {
  const { auth } = deps;
  const ofSource = workspaceOfSource(deps.pool);
  const route = createRoute({
    method: "post",
    path: "/api/sources/{sourceId}/draft",
    tags: ["ai"],
    summary: "Draft source notes from its catalog for review (admin)",
    middleware: [auth.requireSession, auth.rejectCrossSite, auth.requireRole("admin", ofSource), limitBody(16 * 1024)] as const,
    // The body is optional: no body (and no JSON content type) means no instructions.
    request: {
      params: SourceParamsSchema,
      body: { required: false, content: { "application/json": { schema: SourceDraftRequestSchema } } },
    },
    responses: {
      200: { description: "The draft", content: { "application/json": { schema: SourceDraftResultSchema } } },
      ...problems(400, 401, 403, 404, 422, 502, 504),
      ...MODEL_CALL_PROBLEMS,
    },
  });
  app.openapi(route, async (c) => {
    const { workspaceId, user } = c.var;
    const body = c.req.valid("json");
    const model = deps.ai.modelDeps();
    const source = await getSourceInWorkspace(deps.pool, workspaceId, c.req.valid("param").sourceId);
    if (!source) throw new AppError("not_found", "Not found.");
    const result: SourceDraftResponse = await draftSourceNotes(
      { model, generationLog: deps.ai.generationLog, config: deps.config, now: deps.now },
      { workspaceId, userSub: user.sub, source, instructions: body.instructions },
    );
    c.header("cache-control", "no-store");
    return c.json(result, 200);
  });
}
