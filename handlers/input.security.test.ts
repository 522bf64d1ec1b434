import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MAX_JSON_DEPTH } from "../lib/http/input.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "./testing/api-fixture.ts";
import { storeSnapshot } from "./testing/store-snapshot.ts";

// Hostile characters and shapes across every kind of input the handlers read: JSON bodies (values and
// keys), query strings and path parameters. Each used to reach PostgreSQL (text and jsonb refuse NUL and
// unpaired surrogates) or JSON.stringify (deep nesting) and come back as a 500; now each is a 400
// `validation_failed` naming the field, and nothing is written.

let fx: ApiFixture;
let ws: string;
let dashboardId: string;

beforeAll(async () => {
  fx = await createApiFixture();
  ws = fx.roles.workspace.id;
  const res = await call(fx.app, fx.roles.cookies.editor, "POST", `/api/workspaces/${ws}/dashboards`, {
    spec: dashboardSpec(fx.source.id),
  });
  expect(res.status).toBe(201);
  dashboardId = (await res.json()).id;
});
afterAll(() => fx.close());

/** Every config-store table, fingerprinted: a refused request must leave them all as they were. */
const snapshot = async () => JSON.stringify(await storeSnapshot(fx.pool));

const NUL = "a\u0000b";
const HIGH = "a\ud800b";
const LOW = "\udc00z";
const nested = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};

type Case = [name: string, persona: "viewer" | "editor" | "admin", method: string, path: () => string, body: () => unknown, field: string];

const CASES: Case[] = [
  [
    "NUL in a dashboard title",
    "editor",
    "POST",
    () => `/api/workspaces/${ws}/dashboards`,
    () => ({ spec: dashboardSpec("S", { title: NUL }) }),
    "spec.title",
  ],
  [
    "lone high surrogate in panel SQL",
    "editor",
    "POST",
    () => `/api/workspaces/${ws}/dashboards`,
    () => ({ spec: dashboardSpec("S", { panels: [{ id: "p", title: "t", type: "stat", sourceId: "S", sql: `SELECT 1 -- ${HIGH}` }] }) }),
    "spec.panels.0.sql",
  ],
  [
    "lone low surrogate in an update's title",
    "editor",
    "PUT",
    () => `/api/dashboards/${dashboardId}`,
    () => ({ version: 1, spec: dashboardSpec("S", { title: LOW }) }),
    "spec.title",
  ],
  [
    "NUL in a panel option value",
    "editor",
    "PUT",
    () => `/api/dashboards/${dashboardId}`,
    () => ({
      version: 1,
      spec: dashboardSpec("S", {
        panels: [{ id: "p", title: "t", type: "stat", sourceId: "S", sql: "SELECT 1", options: { color: NUL } }],
      }),
    }),
    "spec.panels.0.options.color",
  ],
  [
    "NUL in an object key",
    "editor",
    "PUT",
    () => `/api/dashboards/${dashboardId}`,
    () => ({ version: 1, spec: { ...dashboardSpec("S"), [NUL]: 1 } }),
    "spec.(key)",
  ],
  [
    "NUL in a source name",
    "admin",
    "POST",
    () => `/api/workspaces/${ws}/sources`,
    () => ({ name: NUL, host: "127.0.0.1", database: "x", secretRef: "METRICS" }),
    "name",
  ],
  ["lone surrogate in source notes", "admin", "PUT", () => `/api/sources/${fx.source.id}`, () => ({ version: 1, notes: HIGH }), "notes"],
  [
    "NUL in preview SQL",
    "editor",
    "POST",
    () => `/api/workspaces/${ws}/query-preview`,
    () => ({ sourceId: fx.source.id, sql: `SELECT '${NUL}'`, time: { from: "now-1h", to: "now" } }),
    "sql",
  ],
  [
    "NUL in a generation prompt",
    "editor",
    "POST",
    () => `/api/workspaces/${ws}/generate`,
    () => ({ prompt: NUL, sourceId: fx.source.id }),
    "prompt",
  ],
  ["lone surrogate in a chat message", "viewer", "POST", () => `/api/dashboards/${dashboardId}/chat`, () => ({ message: HIGH }), "message"],
  [
    "NUL in source draft instructions",
    "editor",
    "POST",
    () => `/api/sources/${fx.source.id}/draft`,
    () => ({ instructions: NUL }),
    "instructions",
  ],
  ["NUL in a query string value", "admin", "GET", () => `/api/workspaces/${ws}/generation-log?before=%00`, () => undefined, "before"],
  ["NUL in a query string key", "editor", "DELETE", () => `/api/dashboards/${dashboardId}?a%00=1`, () => undefined, "(key)"],
  ["NUL in a path parameter", "viewer", "GET", () => "/api/dashboards/db%00x", () => undefined, "dashboardId"],
  ["NUL in a chat path parameter", "viewer", "GET", () => "/api/dashboards/%00/chat", () => undefined, "dashboardId"],
  ["NUL in a workspace path parameter", "viewer", "GET", () => "/api/workspaces/%00", () => undefined, "workspaceId"],
  ["NUL in a login returnTo", "viewer", "GET", () => "/api/auth/login?returnTo=/%00", () => undefined, "returnTo"],
  [
    `nesting deeper than ${MAX_JSON_DEPTH} levels`,
    "editor",
    "PUT",
    () => `/api/dashboards/${dashboardId}`,
    () => ({
      version: 1,
      spec: dashboardSpec("S", {
        panels: [{ id: "p", title: "t", type: "stat", sourceId: "S", sql: "SELECT 1", options: { deep: nested(MAX_JSON_DEPTH) } }],
      }),
    }),
    "spec.panels.0.options.deep",
  ],
];

