import type { Hono } from "hono";
import { z } from "zod";
import { type ChatEvent, ChatRequestSchema, startChat } from "../../../lib/ai/chat.ts";
import type { ChatMessage } from "../../../lib/ai/chat-store.ts";
import { saveDashboard } from "../../../lib/dashboards/save.ts";
import { dashboardWorkspaceId, getDashboard } from "../../../lib/dashboards/store.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { MAX_PG_INTEGER } from "../../../lib/http/input.ts";
import { countingGuard } from "../../../lib/sql-guard/counting.ts";
import { type AiEnv, type AiRouteDeps, jsonBody, limitBody } from "../ai/shared.ts";

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
  version: z.number().int().positive().max(MAX_PG_INTEGER).optional(),
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
      return sseResponse(events, c.req.raw.signal, (err) => {
        deps.ai.log.error("chat stream failed", { error: err instanceof Error ? err.name : "unknown" });
      });
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

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
};

/**
 * Writes chat events as Server-Sent Events (`event: <type>` + `data: <json>`). A browser that goes
 * away cancels the stream, which stops the generator and with it the model call.
 */
function sseResponse(events: AsyncGenerator<ChatEvent>, signal: AbortSignal, onFailure: (err: unknown) => void): Response {
  const encoder = new TextEncoder();
  const frame = (e: ChatEvent | { type: "error"; code: string; detail: string }) =>
    encoder.encode(`event: ${e.type}\ndata: ${JSON.stringify(eventData(e as ChatEvent))}\n\n`);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await events.next();
        if (next.done) controller.close();
        else controller.enqueue(frame(next.value));
      } catch (err) {
        // Headers are gone already: the failure becomes the stream's last event (details in the log only).
        onFailure(err);
        controller.enqueue(frame({ type: "error", code: "internal", detail: "The answer could not be completed." }));
        controller.close();
      }
    },
    async cancel() {
      await events.return(undefined);
    },
  });
  signal.addEventListener("abort", () => void events.return(undefined), { once: true });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}

function eventData(e: ChatEvent): unknown {
  const { type: _type, ...rest } = e;
  return rest;
}
