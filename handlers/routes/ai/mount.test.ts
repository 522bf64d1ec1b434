import { Registry } from "prom-client";
import { expect, test } from "vitest";
import { seedAiFixture } from "../../testing/ai-harness.ts";
import { useAiRouteFixture } from "../../testing/ai-route-fixture.ts";
import { createSessionTokens } from "../../../lib/auth/session.ts";
import { parseConfig } from "../../../lib/config/parse.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { createMetrics } from "../../../lib/metrics/metrics.ts";
import { testAppDeps } from "../../testing/app-deps.ts";
import { createApp } from "../../app.ts";

// The AI routes as createApp mounts them, next to the rest of the API: no AI configuration breaks
// nothing else, and a generated spec is saved through the normal dashboards API.
const ai = useAiRouteFixture();
const SECRET = "mount-test-session-secret-0123456789abcdef";

function app(env: Record<string, string>) {
  const { config } = parseConfig({ DATABASE_URL: ai.store.url, SESSION_SECRET: SECRET, SOURCE_SECRET_REFS: "DEMO:*", ...env });
  const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: 3600 });
  const deps = testAppDeps(config, {
    pool: ai.store.pool,
    metrics: createMetrics(new Registry(), { defaultCollectors: false }),
    log: createLogger({ silent: true }),
  });
  return { app: createApp({ ...deps, sessions, oidc: null }), sessions, cookieName: config.SESSION_COOKIE_NAME };
}

test("without a provider: readiness is degraded naming the variable, AI routes answer 503, the rest works", async () => {
  const { app: a, sessions, cookieName } = app({});
  const f = await seedAiFixture(ai.store.pool, sessions, cookieName, { refreshedAt: new Date() });
  const ready = await a.request("/api/ready");
  expect((await ready.json()).checks.aiProvider).toEqual({ status: "failed", reason: "AI_PROVIDER" });
  const ws = await a.request(`/api/workspaces/${f.workspace.id}`, { headers: { cookie: f.cookies.viewer! } });
  expect(ws.status).toBe(200);
  const dashboards = await a.request(`/api/workspaces/${f.workspace.id}/dashboards`, { headers: { cookie: f.cookies.viewer! } });
  expect(dashboards.status).toBe(200);
  const gen = await a.request(`/api/workspaces/${f.workspace.id}/generate`, {
    method: "POST",
    headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
    body: JSON.stringify({ prompt: "x", sourceId: f.sourceId }),
  });
  expect(gen.status).toBe(503);
  expect(await gen.json()).toMatchObject({ code: "ai_not_configured", missing: "AI_PROVIDER" });
});

test("a generated spec is reviewed and saved with the normal dashboards API", async () => {
  const { app: a, sessions, cookieName } = app(ai.providerEnv());
  const f = await seedAiFixture(ai.store.pool, sessions, cookieName, { refreshedAt: new Date() });
  ai.fake.enqueue({
    kind: "text",
    text: JSON.stringify({
      title: "Generated",
      panels: [
        {
          id: "p95",
          title: "p95 latency",
          type: "timeseries",
          unit: "ms",
          sql: "SELECT $__timeGroup(ts, $__interval) AS t, percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1",
        },
      ],
    }),
  });
  const gen = await a.request(`/api/workspaces/${f.workspace.id}/generate`, {
    method: "POST",
    headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
    body: JSON.stringify({ prompt: "p95 latency", sourceId: f.sourceId }),
  });
  expect(gen.status).toBe(200);
  const { spec, dropped } = await gen.json();
  expect(dropped).toEqual([]);
  const saved = await a.request(`/api/workspaces/${f.workspace.id}/dashboards`, {
    method: "POST",
    headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
    body: JSON.stringify({ spec }),
  });
  expect(saved.status).toBeLessThan(300);
  expect((await saved.json()).spec.title).toBe("Generated");
});
