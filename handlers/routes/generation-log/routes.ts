import type { Hono } from "hono";
import { z } from "zod";
import type { GenerationLogRow } from "../../../lib/ai/generation-log.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import { AppError } from "../../../lib/http/errors.ts";
import type { AiEnv, AiRouteDeps } from "../ai/shared.ts";

/** Query of GET /api/workspaces/:workspaceId/generation-log. */
export const GenerationLogQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(200).optional(),
  before: z.string().regex(/^\d{1,18}$/).optional(),
});

/** Response: newest first; page with `before` = the last id. */
export interface GenerationLogResponse {
  entries: GenerationLogRow[];
  retentionDays: number;
}

/** GET /api/workspaces/:workspaceId/generation-log (admin): the workspace's redacted AI log. */
export function registerGenerationLog(app: Hono<any>, deps: AiRouteDeps): void {
  const { auth } = deps;
  app.get("/api/workspaces/:workspaceId/generation-log", auth.requireSession, auth.requireRole("admin", workspaceFromParam()), async (c) => {
    const { workspaceId } = c.var as AiEnv["Variables"];
    const q = GenerationLogQuerySchema.safeParse(c.req.query());
    if (!q.success) throw new AppError("validation_failed", "limit must be 1..200 and before a row id.");
    const body: GenerationLogResponse = {
      entries: await deps.ai.generationLog.list(workspaceId, q.data),
      retentionDays: deps.config.GENERATION_LOG_RETENTION_DAYS,
    };
    c.header("cache-control", "no-store");
    return c.json(body);
  });
}
