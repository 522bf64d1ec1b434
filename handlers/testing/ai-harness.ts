import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { Registry } from "prom-client";
import type pg from "pg";
import { createAuth } from "../../lib/auth/create-auth.ts";
import { type RoleFixture, seedRoleFixture } from "../../lib/auth/testing/role-table.ts";
import { createSessionTokens, type SessionTokens } from "../../lib/auth/session.ts";
import { DEMO_CATALOG } from "../../lib/catalog/testing/demo-catalog.ts";
import { type Config, parseConfig } from "../../lib/config/parse.ts";
import type { DashboardSpec } from "../../lib/dashboards/spec.ts";
import { onError } from "../../lib/http/problem.ts";
import { createLogger } from "../../lib/log/logger.ts";
import { createMetrics, type Metrics } from "../../lib/metrics/metrics.ts";
import { createSource, saveCatalog } from "../../lib/sources/index.ts";
import { configStoreFault } from "../../lib/store/faults.ts";
import { newId } from "../../lib/store/ids.ts";
import { createApiRouter } from "../openapi.ts";
import { aiRouteDeps, registerAiAreaRoutes } from "../routes/index.ts";
import { testAppDeps } from "./app-deps.ts";
import { getWorkspace } from "../../lib/workspaces/store.ts";

/** Test-only: one AI-enabled app on a test database, with a clock, captured log lines and metrics. */
export interface AiTestApp {
  app: Hono;
  config: Config;
  metrics: Metrics;
  logLines: string[];
  sessions: SessionTokens;
}

const SECRET = "test-session-secret-0123456789-abcdefghij";

/**
 * Builds an app carrying the AI routes exactly as createApp mounts them (request id, the one
 * problem+json error handler, createAuth, registerAiAreaRoutes(aiRouteDeps(...))), without the
 * rest of the API, so these tests depend only on the AI area. `env` goes on top of a test baseline.
 */
/** When the fixture's sessions were signed in: before every clock the AI tests use (all in 2026). */
const FIXTURE_SIGN_IN = Date.UTC(2025, 11, 1);

export function buildAiApp(opts: { pool: pg.Pool; url: string; env: Record<string, string | undefined>; clock: { t: number } }): AiTestApp {
  const { config } = parseConfig({
    DATABASE_URL: opts.url,
    SESSION_SECRET: SECRET,
    SOURCE_SECRET_REFS: "DEMO:*",
    ...opts.env,
  });
  const metrics = createMetrics(new Registry(), { defaultCollectors: false });
  const logLines: string[] = [];
  const now = () => opts.clock.t;
  const log = createLogger({ write: (l) => logLines.push(l), now });
  // The tests move their clock both ways around the fixture's sign-ins, and a token issued in the
  // verifier's future is refused; so fixture sessions are minted at one instant before every test clock
  // (and live 400 days), while the app verifies them on the test clock.
  const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: 400 * 86_400, now: () => FIXTURE_SIGN_IN });
  const verifier = createSessionTokens({ secret: SECRET, ttlSeconds: 400 * 86_400, now });
  const deps = testAppDeps(config, { pool: opts.pool, metrics, log, now });
  const app = new Hono();
  app.use(requestId());
  app.onError(onError((line) => deps.log.error(String(line.msg), line), configStoreFault));
  const auth = createAuth({ ...deps, sessions: verifier, findWorkspace: (id) => getWorkspace(deps.pool, id) });
  const api = createApiRouter();
  registerAiAreaRoutes(api, aiRouteDeps(deps, auth));
  app.route("/", api);
  return { app, config, metrics, logLines, sessions };
}

/**
 * Seeds the role fixture plus a source with the demo catalog (lib/catalog/testing/demo-catalog.ts), refreshed at
 * `refreshedAt`, a source never refreshed, and a dashboard in its workspace.
 */
export async function seedAiFixture(
  pool: pg.Pool,
  sessions: SessionTokens,
  cookieName: string,
  opts: { refreshedAt: Date },
): Promise<RoleFixture & { sourceId: string; neverRefreshedId: string; dashboardId: string; spec: DashboardSpec }> {
  const f = await seedRoleFixture(pool, sessions, cookieName);
  const src = await createSource(pool, f.workspace.id, { name: "metrics", host: "127.0.0.1", database: "metrics", secretRef: "DEMO" });
  await saveCatalog(pool, src.id, DEMO_CATALOG, opts.refreshedAt);
  const never = await createSource(pool, f.workspace.id, { name: "fresh-install", host: "127.0.0.1", database: "m2", secretRef: "DEMO" });
  const spec: DashboardSpec = {
    title: "HTTP",
    time: { from: "now-1h", to: "now" },
    panels: [
      {
        id: "rps",
        title: "Requests",
        type: "timeseries",
        sourceId: src.id,
        sql: "SELECT $__timeGroup(ts, '1m') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
      },
    ],
  };
  const dashboardId = newId("db");
  await pool.query(
    "INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by) VALUES ($1, $2, $3::jsonb, 1, 'seed', 'seed')",
    [dashboardId, f.workspace.id, JSON.stringify(spec)],
  );
  return { ...f, sourceId: src.id, neverRefreshedId: never.id, dashboardId, spec };
}

/** Reads one counter value from a metrics registry. */
export async function counterValue(m: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await m.registry.getSingleMetric(name)?.get();
  const v = metric?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value ?? 0;
}

/** Parses a text/event-stream body into events. */
export function parseSse(text: string): { event: string; data: unknown }[] {
  return text
    .split("\n\n")
    .filter((b) => b.trim())
    .map((block) => {
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      return { event, data: data.length ? JSON.parse(data.join("\n")) : null };
    });
}