describe("refused characters and nesting are a 400 naming the field, and write nothing", () => {
  test.each(CASES)("%s", async (_name, persona, method, path, body, field) => {
    const before = await snapshot();
    const res = await call(fx.app, fx.roles.cookies[persona], method, path(), body());
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const problem = await res.json();
    expect(problem.code).toBe("validation_failed");
    expect(problem.issues).toHaveLength(1);
    expect(problem.issues[0].path.startsWith(field)).toBe(true);
    expect(problem.detail).toContain(field);
    // The client's text is not echoed back.
    expect(JSON.stringify(problem)).not.toMatch(/\\u0000|\\ud800|\\udc00/i);
    expect(await snapshot()).toBe(before);
  });

  test("100,000 nested arrays in panel options (JSON.stringify of the spec would overflow the stack) are refused", async () => {
    const before = await snapshot();
    const spec = JSON.stringify(dashboardSpec(fx.source.id)).replace(
      '"panels":[',
      `"panels":[{"id":"p","title":"t","type":"stat","sourceId":"S","sql":"SELECT 1","options":{"deep":${"[".repeat(100_000)}${"]".repeat(100_000)}}},`,
    );
    const res = await fx.app.request(`/api/workspaces/${ws}/dashboards`, {
      method: "POST",
      headers: { cookie: fx.roles.cookies.editor ?? "", "content-type": "application/json", accept: "application/json" },
      body: `{"spec":${spec}}`,
    });
    expect(res.status).toBe(400);
    const problem = await res.json();
    expect(problem.code).toBe("validation_failed");
    expect(problem.issues[0].path.startsWith("spec.panels.0.options.deep")).toBe(true);
    expect(await snapshot()).toBe(before);
  });

  test("the same characters escaped or paired are fine: a valid surrogate pair, U+007F, RTL marks", async () => {
    const title = "\ud83d\ude00 \u007f \u200f\u202e ok";
    const res = await call(fx.app, fx.roles.cookies.editor, "POST", `/api/workspaces/${ws}/dashboards`, {
      spec: dashboardSpec(fx.source.id, { title }),
    });
    expect(res.status).toBe(201);
    expect((await res.json()).spec.title).toBe(title);
  });

  test("a body over the largest route limit is refused before it is read in full", async () => {
    const res = await call(fx.app, fx.roles.cookies.editor, "POST", `/api/workspaces/${ws}/dashboards`, {
      spec: dashboardSpec(fx.source.id, { title: "x".repeat(3 * 1024 * 1024) }),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe("bad_request");
  });

  test("a route's own smaller body limit still applies after the check read a copy of the body", async () => {
    const res = await call(fx.app, fx.roles.cookies.editor, "POST", `/api/workspaces/${ws}/query-preview`, {
      sourceId: fx.source.id,
      sql: `SELECT 1 ${" ".repeat(70 * 1024)}`,
      time: { from: "now-1h", to: "now" },
    });
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toContain("65536");
  });

  test("the probes answer whatever the query string holds", async () => {
    expect((await fx.app.request("/api/health?x=%00")).status).toBe(200);
  });
});

describe("time expressions are bounded on save and preview", () => {
  test.each([
    ["now-99999999999999w", "from"],
    ["now-3661d", "from"],
    ["now-523w", "from"],
    ["0001-01-01T00:00:00Z", "from"],
    ["1969-12-31T23:59:59Z", "from"],
  ])("saving %s as time.%s is a 400 naming spec.time.%s", async (expr, end) => {
    const before = await snapshot();
    const res = await call(fx.app, fx.roles.cookies.editor, "POST", `/api/workspaces/${ws}/dashboards`, {
      spec: dashboardSpec(fx.source.id, { time: { from: "now-1h", to: "now", [end]: expr } }),
    });
    expect(res.status).toBe(400);
    const problem = await res.json();
    expect(problem.code).toBe("validation_failed");
    expect(problem.issues.map((i: { path: string }) => i.path)).toEqual([`spec.time.${end}`]);
    expect(await snapshot()).toBe(before);
  });

  test.each(["now-99999999999999w", "now-100000d", "+275760-09-13T00:00:00Z", "0000-01-01"])(
    "previewing from %s is a 400 naming time.from",
    async (expr) => {
      const res = await call(fx.app, fx.roles.cookies.editor, "POST", `/api/workspaces/${ws}/query-preview`, {
        sourceId: fx.source.id,
        sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)",
        time: { from: expr, to: "now" },
      });
      expect(res.status).toBe(400);
      const problem = await res.json();
      expect(problem.code).toBe("validation_failed");
      expect(problem.issues.map((i: { path: string }) => i.path)).toEqual(["time.from"]);
    },
  );

  test("the bounds themselves are accepted: now-3660d and 9999-12-31T23:59:59Z", async () => {
    const res = await call(fx.app, fx.roles.cookies.editor, "POST", `/api/workspaces/${ws}/query-preview`, {
      sourceId: fx.source.id,
      sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)",
      time: { from: "now-3660d", to: "9999-12-31T23:59:59Z" },
    });
    expect(res.status).toBe(200);
  });
});

