import type { Env, Hono } from "hono";
import { createChatStore } from "../../lib/ai/chat-store.ts";
import type { Auth } from "../../lib/auth/create-auth.ts";
import { refreshCatalog as refreshSourceCatalog } from "../../lib/catalog-refresh/refresh.ts";
import type { OidcLogin } from "../../lib/oidc/login.ts";
import type { AppServices, ServiceDeps } from "../../lib/service/deps.ts";
import { type VariableOptionsCache, createVariableOptionsCache } from "../../lib/dashboards/variables.ts";
import { type Source, getSourceInWorkspace } from "../../lib/sources/index.ts";
import { type ApiRouter, createApiRouter } from "../openapi.ts";
import { registerAiRoutes } from "./ai/routes.ts";
import { auditChanges } from "./audit/record.ts";
import { registerAuditRoutes } from "./audit/routes.ts";
import type { AiRouteDeps } from "./ai/shared.ts";
import { registerAuthRoutes } from "./auth/routes.ts";
import { registerChatRoutes } from "./chat/routes.ts";
import { registerDashboardVariableRoutes } from "./dashboard-variables/routes.ts";
import { registerDashboardVersionRoutes } from "./dashboard-versions/routes.ts";
import { registerDashboardRoutes } from "./dashboards/routes.ts";
import { registerGenerationLogRoutes } from "./generation-log/routes.ts";
import { registerLimitRoutes } from "./limits/routes.ts";
import { registerMeRoutes } from "./me/routes.ts";
import { registerOpenApiRoutes } from "./openapi/routes.ts";
import { registerQueryPreviewRoutes } from "./query-preview/routes.ts";
import { registerSessionRoutes } from "./sessions/routes.ts";
import { registerSourceRoutes } from "./sources/routes.ts";
import { registerSqlCheckRoutes } from "./sql-check/routes.ts";
import { registerTokenRoutes } from "./tokens/routes.ts";
import { registerWorkspaceRoutes } from "./workspaces/routes.ts";

/** What the /api routes need: the process's service deps and services (lib/service), built once by the entry point. */
export type RouteDeps = Pick<ServiceDeps, "config" | "pool" | "metrics" | "log" | "now" | "build" | "readiness"> &
  AppServices & {
    /** Catalog refresh; lib/catalog-refresh through the query runner unless a test passes its own. */
    refreshCatalog?: (source: Source) => Promise<Source>;
    /** Query variables' options, one cache per process; built on the runner when omitted (npm start shares the stream host's). */
    variableOptions?: VariableOptionsCache;
  };

/**
 * Mounts every /api route of the handlers app (one folder per resource under handlers/routes/) and the
 * OpenAPI document at /api/openapi.json. Every route is declared with createRoute and zod schemas on one
 * router, so the document is generated from the same schemas that validate requests.
 */
export function registerRoutes<E extends Env>(app: Hono<E>, deps: RouteDeps, auth: Auth, oidc: OidcLogin | null): void {
  const { config, pool, queryRunner: runner, now } = deps;
  const refreshCatalog = deps.refreshCatalog ?? ((source: Source) => refreshSourceCatalog({ db: pool, runner, now }, source));

  const api = createApiRouter();
  // Before every route: each successful change is recorded in the audit trail (routes/audit/record.ts).
  const retention = { retentionDays: config.AUDIT_RETENTION_DAYS, now };
  api.use(auditChanges({ pool, retention, log: deps.log }));
  registerAuthRoutes(api, deps, auth, oidc);
  registerSessionRoutes(api, { config, auth, log: deps.log, now });
  registerMeRoutes(api, { config, pool, auth });
  registerWorkspaceRoutes(api, { config, pool, auth, runner });
  registerDashboardRoutes(api, { config, pool, auth, guard: deps.guard, metrics: deps.metrics, now });
  registerDashboardVersionRoutes(api, { config, pool, auth, guard: deps.guard, metrics: deps.metrics, now });
  // One cache per process: every viewer shares a query variable's options for the dashboard's cadence.
  const variableOptions =
    deps.variableOptions ??
    createVariableOptionsCache({
      runner,
      getSource: (workspaceId, sourceId) => getSourceInWorkspace(pool, workspaceId, sourceId),
      config,
      now,
    });
  registerDashboardVariableRoutes(api, { pool, auth, variableOptions });
  registerSourceRoutes(api, { config, pool, auth, runner, refreshCatalog, now });
  registerQueryPreviewRoutes(api, { pool, auth, runner, now });
  registerSqlCheckRoutes(api, { pool, auth, guard: deps.guard });
  registerLimitRoutes(api, { config, pool, auth });
  registerTokenRoutes(api, { pool, auth, now });
  registerAuditRoutes(api, { pool, auth, retention });
  registerAiAreaRoutes(api, aiRouteDeps(deps, auth));
  registerOpenApiRoutes(api, { version: deps.build.version, cookieName: auth.cookieName });
  app.route("/", api);
}

/** The deps of the AI area's routes, with the chat store built once per app. */
export function aiRouteDeps(deps: Pick<RouteDeps, "config" | "pool" | "metrics" | "now" | "guard" | "ai">, auth: Auth): AiRouteDeps {
  const { config } = deps;
  return {
    config,
    pool: deps.pool,
    metrics: deps.metrics,
    now: deps.now,
    auth,
    guard: deps.guard,
    ai: deps.ai,
    chats: createChatStore({
      pool: deps.pool,
      maxMessages: config.CHAT_HISTORY_MAX_MESSAGES,
      retentionDays: config.CHAT_HISTORY_RETENTION_DAYS,
      now: deps.now,
    }),
  };
}

/** The AI area: generate and source draft (routes/ai/), dashboard chat (routes/chat/) and the generation log. */
export function registerAiAreaRoutes(api: ApiRouter, deps: AiRouteDeps): void {
  registerAiRoutes(api, deps);
  registerChatRoutes(api, deps);
  registerGenerationLogRoutes(api, deps);
}
