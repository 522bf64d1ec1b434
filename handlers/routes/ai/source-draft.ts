import type { Hono } from "hono";
import { z } from "zod";
import { type SourceDraftResult, draftSourceNotes } from "../../../lib/ai/source-draft.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { getSource, getSourceInWorkspace } from "../../../lib/sources/index.ts";
import { type AiEnv, type AiRouteDeps, jsonBody, limitBody } from "./shared.ts";

/** Body of POST /api/sources/:sourceId/draft (optional). */
export const SourceDraftRequestSchema = z.object({ instructions: z.string().trim().max(2000).optional() });

/** Response: the draft for review; save `notes` (edited or not) with the sources API. */
export type SourceDraftResponse = SourceDraftResult;

/** POST /api/sources/:sourceId/draft (admin): the model drafts notes for the source from its catalog. */
export function registerAiSourceDraft(app: Hono<any>, deps: AiRouteDeps): void {
  const { auth } = deps;
  const ofSource = async (c: { req: { param(name: string): string | undefined } }) => {
    const id = c.req.param("sourceId");
    return id ? ((await getSource(deps.pool, id))?.workspaceId ?? null) : null;
  };
  app.post(
    "/api/sources/:sourceId/draft",
    auth.requireSession,
    auth.rejectCrossSite,
    auth.requireRole("admin", ofSource),
    limitBody(16 * 1024),
    async (c) => {
      const { workspaceId, user } = c.var as AiEnv["Variables"];
      // The body is optional: no body (or no JSON content type) means no instructions.
      const hasBody = (c.req.header("content-type") ?? "").includes("json");
      const body = hasBody ? await jsonBody(c, SourceDraftRequestSchema) : {};
      const model = deps.ai.modelDeps();
      const source = await getSourceInWorkspace(deps.pool, workspaceId, c.req.param("sourceId"));
      if (!source) throw new AppError("not_found", "Not found.");
      const result: SourceDraftResponse = await draftSourceNotes(
        { model, generationLog: deps.ai.generationLog, config: deps.config, now: deps.now },
        { workspaceId, userSub: user.sub, source, instructions: body.instructions },
      );
      c.header("cache-control", "no-store");
      return c.json(result);
    },
  );
}
