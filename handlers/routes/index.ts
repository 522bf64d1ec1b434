import type { Hono } from "hono";
import type pg from "pg";
import type { Auth } from "../../lib/auth/create-auth.ts";
import { refreshCatalog as refreshSourceCatalog } from "../../lib/catalog-refresh/refresh.ts";
import type { Config } from "../../lib/config/parse.ts";
import type { Logger } from "../../lib/log/logger.ts";
import type { Metrics } from "../../lib/metrics/metrics.ts";
import type { BuildInfo } from "../../lib/probes/health.ts";
import { createQueryRunner, type QueryRunner } from "../../lib/query/runner.ts";
import { createSecretResolverFromConfig } from "../../lib/secrets/index.ts";
import type { Source } from "../../lib/sources/index.ts";
import { createGuard, type Guard, guardOptionsFromConfig, intervalFor } from "../../lib/sql-guard/index.ts";
import { createApiRouter, registerOpenApiDocument } from "../openapi.ts";
import { registerDashboardRoutes } from "./dashboards/routes.ts";
import { registerSessionRoutes } from "./auth/routes.ts";
import { registerLimitRoutes } from "./limits/routes.ts";
import { documentOtherRoutes } from "./openapi/routes.ts";
import { registerQueryPreviewRoutes } from "./query-preview/routes.ts";
import { registerSourceRoutes } from "./sources/routes.ts";
import { registerWorkspaceRoutes } from "./workspaces/routes.ts";

export interface ApiDeps {
  config: Config;
  pool: pg.Pool;
  metrics: Metrics;
  build: BuildInfo;
  log: Logger;
  now: () => number;
  /** Shared with the AI routes when given; built from SQL_GUARD_EXTRA_FUNCTIONS / SQL_MAX_LENGTH otherwise. */
  guard?: Guard;
  /** Built from config (source pools, secrets) when omitted; tests pass their own to close it. */
  queryRunner?: QueryRunner;
  /** Catalog refresh; lib/catalog's refresh through the query runner when omitted. */
  refreshCatalog?: (source: Source) => Promise<Source>;
}

/** What registerApiRoutes built, for callers that share them (AI routes) or close them (tests). */
export interface ApiServices {
  guard: Guard;
  queryRunner: QueryRunner;
}

/**
 * Mounts the documented JSON API (workspaces, dashboards, sources, query preview, limits) and its OpenAPI
 * document at /api/openapi.json. Every route here is declared with zod schemas through
 * @hono/zod-openapi, so the document is generated from the same schemas that validate requests.
 */
export function registerApiRoutes(app: Hono<any>, deps: ApiDeps, auth: Auth): ApiServices {
  const { config, pool } = deps;
  const guard = deps.guard ?? createGuard(guardOptionsFromConfig(config));
  const queryRunner =
    deps.queryRunner ??
    createQueryRunner({
      config,
      metrics: deps.metrics,
      guard,
      intervalFor,
      secrets: createSecretResolverFromConfig(config),
    });
  const refreshCatalog = deps.refreshCatalog ?? ((source: Source) => refreshSourceCatalog({ db: pool, runner: queryRunner, now: deps.now }, source));

  const api = createApiRouter();
  registerWorkspaceRoutes(api, { config, pool, auth, runner: queryRunner });
  registerDashboardRoutes(api, { config, pool, auth, guard, metrics: deps.metrics });
  registerSourceRoutes(api, { config, pool, auth, runner: queryRunner, refreshCatalog, now: deps.now });
  registerQueryPreviewRoutes(api, { pool, auth, runner: queryRunner, now: deps.now });
  registerLimitRoutes(api, { config, pool, auth });
  registerSessionRoutes(api, { auth, log: deps.log, now: deps.now });
  documentOtherRoutes(api.openAPIRegistry);
  registerOpenApiDocument(api, { version: deps.build.version, cookieName: auth.cookieName });
  app.route("/", api);
  return { guard, queryRunner };
}
