import type { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { type ChatEvent, ChatRequestSchema, startChat } from "../../lib/ai/chat.ts";
import type { ChatMessage } from "../../lib/ai/chat-store.ts";
import { saveDashboard } from "../../lib/dashboards/save.ts";
import { dashboardWorkspaceId, getDashboard } from "../../lib/dashboards/store.ts";
import { AppError } from "../../lib/http/errors.ts";
import { type AiEnv, type AiRouteDeps, countingGuard, jsonBody, limitBody } from "./ai-shared.ts";

/** Response of GET /api/dashboards/:dashboardId/chat: my history on this dashboard, oldest first. */
export interface ChatHistoryResponse {
  messages: ChatMessage[];
  maxMessages: number;
  retentionDays: number;
  model: string | null;
}

/** Body of POST /api/dashboards/:dashboardId/chat/apply. */
export const ChatApplySchema = z.object({
  messageId: z.string().regex(/^\d{1,18}$/),
  /** Defaults to the version the proposal was written against; a dashboard changed since gets 409. */
  version: z.number().int().positive().optional(),
});

/**
 * Dashboard chat, per person per dashboard: GET history, POST a question (answer streamed as SSE),
 * DELETE my history (all viewer), and POST …/chat/apply (editor) to save a proposed change.
 */
export function registerChat(app: Hono<any>, deps: AiRouteDeps): void {
  const { auth, pool, config } = deps;
  const ofDashboard = async (c: { req: { param(name: string): string | undefined } }) => {
    const id = c.req.param("dashboardId");
    return id ? dashboardWorkspaceId(pool, id) : null;
  };
  const guard = countingGuard(deps.guard, deps.metrics);
  const thread = (c: { var: unknown; req: { param(name: string): string } }) => {
    const v = c.var as AiEnv["Variables"];
    return { workspaceId: v.workspaceId, dashboardId: c.req.param("dashboardId"), userSub: v.user.sub };
  };

  app.get("/api/dashboards/:dashboardId/chat", auth.requireSession, auth.requireRole("viewer", ofDashboard), async (c) => {
    const body: ChatHistoryResponse = {
      messages: await deps.chats.history(thread(c)),
      maxMessages: config.CHAT_HISTORY_MAX_MESSAGES,
      retentionDays: config.CHAT_HISTORY_RETENTION_DAYS,
      model: deps.ai.provider.ok ? deps.ai.provider.provider.modelId : null,
    };
    c.header("cache-control", "no-store");
    return c.json(body);
  });

  app.delete("/api/dashboards/:dashboardId/chat", auth.requireSession, auth.rejectCrossSite, auth.requireRole("viewer", ofDashboard), async (c) => {
    const deleted = await deps.chats.clear(thread(c));
    return c.json({ deleted });
  });

  app.post(
    "/api/dashboards/:dashboardId/chat",
    auth.requireSession,
    auth.rejectCrossSite,
    auth.requireRole("viewer", ofDashboard),
    limitBody(512 * 1024),
    async (c) => {
      const t = thread(c);
      const request = await jsonBody(c, ChatRequestSchema);
      const model = deps.ai.modelDeps();
      const dashboard = await getDashboard(pool, t.dashboardId);
      if (!dashboard || dashboard.workspaceId !== t.workspaceId) throw new AppError("not_found", "Not found.");
      // Admission, history and the first token happen before any byte is sent, so a 429, 502 or
      // 504 is still a plain problem+json response; later failures arrive as an `error` event.
      const events = await startChat(
        { model, pool, guard, chats: deps.chats, generationLog: deps.ai.generationLog, config },
        { workspaceId: t.workspaceId, userSub: t.userSub, dashboard, request, signal: c.req.raw.signal },
      );
      c.header("cache-control", "no-cache, no-transform");
      c.header("x-accel-buffering", "no");
      return streamSSE(
        c,
        async (stream) => {
          stream.onAbort(() => {
            void events.return(undefined);
          });
          for await (const e of events) {
            await stream.writeSSE({ event: e.type, data: JSON.stringify(eventData(e)) });
          }
        },
        async (err, stream) => {
          // Headers are gone already: the failure becomes the stream's last event (details in the log only).
          deps.ai.log.error("chat stream failed", { error: err instanceof Error ? err.name : "unknown" });
          await stream.writeSSE({ event: "error", data: JSON.stringify({ code: "internal", detail: "The answer could not be completed." }) });
        },
      );
    },
  );

  app.post(
    "/api/dashboards/:dashboardId/chat/apply",
    auth.requireSession,
    auth.rejectCrossSite,
    auth.requireRole("editor", ofDashboard),
    limitBody(16 * 1024),
    async (c) => {
      const t = thread(c);
      const body = await jsonBody(c, ChatApplySchema);
      const proposal = await deps.chats.proposal(t, body.messageId);
      if (!proposal) throw new AppError("not_found", "No proposed change with that message id in your chat on this dashboard.");
      // The same save as PUT /api/dashboards/:id: spec validation, the guard on every panel, versioned update.
      const saved = await saveDashboard(
        { pool, guard: deps.guard, minRefreshIntervalMs: config.MIN_REFRESH_INTERVAL_MS },
        {
          workspaceId: t.workspaceId,
          userSub: t.userSub,
          spec: proposal.spec,
          dashboardId: t.dashboardId,
          baseVersion: body.version ?? proposal.baseVersion,
        },
      );
      return c.json({
        id: saved.id,
        workspaceId: saved.workspaceId,
        version: saved.version,
        spec: saved.spec,
        updatedBy: saved.updatedBy,
        updatedAt: saved.updatedAt.toISOString(),
      });
    },
  );
}

function eventData(e: ChatEvent): unknown {
  const { type: _type, ...rest } = e;
  return rest;
}