describe("numbers past what the store holds are a 400, not a database error", () => {
  // Versions are PostgreSQL integers: a larger one used to reach the statement and fail it (500).
  const NUMBER_CASES: [string, "editor" | "admin", string, () => string, () => unknown, string][] = [
    [
      "PUT a dashboard",
      "editor",
      "PUT",
      () => `/api/dashboards/${dashboardId}`,
      () => ({ version: 2 ** 31, spec: dashboardSpec(fx.source.id) }),
      "version",
    ],
    [
      "PUT a dashboard (largest safe integer)",
      "editor",
      "PUT",
      () => `/api/dashboards/${dashboardId}`,
      () => ({ version: Number.MAX_SAFE_INTEGER, spec: dashboardSpec(fx.source.id) }),
      "version",
    ],
    [
      "DELETE a dashboard at a version",
      "editor",
      "DELETE",
      () => `/api/dashboards/${dashboardId}?version=2147483648`,
      () => undefined,
      "version",
    ],
    ["PUT a source", "admin", "PUT", () => `/api/sources/${fx.source.id}`, () => ({ version: 2 ** 31, notes: "x" }), "version"],
    [
      "apply a chat proposal at a version",
      "editor",
      "POST",
      () => `/api/dashboards/${dashboardId}/chat/apply`,
      () => ({ messageId: "1", version: 2 ** 31 }),
      "version",
    ],
    // Timers cannot wait longer than 2^31-1 ms; a longer refresh would fire at once, every time.
    [
      "a refresh interval over a day",
      "editor",
      "PUT",
      () => `/api/dashboards/${dashboardId}`,
      () => ({ version: 1, spec: dashboardSpec(fx.source.id, { refreshIntervalMs: 2 ** 31 }) }),
      "spec.refreshIntervalMs",
    ],
  ];
  test.each(NUMBER_CASES)("%s", async (_name, persona, method, path, body, field) => {
    const before = await snapshot();
    const res = await call(fx.app, fx.roles.cookies[persona], method, path(), body());
    expect(res.status).toBe(400);
    const problem = await res.json();
    expect(problem.code).toBe("validation_failed");
    expect(problem.issues.map((i: { path: string }) => i.path)).toContain(field);
    expect(await snapshot()).toBe(before);
  });
});
