import type { Hono } from "hono";
import { z } from "zod";
import { type GenerationResult, generateDashboard } from "../../../lib/ai/generate.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { getSourceInWorkspace } from "../../../lib/sources/index.ts";
import { countingGuard } from "../../../lib/sql-guard/counting.ts";
import { type AiEnv, type AiRouteDeps, jsonBody, limitBody } from "./shared.ts";

/** Body of POST /api/workspaces/:workspaceId/generate. */
export const GenerateRequestSchema = z.object({
  prompt: z.string().trim().min(1).max(4000),
  sourceId: z.string().min(1).max(64),
});

/** Response: a spec for review (save it with POST /api/workspaces/:workspaceId/dashboards). */
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
export function registerAiGenerate(app: Hono<any>, deps: AiRouteDeps): void {
  const { auth } = deps;
  const guard = countingGuard(deps.guard, deps.metrics);
  app.post(
    "/api/workspaces/:workspaceId/generate",
    auth.requireSession,
    auth.rejectCrossSite,
    auth.requireRole("editor", workspaceFromParam()),
    limitBody(64 * 1024),
    async (c) => {
      const { workspaceId, user } = c.var as AiEnv["Variables"];
      const body = await jsonBody(c, GenerateRequestSchema);
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
      return c.json(result);
    },
  );
}
