import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiToken } from "../lib/api-tokens/store.ts";
import { parseConfig } from "../lib/config/parse.ts";
import { createLogger } from "../lib/log/logger.ts";
import { createApp } from "./app.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "./testing/api-fixture.ts";
import { testAppDeps } from "./testing/app-deps.ts";

// The handlers' access log: one `request` line per request with the route's pattern, status, duration, request id
// and caller kind, and nothing of what the caller sent (no raw path, query string, body, header or token).

let fx: ApiFixture;
let lines: Record<string, unknown>[];
let raw: string[];
let app: ReturnType<typeof createApp>;
let token: string;

function appWith(env: Record<string, string> = {}) {
  // LOG_LEVEL as the entry points read it: through the configuration schema.
  const { config } = parseConfig({ DATABASE_URL: "postgres://unused/x", ...env });
  raw = [];
  lines = [];
  return createApp({
    ...testAppDeps(fx.config, {
      pool: fx.pool,
      log: createLogger({
        level: config.LOG_LEVEL,
        write: (l) => {
          raw.push(l);
          lines.push(JSON.parse(l));
        },
      }),
      guard: fx.guard,
      queryRunner: fx.runner,
    }),
    oidc: null,
  });
}

const access = () => lines.filter((l) => l.msg === "request");

beforeAll(async () => {
  fx = await createApiFixture();
  token = (
    await createApiToken(fx.pool, {
      workspaceId: fx.roles.workspace.id,
      name: "log",
      role: "editor",
      createdBy: "t",
      expiresAt: null,
      createdAt: new Date(),
    })
  ).token;
  app = appWith();
});
afterAll(() => fx.close());

describe("access lines", () => {
  test("a person's request: the pattern, status, duration, request id and caller, and no more", async () => {
    const res = await call(app, fx.roles.cookies.viewer, "GET", `/api/sources/${fx.source.id}?secret=hunter2`);
    expect(res.status).toBe(200);
    expect(access()).toEqual([
      {
        time: expect.any(String),
        level: "info",
        msg: "request",
        method: "GET",
        route: "/api/sources/:sourceId",
        status: 200,
        durationMs: expect.any(Number),
        requestId: res.headers.get("x-request-id"),
        caller: "person",
      },
    ]);
    expect(raw.join("")).not.toContain(fx.source.id);
    expect(raw.join("")).not.toContain("hunter2");
  });

  test("a token's request says token and never carries the token; its body is not logged", async () => {
    lines.length = 0;
    raw.length = 0;
    const res = await call(
      app,
      null,
      "POST",
      `/api/workspaces/${fx.roles.workspace.id}/dashboards`,
      { spec: dashboardSpec(fx.source.id, { title: "A private title" }) },
      { authorization: `Bearer ${token}` },
    );
    expect(res.status).toBe(201);
    expect(access()).toEqual([expect.objectContaining({ route: "/api/workspaces/:workspaceId/dashboards", status: 201, caller: "token" })]);
    const text = raw.join("");
    for (const secret of [token, token.slice(18), "A private title", "SELECT", fx.roles.workspace.id]) expect(text).not.toContain(secret);
  });

  test("401, 404 and unknown paths leave a line too (the route is `unmatched` when none matched)", async () => {
    lines.length = 0;
    await call(app, null, "GET", "/api/me");
    await call(app, fx.roles.cookies.viewer, "GET", "/api/dashboards/db_nope");
    await call(app, null, "GET", "/api/no/such/thing?x=1");
    await call(app, null, "GET", "/api/me", undefined, { authorization: "Bearer pbt_bad" });
    expect(access().map((l) => [l.route, l.status, l.caller])).toEqual([
      ["/api/me", 401, "anonymous"],
      ["/api/dashboards/:dashboardId", 404, "person"],
      ["unmatched", 404, "anonymous"],
      ["/api/me", 401, "anonymous"],
    ]);
  });

  test("whatever path and query a caller sends, the line holds none of it (property)", async () => {
    await fc.assert(
      // A "zq" start no field name, UUID or timestamp holds, so a hit is the caller's text and not a coincidence.
      fc.asyncProperty(fc.stringMatching(/^zq[a-zA-Z0-9]{4,18}$/), fc.stringMatching(/^zq[a-zA-Z0-9]{4,18}$/), async (seg, q) => {
        raw.length = 0;
        await call(app, fx.roles.cookies.viewer, "GET", `/api/dashboards/${seg}?q=${q}`);
        await call(app, null, "GET", `/api/${seg}/x?${q}=1`);
        const text = raw.join("");
        expect(text).not.toContain(seg);
        expect(text).not.toContain(q);
      }),
      { numRuns: 25 },
    );
  });

  test("LOG_LEVEL=warn drops access lines", async () => {
    const quiet = appWith({ LOG_LEVEL: "warn" });
    await call(quiet, fx.roles.cookies.viewer, "GET", "/api/me");
    expect(access()).toEqual([]);
  });
});
