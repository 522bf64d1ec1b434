// The handlers' routes while the config store is down or hung: every route that reads it answers 503
// config_store_unavailable with Retry-After through the app's one error handler, logged with a code and the
// request id only. The store sits behind a TCP proxy in this test (lib/store/testing/hang-proxy.ts) that
// refuses (down) or stops forwarding (hung, as a server frozen with SIGSTOP looks to its clients) in front
// of the run's shared PostgreSQL; stream-host/dependency-faults.process.test.ts freezes real servers.
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import { type RoleFixture, seedRoleFixture } from "../lib/auth/testing/role-table.ts";
import { parseConfig } from "../lib/config/parse.ts";
import { createLogger } from "../lib/log/logger.ts";
import { testAppDeps } from "./testing/app-deps.ts";
import { createGuard, loadGuardParser } from "../lib/sql-guard/index.ts";
import { type HangProxy, startHangProxy } from "../lib/store/testing/hang-proxy.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { createApp } from "./app.ts";

const SESSION_SECRET = "handlers-faults-secret-0123456789abcdef";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let proxy: HangProxy;
let pool: pg.Pool;
let roles: RoleFixture;
let app: ReturnType<typeof createApp>;
const lines: string[] = [];

beforeAll(async () => {
  await loadGuardParser();
  store = await createTestConfigStore();
  const u = new URL(store.url);
  proxy = await startHangProxy({ host: u.hostname, port: Number(u.port) });
  const { config } = parseConfig({
    DATABASE_URL: proxy.urlFor(store.url),
    SESSION_SECRET,
    PG_POOL_MAX: "2",
    // A minute away: only the readiness bound, which is also the pool's connect timeout and the client's
    // wait for an answer, can end a request on the hung store within the test's timeout.
    CONFIG_STORE_STATEMENT_TIMEOUT_MS: "60000",
    READINESS_CHECK_TIMEOUT_MS: "500",
  });
  // The app's own pool, as the process builds it (with the statement and client-side timeouts).
  const deps = testAppDeps(config, { log: createLogger({ write: (l) => lines.push(l) }), guard: createGuard({}) });
  pool = deps.pool;
  app = createApp({ ...deps, oidc: null });
  roles = await seedRoleFixture(store.pool, createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600 }), config.SESSION_COOKIE_NAME);
});
afterAll(async () => {
  proxy.resume();
  await pool.end();
  await proxy.close();
  await store.close();
});

const ROUTES = ["/api/me", "/api/workspaces", "/api/workspaces/ws_missing/dashboards", "/api/dashboards/db_missing"];

async function expectCoded503(path: string) {
  const res = await app.request(path, { headers: { cookie: roles.cookies.viewer! } });
  expect(res.status, path).toBe(503);
  expect(res.headers.get("retry-after"), path).toBe("5");
  const body = await res.json();
  expect(body, path).toMatchObject({ code: "config_store_unavailable", status: 503 });
  return body as { requestId: string };
}

function noAddress(text: string) {
  const storePort = new URL(store.url).port;
  expect(text).not.toContain("127.0.0.1");
  expect(text).not.toContain(`:${storePort}`);
  expect(text).not.toContain(`:${proxy.port}`);
}

describe("handler routes during a config-store fault", () => {
  test("the routes answer while the store is up", async () => {
    const res = await app.request("/api/workspaces", { headers: { cookie: roles.cookies.viewer! } });
    expect(res.status).toBe(200);
  });

  test.each(ROUTES)(
    "store down: %s is 503 config_store_unavailable with Retry-After, logged with a code and the request id only",
    async (path) => {
      await proxy.stop();
      try {
        lines.length = 0;
        const body = await expectCoded503(path);
        const logged = lines.map((l) => JSON.parse(l));
        expect(logged).toContainEqual(expect.objectContaining({ msg: "config store unavailable", requestId: body.requestId }));
        noAddress(JSON.stringify(body) + lines.join(""));
      } finally {
        await proxy.start();
      }
    },
  );

  test("store hung: each route gives up within READINESS_CHECK_TIMEOUT_MS (a pooled connection too) with the same 503, the pool is not exhausted, and it answers after the hang", async () => {
    await app.request("/api/workspaces", { headers: { cookie: roles.cookies.viewer! } });
    proxy.hang();
    try {
      lines.length = 0;
      // More requests than PG_POOL_MAX, one after another on the hung store.
      for (const path of [...ROUTES, ...ROUTES]) await expectCoded503(path);
      expect(pool.totalCount).toBeLessThanOrEqual(2);
      noAddress(lines.join(""));
    } finally {
      proxy.resume();
    }
    const res = await app.request("/api/workspaces", { headers: { cookie: roles.cookies.viewer! } });
    expect(res.status).toBe(200);
  }, 60_000);
});
