// Test-only: one app over a real config store and a real metrics database, with a session per persona.
import { Registry } from "prom-client";
import type { Hono } from "hono";
import { createSessionTokens } from "../../lib/auth/session.ts";
import { type RoleFixture, seedRoleFixture } from "../../lib/auth/testing/role-table.ts";
import { DEMO_CATALOG } from "../../lib/catalog/testing/demo-catalog.ts";
import type { Catalog } from "../../lib/catalog/types.ts";
import { type Config, parseConfig } from "../../lib/config/parse.ts";
import { createLogger } from "../../lib/log/logger.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";
import type { SourceConnector } from "../../lib/query/pools.ts";
import { type QueryRunner, createQueryRunner } from "../../lib/query/runner.ts";
import { type MetricsFixture, createMetricsFixture } from "../../lib/query/testing/metrics-db.ts";
import { createSecretResolverFromConfig } from "../../lib/secrets/index.ts";
import { type VariableOptionsCache, createVariableOptionsCache } from "../../lib/dashboards/variables.ts";
import {
  type HostLookup,
  type Source,
  createSource,
  getSourceInWorkspace,
  hostPolicyFromConfig,
  saveCatalog,
} from "../../lib/sources/index.ts";
import { type Guard, createGuard, intervalFor, loadGuardParser } from "../../lib/sql-guard/index.ts";
import { createDatabase, createTestConfigStore } from "../../lib/testing/pg.ts";
import { createApp } from "../app.ts";
import { testAppDeps } from "./app-deps.ts";

export const SESSION_SECRET = "api-fixture-secret-api-fixture-secret-0123";
export const ORIGIN = "https://dash.example.com";
/** Small enough that `SELECT body FROM payloads` goes over it. */
export const MAX_RESULT_BYTES = 32_768;

/**
 * The catalog of the fixture's metrics database, as a refresh would store it: http_requests of the one
 * catalog fixture (lib/catalog/testing/demo-catalog.ts), plus payloads, whose rows go over MAX_RESULT_BYTES.
 */
export const FIXTURE_CATALOG: Catalog = {
  tables: [
    DEMO_CATALOG.tables.find((t) => t.name === "http_requests")!,
    {
      schema: "public",
      name: "payloads",
      timeColumn: "ts",
      columns: [
        { name: "ts", type: "timestamp with time zone" },
        { name: "body", type: "text" },
      ],
    },
  ],
};

export interface ApiFixture {
  app: Hono;
  /** The query-variable options cache the app was given, as npm start gives the stream host's to both apps. */
  variableOptions: VariableOptionsCache;
  config: Config;
  pool: import("pg").Pool;
  roles: RoleFixture;
  metrics: MetricsFixture;
  guard: Guard;
  runner: QueryRunner;
  /** The app's Prometheus registry (the service metrics). */
  registry: Registry;
  /** A source of the role fixture's workspace with FIXTURE_CATALOG. */
  source: Source;
  /** A source of the other workspace (same database), for cross-workspace tests. */
  otherSource: Source;
  /** Creates another refreshed source in the workspace. */
  newSource(name?: string, workspaceId?: string): Promise<Source>;
  now: () => number;
  close(): Promise<void>;
}

/**
 * Options: extra environment for parseConfig, the catalog refresh the app should use, the app's clock, and the
 * runner's name resolution and socket factory (tests of the host policy record attempts instead of connecting).
 */
