import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import { z } from "@hono/zod-openapi";
import { ChatRequestSchema } from "../../../lib/ai/chat.ts";
import { problems, problemsOnly } from "../../openapi.ts";
import { GenerateRequestSchema } from "../ai/generate.ts";
import { SourceDraftRequestSchema } from "../ai/source-draft.ts";
import { ChatApplySchema } from "../chat/routes.ts";
import { GenerationLogQuerySchema } from "../generation-log/routes.ts";

// Routes written as plain Hono handlers elsewhere (auth, me, AI, probes) and the stream
// host's routes, described here so /api/openapi.json covers the whole HTTP surface. Request schemas
// are the very zod objects those handlers validate with; response schemas are checked against real
// responses in handlers/openapi.test.ts, and a test fails when a route is added without a description.

const Role = z.enum(["viewer", "editor", "admin"]);

/** GET /api/me (handlers/routes/me/routes.ts MeResponse). */
export const MeSchema = z
  .object({
    sub: z.string(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    groups: z.array(z.string()),
    workspaces: z.array(z.object({ id: z.string(), name: z.string(), role: Role })),
    accountUrl: z.string().nullable().openapi({ description: "OIDC_ACCOUNT_URL, or null to hide the link" }),
  })
  .openapi("Me");

/** One workspace as its member sees it (declared with the routes in handlers/routes/workspaces/routes.ts). */
export { WorkspaceViewSchema } from "../workspaces/routes.ts";

const Usage = z.object({ input: z.number().int(), output: z.number().int() });

const GenerateResponseSchema = z
  .looseObject({
    spec: z.looseObject({}).openapi({ description: "A DashboardSpec for review; save it with POST …/dashboards" }),
    dropped: z.array(z.object({ panelId: z.string(), title: z.string(), sql: z.string(), reason: z.string(), message: z.string() })),
    repaired: z.array(z.string()),
    warnings: z.array(z.string()),
    model: z.string(),
    usage: Usage,
  })
  .openapi("GenerateResult");

const SourceDraftResponseSchema = z
  .looseObject({ draft: z.looseObject({}), notes: z.string(), warnings: z.array(z.string()), model: z.string(), usage: Usage })
  .openapi("SourceDraftResult");

const ChatMessageSchema = z
  .object({
    id: z.string(),
    role: z.enum(["user", "assistant"]),
    content: z.string(),
    proposal: z.looseObject({}).nullable(),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("ChatMessage");

const json = (schema: z.ZodType, description: string) => ({ description, content: { "application/json": { schema } } });
const sse = (description: string) => ({ description, content: { "text/event-stream": { schema: z.string() } } });
const wsParam = z.object({ workspaceId: z.string().openapi({ param: { name: "workspaceId", in: "path" } }) });
const dbParam = z.object({ dashboardId: z.string().openapi({ param: { name: "dashboardId", in: "path" } }) });
const srcParam = z.object({ sourceId: z.string().openapi({ param: { name: "sourceId", in: "path" } }) });
const body = (schema: z.ZodType) => ({ required: true, content: { "application/json": { schema } } });
/** The AI routes' answer when no model provider is configured (AI_PROVIDER, AI_MODEL and its key). */
const aiNotConfigured = () =>
  json(
    z.looseObject({ code: z.string() }),
    "ai_not_configured: no model provider is configured; or config_store_unavailable (with Retry-After): the configuration store is down or not answering",
  );

/** Registers descriptions of the routes that are not declared through @hono/zod-openapi. */
export function documentOtherRoutes(registry: OpenAPIRegistry): void {
  const probe = z.looseObject({ status: z.string() });
  registry.registerPath({ method: "get", path: "/api/health", tags: ["probes"], summary: "Liveness (no dependency is touched)", security: [], responses: { 200: json(probe, "Alive, with version and commit") } });
  registry.registerPath({
    method: "get",
    path: "/api/ready",
    tags: ["probes"],
    summary: "Readiness: config store, identity provider, AI configuration",
    security: [],
    responses: { 200: json(probe, "ready or degraded"), 503: json(probe, "not_ready or draining") },
  });

  registry.registerPath({
    method: "get",
    path: "/api/auth/login",
    tags: ["auth"],
    summary: "Start an OIDC login (authorization code, PKCE, state, nonce)",
    security: [],
    request: { query: z.object({ returnTo: z.string().optional().openapi({ param: { name: "returnTo", in: "query" } }) }) },
    responses: { 302: { description: "Redirect to the identity provider" }, ...problems(400), 503: json(z.looseObject({ code: z.string() }), "identity_provider_unavailable") },
  });
  registry.registerPath({
    method: "get",
    path: "/api/auth/callback",
    tags: ["auth"],
    summary: "OIDC callback: verifies the ID token and sets the session cookie",
    security: [],
    responses: { 302: { description: "Signed in; redirect to returnTo" }, ...problems(400, 401), 503: json(z.looseObject({ code: z.string() }), "identity_provider_unavailable") },
  });
  registry.registerPath({
    method: "post",
    path: "/api/auth/logout",
    tags: ["auth"],
    summary: "Sign out: end this session on every instance (revoked in the config store) and clear the cookie",
    security: [],
    responses: {
      204: { description: "Signed out" },
      303: { description: "Signed out (HTML form post)" },
      ...problems(403),
      503: json(z.looseObject({ code: z.string() }), "config_store_unavailable: the cookie is cleared but the session could not be ended on the server"),
    },
  });
  registry.registerPath({ method: "get", path: "/api/me", tags: ["auth"], summary: "The signed-in user and their workspaces", responses: { 200: json(MeSchema, "Me"), ...problems(401) } });

  registry.registerPath({
    method: "post",
    path: "/api/workspaces/{workspaceId}/generate",
    tags: ["ai"],
    summary: "Generate a dashboard spec from a prompt and a source's catalog (editor); every panel is guarded",
    request: { params: wsParam, body: body(GenerateRequestSchema) },
    responses: {
      200: json(GenerateResponseSchema, "A spec to review"),
      ...problems(400, 401, 403, 404, 422, 502, 504),
      429: json(z.looseObject({ code: z.string() }), "rate_limited or over_budget, with Retry-After"),
      503: aiNotConfigured(),
    },
  });
  registry.registerPath({
    method: "post",
    path: "/api/sources/{sourceId}/draft",
    tags: ["ai"],
    summary: "Draft source notes from its catalog for review (editor)",
    request: { params: srcParam, body: { required: false, content: { "application/json": { schema: SourceDraftRequestSchema } } } },
    responses: {
      200: json(SourceDraftResponseSchema, "The draft"),
      ...problems(400, 401, 403, 404, 422, 502, 504),
      429: json(z.looseObject({ code: z.string() }), "rate_limited or over_budget"),
      503: aiNotConfigured(),
    },
  });
  registry.registerPath({
    method: "get",
    path: "/api/dashboards/{dashboardId}/chat",
    tags: ["ai"],
    summary: "My chat history on a dashboard (viewer)",
    request: { params: dbParam },
    responses: {
      200: json(z.object({ messages: z.array(ChatMessageSchema), maxMessages: z.number().int(), retentionDays: z.number().int(), model: z.string().nullable() }), "Oldest first"),
      ...problems(401, 404),
    },
  });
  registry.registerPath({
    method: "post",
    path: "/api/dashboards/{dashboardId}/chat",
    tags: ["ai"],
    summary: "Ask about a dashboard (viewer); the answer streams as server-sent events",
    request: { params: dbParam, body: body(ChatRequestSchema) },
    responses: {
      200: sse("delta / proposal / done / error events"),
      // Admission and the first token come before the stream starts, so these are still plain problems.
      ...problems(400, 401, 404, 502, 504),
      429: json(z.looseObject({ code: z.string() }), "rate_limited or over_budget"),
      503: aiNotConfigured(),
    },
  });
  registry.registerPath({
    method: "delete",
    path: "/api/dashboards/{dashboardId}/chat",
    tags: ["ai"],
    summary: "Delete my chat history on a dashboard (viewer)",
    request: { params: dbParam },
    responses: { 204: { description: "Deleted" }, ...problems(401, 403, 404) },
  });
  registry.registerPath({
    method: "post",
    path: "/api/dashboards/{dashboardId}/chat/apply",
    tags: ["ai"],
    summary: "Save a change the chat proposed (editor), through the same guarded, versioned save as PUT",
    request: { params: dbParam, body: body(ChatApplySchema) },
    responses: { 200: json(z.looseObject({ id: z.string(), version: z.number().int() }), "Saved"), ...problems(400, 401, 403, 404, 409, 422) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/workspaces/{workspaceId}/generation-log",
    tags: ["ai"],
    summary: "The workspace's redacted AI generation log, newest first (admin)",
    request: { params: wsParam, query: GenerationLogQuerySchema },
    responses: { 200: json(z.object({ entries: z.array(z.looseObject({ id: z.string() })), retentionDays: z.number().int() }), "Log entries"), ...problems(400, 401, 403, 404) },
  });

  // Served by the stream host (same origin, routed by path).
  registry.registerPath({
    method: "get",
    path: "/api/dashboards/{dashboardId}/stream",
    tags: ["stream-host"],
    summary: "Live panel results (viewer): snapshot, panel, dashboard events, heartbeats and the drain frame",
    request: { params: dbParam },
    // 503 config_store_unavailable: the session's workspace role could not be read within READINESS_CHECK_TIMEOUT_MS.
    responses: { 200: sse("Server-sent events"), ...problems(401, 404) },
  });
  registry.registerPath({
    method: "get",
    path: "/api/metrics",
    tags: ["stream-host"],
    summary: "Prometheus metrics, behind METRICS_TOKEN (Bearer) and METRICS_ALLOWED_CIDRS",
    security: [{ metricsToken: [] }],
    // A scrape is in-memory state only: it never reads the config store.
    responses: { 200: { description: "Prometheus text format", content: { "text/plain": { schema: z.string() } } }, ...problemsOnly(401, 403) },
  });
  registry.registerComponent("securitySchemes", "metricsToken", { type: "http", scheme: "bearer" });
}
