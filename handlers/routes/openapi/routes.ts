import { createRoute, z } from "@hono/zod-openapi";
import { type ApiRouter, OPENAPI_PATH, problems, problemsOnly } from "../../openapi.ts";
import { DashboardParamsSchema } from "../dashboards/routes.ts";

// Routes another module serves, declared here so /api/openapi.json covers the whole /api surface: the probes
// (lib/probes/, mounted by both processes) and the stream host's two routes (same origin, routed by path:
// stream-host/stream-route.ts and lib/metrics-gate/route.ts). Their handlers do not run on this router, so
// these declarations only describe them; handlers/openapi.test.ts checks every served route is described
// and every described route is served.

/** GET /api/health: the liveness record. */
export const HealthSchema = z
  .object({
    status: z.literal("ok"),
    version: z.string().openapi({ description: "The build's version, or APP_VERSION" }),
    commit: z.string().openapi({ description: "GIT_COMMIT, or `unknown`" }),
  })
  .openapi("Health");

const CheckSchema = z.object({
  status: z.enum(["ok", "failed"]),
  reason: z
    .string()
    .optional()
    .openapi({ description: "On a failed check: an error code (ECONNREFUSED, 28P01, TIMEOUT, http_503) or the name of an unset variable" }),
});

/** GET /api/ready: the readiness record. */
export const ReadinessSchema = z
  .object({
    status: z.enum(["ready", "degraded", "not_ready", "draining"]),
    checks: z.object({ database: CheckSchema, identityProvider: CheckSchema, aiProvider: CheckSchema }),
  })
  .openapi("Readiness");

const json = (schema: z.ZodType, description: string) => ({ description, content: { "application/json": { schema } } });

const health = createRoute({
  method: "get",
  path: "/api/health",
  tags: ["probes"],
  summary: "Liveness (no dependency is touched)",
  security: [],
  responses: { 200: json(HealthSchema, "Alive, with version and commit") },
});

const ready = createRoute({
  method: "get",
  path: "/api/ready",
  tags: ["probes"],
  summary: "Readiness: config store, identity provider, AI configuration",
  security: [],
  responses: {
    200: json(ReadinessSchema, "ready or degraded"),
    503: json(ReadinessSchema, "not_ready (the config store does not answer) or draining"),
  },
});

const stream = createRoute({
  method: "get",
  path: "/api/dashboards/{dashboardId}/stream",
  tags: ["stream-host"],
  summary: "Live panel results (viewer): snapshot, panel, panel-delta, dashboard and view events, heartbeats and the terminal frames",
  request: {
    params: DashboardParamsSchema,
    // The view, in Grafana's URL names; absent parameters are the saved defaults, other parameters are ignored.
    query: z.object({
      from: z
        .string()
        .max(64)
        .optional()
        .openapi({ description: "Range start: now, now-<n><s|m|h|d|w> or an ISO-8601 instant", example: "now-6h" }),
      to: z.string().max(64).optional().openapi({
        description:
          "Range end, as from; a range ending in the past is queried once and not polled, one ending at an instant still ahead polls live until then (event: view says when it stops)",
        example: "now",
      }),
      refresh: z
        .string()
        .max(64)
        .optional()
        .openapi({ description: "Cadence as a duration (5s, 1m, 1h, 1d); below MIN_REFRESH_INTERVAL_MS is a 400", example: "30s" }),
      "var-name": z.array(z.string().max(1000)).optional().openapi({
        description:
          "var-<name>: values of a dashboard variable, repeated for several (var-service=checkout&var-service=search), $__all for All; each must be one of the variable's options, else 400 naming var-<name>",
      }),
    }),
  },
  responses: {
    200: {
      description:
        "Server-sent events (docs/stream-host.md); while draining, a 200 carrying only the terminal `draining` frame. Headers Cache-Control: no-cache, no-transform and X-Accel-Buffering: no",
      content: { "text/event-stream": { schema: z.string() } },
    },
    // 503 config_store_unavailable: the session's workspace role could not be read within READINESS_CHECK_TIMEOUT_MS.
    // 400 validation_failed names the bad view parameter (var-NAME for a value outside the variable's options);
    // 429 too_many_views past MAX_VIEWS_PER_DASHBOARD, with Retry-After. A query variable whose options cannot be
    // read answers that failure, naming the variable: 422 guard_rejected, 502 source_unavailable, 504 query_timeout.
    ...problems(400, 401, 404, 422, 429, 502, 504),
  },
});

const metrics = createRoute({
  method: "get",
  path: "/api/metrics",
  tags: ["stream-host"],
  summary: "Prometheus metrics, behind METRICS_TOKEN (Bearer) and METRICS_ALLOWED_CIDRS",
  security: [{ metricsToken: [] }],
  // A scrape is in-memory state only: it never reads the config store.
  responses: {
    200: { description: "Prometheus text format (prom-client's content type)", content: { "text/plain": { schema: z.string() } } },
    ...problemsOnly(401, 403, 404),
  },
});

/**
 * Serves the OpenAPI 3.1 document at /api/openapi.json, generated from the same zod schemas that
 * validate requests (every route of `app` is declared with createRoute), so the document cannot drift
 * from the code; plus the declarations of the routes served elsewhere (above).
 */
export function registerOpenApiRoutes(app: ApiRouter, opts: { version: string; cookieName: string }): void {
  const registry = app.openAPIRegistry;
  registry.registerComponent("securitySchemes", "session", {
    type: "apiKey",
    in: "cookie",
    name: opts.cookieName,
    description: "The session cookie set by /api/auth/callback (or minted with `npm run session:mint`).",
  });
  registry.registerComponent("securitySchemes", "apiToken", {
    type: "http",
    scheme: "bearer",
    description:
      "A workspace API token (`pbt_…`, POST /api/workspaces/{workspaceId}/tokens): its role in its workspace. A request that carries one is judged by it alone.",
  });
  registry.registerComponent("securitySchemes", "metricsToken", { type: "http", scheme: "bearer" });
  for (const route of [health, ready, stream, metrics]) registry.registerPath(route);

  let cached: ReturnType<ApiRouter["getOpenAPI31Document"]> | undefined;
  const document = createRoute({
    method: "get",
    path: OPENAPI_PATH,
    tags: ["meta"],
    summary: "This document (public)",
    security: [],
    responses: { 200: json(z.looseObject({ openapi: z.string() }), "OpenAPI 3.1") },
  });
  app.openapi(document, (c) => {
    cached ??= app.getOpenAPI31Document({
      openapi: "3.1.0",
      info: {
        title: "Pulseboard API",
        version: opts.version,
        description:
          "Live dashboards over guarded SQL. Errors are application/problem+json with a stable `code`; every response carries X-Request-Id. Mutating requests from another site are refused (requests with an API token are not browser requests and are exempt).",
      },
      security: [{ session: [] }, { apiToken: [] }],
    });
    return c.json(cached, 200);
  });
}