export async function createApiFixture(
  opts: {
    env?: Record<string, string>;
    refreshCatalog?: (source: Source) => Promise<Source>;
    now?: () => number;
    runner?: { lookup?: HostLookup; connector?: SourceConnector };
  } = {},
): Promise<ApiFixture> {
  await loadGuardParser();
  const store = await createTestConfigStore();
  const metrics = await createMetricsFixture((await createDatabase("metrics")).url);
  await metrics.admin(`
    CREATE TABLE http_requests (ts timestamptz NOT NULL, service text NOT NULL, route text NOT NULL, status integer NOT NULL,
      latency_ms double precision NOT NULL);
    INSERT INTO http_requests
      SELECT now() - make_interval(mins => g), 'svc-' || (g % 3), '/r' || (g % 7), CASE WHEN g % 10 = 0 THEN 500 ELSE 200 END, g % 97
        FROM generate_series(1, 600) g;
    CREATE TABLE payloads (ts timestamptz NOT NULL, body text NOT NULL);
    INSERT INTO payloads SELECT now() - make_interval(mins => g), repeat('x', 1000) FROM generate_series(1, 200) g;
    REVOKE ALL ON SCHEMA public FROM PUBLIC;
  `);
  const password = "fixture-reader-pw";
  const reader = await metrics.createRole("pb_api_reader", password, [
    "GRANT USAGE ON SCHEMA public TO %I",
    "GRANT SELECT ON ALL TABLES IN SCHEMA public TO %I",
  ]);
  const { config } = parseConfig({
    DATABASE_URL: store.url,
    SESSION_SECRET,
    PUBLIC_BASE_URL: ORIGIN,
    SOURCE_SECRET_REFS: "METRICS:*",
    // The metrics database shares the loopback test server with the config store: allowed explicitly (the
    // config database itself stays refused).
    SOURCE_ALLOWED_HOSTS: metrics.host,
    MAX_RESULT_BYTES: String(MAX_RESULT_BYTES),
    QUERY_TIMEOUT_SECONDS: "5",
    ...opts.env,
  });
  const now = opts.now ?? (() => Date.now());
  const serviceMetrics = createMetrics(new Registry());
  const guard = createGuard({});
  const runner = createQueryRunner({
    config,
    metrics: serviceMetrics,
    guard,
    intervalFor,
    secrets: createSecretResolverFromConfig(config, { env: { METRICS_USERNAME: reader, METRICS_PASSWORD: password }, aws: null }),
    hostPolicy: opts.runner?.lookup ? hostPolicyFromConfig(config, { lookup: opts.runner.lookup }) : undefined,
    connector: opts.runner?.connector,
  });
  const deps = testAppDeps(config, {
    pool: store.pool,
    log: createLogger({ silent: true }),
    now,
    metrics: serviceMetrics,
    guard,
    queryRunner: runner,
  });
  const variableOptions = createVariableOptionsCache({
    runner,
    getSource: (workspaceId, sourceId) => getSourceInWorkspace(store.pool, workspaceId, sourceId),
    config,
    now,
  });
  const app = createApp({ ...deps, oidc: null, refreshCatalog: opts.refreshCatalog, variableOptions });
  const sessions = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600 });
  const roles = await seedRoleFixture(store.pool, sessions, config.SESSION_COOKIE_NAME);

  async function newSource(name = "metrics", workspaceId = roles.workspace.id): Promise<Source> {
    const s = await createSource(store.pool, workspaceId, {
      name,
      host: metrics.host,
      port: metrics.port,
      database: metrics.database,
      sslmode: "disable",
      secretRef: "METRICS",
    });
    return (await saveCatalog(store.pool, s.id, FIXTURE_CATALOG, new Date(now())))!;
  }

  return {
    app,
    variableOptions,
    config,
    pool: store.pool,
    roles,
    metrics,
    guard,
    runner,
    registry: deps.metrics.registry,
    source: await newSource("metrics"),
    otherSource: await newSource("other metrics", roles.otherWorkspace.id),
    newSource,
    now,
    async close() {
      await runner.closeAll();
      await metrics.close();
      await store.close();
    },
  };
}

/** A JSON request as `cookie` (null: anonymous), same-origin unless headers say otherwise. */
export function call(
  app: Pick<Hono, "request">,
  cookie: string | null,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  const h: Record<string, string> = { accept: "application/json", ...headers };
  if (cookie) h.cookie = cookie;
  if (body !== undefined) h["content-type"] = "application/json";
  return Promise.resolve(app.request(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) }));
}

/** A valid dashboard spec reading the fixture's http_requests through `sourceId`. */
export function dashboardSpec(sourceId: string, overrides: Record<string, unknown> = {}) {
  return {
    title: "HTTP traffic",
    refreshIntervalMs: 10_000,
    time: { from: "now-1h", to: "now" },
    panels: [
      {
        id: "requests",
        title: "Requests",
        type: "timeseries" as const,
        sourceId,
        sql: "SELECT $__timeGroup(ts, $__interval) AS t, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
      },
      {
        id: "errors",
        title: "Errors",
        type: "stat" as const,
        sourceId,
        sql: "SELECT count(*) FILTER (WHERE status >= 500) AS errors FROM http_requests WHERE $__timeFilter(ts)",
      },
    ],
    ...overrides,
  };
}
