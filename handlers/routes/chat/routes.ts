import { createRoute, z } from "@hono/zod-openapi";
import { type ChatEvent, ChatRequestSchema, startChat } from "../../../lib/ai/chat.ts";
import { parseDashboardSpec, saveDashboard } from "../../../lib/dashboards/save.ts";
import { dashboardWorkspaceId, getDashboard } from "../../../lib/dashboards/store.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody, MAX_PG_INTEGER } from "../../../lib/http/input.ts";
import { countingGuard } from "../../../lib/sql-guard/counting.ts";
import { type ApiEnv, type ApiRouter, problems } from "../../openapi.ts";
import { type AiRouteDeps, MODEL_CALL_PROBLEMS } from "../ai/shared.ts";
import { DashboardParamsSchema } from "../dashboards/routes.ts";

export { ChatRequestSchema } from "../../../lib/ai/chat.ts";

const ChatMessageSchema = z
  .object({
    id: z.string(),
    role: z.enum(["user", "assistant"]),
    content: z.string(),
    proposal: z
      .object({
        spec: z.looseObject({}).openapi({ description: "The proposed DashboardSpec" }),
        baseVersion: z.number().int().openapi({ description: "The dashboard version the proposal was written against" }),
      })
      .nullable(),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("ChatMessage");

/** Response of GET /api/dashboards/:dashboardId/chat: my history on this dashboard, oldest first. */
export const ChatHistorySchema = z
  .object({
    messages: z.array(ChatMessageSchema),
    maxMessages: z.number().int().openapi({ description: "CHAT_HISTORY_MAX_MESSAGES" }),
    retentionDays: z.number().int().openapi({ description: "CHAT_HISTORY_RETENTION_DAYS" }),
    model: z.string().nullable().openapi({ description: "AI_MODEL, or null when no provider is configured" }),
  })
  .openapi("ChatHistory");
export type ChatHistoryResponse = z.infer<typeof ChatHistorySchema>;

/** Body of POST /api/dashboards/:dashboardId/chat/apply. */
export const ChatApplySchema = z.object({
  messageId: z.string().regex(/^\d{1,18}$/),
  /** Defaults to the version the proposal was written against; a dashboard changed since gets 409. */
  version: z.number().int().positive().max(MAX_PG_INTEGER).optional(),
});

/** What POST …/chat/apply answers: the saved dashboard's new version. */
export const ChatAppliedSchema = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    version: z.number().int(),
    spec: z.looseObject({}).openapi({ description: "The saved DashboardSpec" }),
    updatedBy: z.string(),
    updatedAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("ChatApplied");

/**
 * Dashboard chat, per person per dashboard: GET history, POST a question (answer streamed as SSE),
 * DELETE my history (all viewer), and POST …/chat/apply (editor) to save a proposed change.
 */
export function registerChatRoutes(app: ApiRouter, deps: AiRouteDeps): void {
  const { auth, pool, config } = deps;
  const ofDashboard = async (c: { req: { param(name: string): string | undefined } }) => {
    const id = c.req.param("dashboardId");
    return id ? dashboardWorkspaceId(pool, id) : null;
  };
  const guard = countingGuard(deps.guard, deps.metrics);
  const thread = (c: { var: ApiEnv["Variables"] }, dashboardId: string) => ({
    workspaceId: c.var.workspaceId,
    dashboardId,
    userSub: c.var.user.sub,
  });

  const history = createRoute({
    method: "get",
    path: "/api/dashboards/{dashboardId}/chat",
    tags: ["ai"],
    summary: "My chat history on a dashboard (viewer)",
    middleware: [auth.requireSession, auth.requireRole("viewer", ofDashboard)] as const,
    request: { params: DashboardParamsSchema },
    responses: {
      200: { description: "Oldest first", content: { "application/json": { schema: ChatHistorySchema } } },
      ...problems(401, 404),
    },
  });
  app.openapi(history, async (c) => {
    const body: ChatHistoryResponse = {
      messages: await deps.chats.history(thread(c, c.req.valid("param").dashboardId)),
      maxMessages: config.CHAT_HISTORY_MAX_MESSAGES,
      retentionDays: config.CHAT_HISTORY_RETENTION_DAYS,
      model: deps.ai.provider.ok ? deps.ai.provider.provider.modelId : null,
    };
    c.header("cache-control", "no-store");
    return c.json(body, 200);
  });

  const clear = createRoute({
    method: "delete",
    path: "/api/dashboards/{dashboardId}/chat",
    tags: ["ai"],
    summary: "Delete my chat history on a dashboard (viewer)",
    middleware: [auth.requireSession, auth.rejectCrossSite, auth.requireRole("viewer", ofDashboard)] as const,
    request: { params: DashboardParamsSchema },
    responses: {
      200: {
        description: "Deleted",
        content: { "application/json": { schema: z.object({ deleted: z.number().int().openapi({ description: "Messages deleted" }) }) } },
      },
      ...problems(401, 403, 404),
    },
  });
  app.openapi(clear, async (c) => {
    const deleted = await deps.chats.clear(thread(c, c.req.valid("param").dashboardId));
    return c.json({ deleted }, 200);
  });

  const ask = createRoute({
    method: "post",
    path: "/api/dashboards/{dashboardId}/chat",
    tags: ["ai"],
    summary: "Ask about a dashboard (viewer); the answer streams as server-sent events",
    middleware: [auth.requireSession, auth.rejectCrossSite, auth.requireRole("viewer", ofDashboard), limitBody(512 * 1024)] as const,
    request: { params: DashboardParamsSchema, body: { required: true, content: { "application/json": { schema: ChatRequestSchema } } } },
    responses: {
      200: {
        description:
          "`delta`, `proposal`, `proposal_rejected`, `done` and `error` events (docs/ai.md); headers Cache-Control: no-cache, no-transform and X-Accel-Buffering: no",
        content: { "text/event-stream": { schema: z.string() } },
      },
      // Admission and the first token come before the stream starts, so these are still plain problems.
      ...problems(400, 401, 403, 404, 502, 504),
      ...MODEL_CALL_PROBLEMS,
    },
  });
  app.openapi(ask, async (c) => {
    const t = thread(c, c.req.valid("param").dashboardId);
    const request = c.req.valid("json");
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
  });

  const apply = createRoute({
    method: "post",
    path: "/api/dashboards/{dashboardId}/chat/apply",
    tags: ["ai"],
    summary: "Save a change the chat proposed (editor), through the same guarded, versioned save as PUT",
    middleware: [auth.requireSession, auth.rejectCrossSite, auth.requireRole("editor", ofDashboard), limitBody(16 * 1024)] as const,
    request: { params: DashboardParamsSchema, body: { required: true, content: { "application/json": { schema: ChatApplySchema } } } },
    responses: {
      200: { description: "Saved", content: { "application/json": { schema: ChatAppliedSchema } } },
      ...problems(400, 401, 403, 404, 409, 422),
    },
  });
  app.openapi(apply, async (c) => {
    const t = thread(c, c.req.valid("param").dashboardId);
    const body = c.req.valid("json");
    const proposal = await deps.chats.proposal(t, body.messageId);
    if (!proposal) throw new AppError("not_found", "No proposed change with that message id in your chat on this dashboard.");
    // The same save as PUT /api/dashboards/:id: spec validation, the guard on every panel, versioned update.
    const saved = await saveDashboard(
      { pool, guard: deps.guard },
      {
        workspaceId: t.workspaceId,
        userSub: t.userSub,
        // Parsed again under this process's configuration: a stored proposal may predate a raised refresh floor.
        spec: parseDashboardSpec(proposal.spec, config.MIN_REFRESH_INTERVAL_MS),
        dashboardId: t.dashboardId,
        baseVersion: body.version ?? proposal.baseVersion,
      },
    );
    return c.json(
      {
        id: saved.id,
        workspaceId: saved.workspaceId,
        version: saved.version,
        spec: saved.spec,
        updatedBy: saved.updatedBy,
        updatedAt: saved.updatedAt.toISOString(),
      },
      200,
    );
  });
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
