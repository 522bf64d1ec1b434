import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Expectation, PERSONAS, type RoleCase, expectFor, roleTable } from "../lib/auth/testing.ts";
import { saveDashboard } from "../lib/dashboards/save.ts";
import type { Source } from "../lib/sources/index.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "./routes/api-fixture.ts";

// Every route of the JSON API × {anonymous, viewer, editor, admin, admin of another workspace}.
// Routes that succeed for several personas and consume their resource (PUT, DELETE) take a fresh
// resource per request from a queue filled in beforeAll.

let fx: ApiFixture;
const queues: Record<string, string[]> = {};
let dashboardId: string;
let otherDashboardId: string;

const QUEUED = 5; // one per persona

async function newDashboard(workspaceId: string, source: Source): Promise<string> {
  const d = await saveDashboard(
    { pool: fx.pool, guard: fx.guard, minRefreshIntervalMs: fx.config.MIN_REFRESH_INTERVAL_MS },
    { workspaceId, userSub: "seed", spec: dashboardSpec(source.id) },
  );
  return d.id;
}

beforeAll(async () => {
  fx = await createApiFixture();
  const ws = fx.roles.workspace.id;
  dashboardId = await newDashboard(ws, fx.source);
  otherDashboardId = await newDashboard(fx.roles.otherWorkspace.id, fx.otherSource);
  queues.putDashboard = [];
  queues.deleteDashboard = [];
  queues.putSource = [];
  queues.deleteSource = [];
  for (let i = 0; i < QUEUED; i++) {
    queues.putDashboard.push(await newDashboard(ws, fx.source));
    queues.deleteDashboard.push(await newDashboard(ws, fx.source));
    queues.putSource.push((await fx.newSource(`put ${i}`)).id);
    queues.deleteSource.push((await fx.newSource(`delete ${i}`)).id);
  }
});
afterAll(() => fx.close());

const next = (queue: string) => () => {
  const id = queues[queue].shift();
  if (!id) throw new Error(`queue ${queue} is empty`);
  return id;
};
const missing: Expectation = { anonymous: 401, viewer: 404, editor: 404, admin: 404, outsider: 404 };
/** A resource of the other workspace: only its own admin (the outsider) gets `ok`. */
const othersOnly = (ok: number): Expectation => ({ anonymous: 401, viewer: 404, editor: 404, admin: 404, outsider: ok });

const sourceBody = () => ({
  name: "added",
  host: fx.metrics.host,
  port: fx.metrics.port,
  database: fx.metrics.database,
  sslmode: "disable",
  secretRef: "METRICS",
});
const previewBody = () => ({
  sourceId: fx.source.id,
  sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)",
  time: { from: "now-1h", to: "now" },
});

const cases: RoleCase[] = [
  // Dashboards
  { name: "GET dashboards list", method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}/dashboards`, expect: expectFor("viewer") },
  {
    name: "POST dashboards (create)",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/dashboards`,
    body: () => ({ spec: dashboardSpec(fx.source.id) }),
    expect: expectFor("editor", 201),
  },
  { name: "GET dashboard", method: "GET", path: () => `/api/dashboards/${dashboardId}`, expect: expectFor("viewer") },
  {
    name: "PUT dashboard",
    method: "PUT",
    path: () => `/api/dashboards/${next("putDashboard")()}`,
    body: () => ({ version: 1, spec: dashboardSpec(fx.source.id, { title: "changed" }) }),
    expect: expectFor("editor"),
  },
  { name: "DELETE dashboard", method: "DELETE", path: () => `/api/dashboards/${next("deleteDashboard")()}`, expect: expectFor("editor", 204) },
  { name: "GET dashboard (missing)", method: "GET", path: "/api/dashboards/db_missing", expect: missing },
  { name: "GET dashboard of another workspace", method: "GET", path: () => `/api/dashboards/${otherDashboardId}`, expect: othersOnly(200) },
  {
    name: "PUT dashboard of another workspace (stale version, so nothing changes)",
    method: "PUT",
    path: () => `/api/dashboards/${otherDashboardId}`,
    body: () => ({ version: 99, spec: dashboardSpec(fx.otherSource.id) }),
    expect: othersOnly(409),
  },
  {
    name: "DELETE dashboard of another workspace (stale version)",
    method: "DELETE",
    path: () => `/api/dashboards/${otherDashboardId}?version=99`,
    expect: othersOnly(409),
  },

  // Sources
  { name: "GET sources list", method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}/sources`, expect: expectFor("viewer") },
  {
    name: "POST sources (create)",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/sources`,
    body: sourceBody,
    expect: expectFor("admin", 201),
  },
  { name: "GET source", method: "GET", path: () => `/api/sources/${fx.source.id}`, expect: expectFor("viewer") },
  {
    name: "PUT source",
    method: "PUT",
    path: () => `/api/sources/${next("putSource")()}`,
    body: { version: 1, notes: "changed" },
    expect: expectFor("admin"),
  },
  { name: "DELETE source", method: "DELETE", path: () => `/api/sources/${next("deleteSource")()}`, expect: expectFor("admin", 204) },
  { name: "POST source test", method: "POST", path: () => `/api/sources/${fx.source.id}/test`, expect: expectFor("admin") },
  { name: "POST source catalog refresh", method: "POST", path: () => `/api/sources/${fx.source.id}/catalog/refresh`, expect: expectFor("admin") },
  { name: "GET source (missing)", method: "GET", path: "/api/sources/src_missing", expect: missing },
  { name: "POST source test (missing)", method: "POST", path: "/api/sources/src_missing/test", expect: missing },
  { name: "GET source of another workspace", method: "GET", path: () => `/api/sources/${fx.otherSource.id}`, expect: othersOnly(200) },
  { name: "POST test of another workspace's source", method: "POST", path: () => `/api/sources/${fx.otherSource.id}/test`, expect: othersOnly(200) },

  // Query preview
  {
    name: "POST query-preview",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/query-preview`,
    body: previewBody,
    expect: expectFor("editor"),
  },
  {
    name: "POST query-preview naming another workspace's source",
    method: "POST",
    path: (f) => `/api/workspaces/${f.workspace.id}/query-preview`,
    body: () => ({ ...previewBody(), sourceId: fx.otherSource.id }),
    expect: { anonymous: 401, viewer: 403, editor: 404, admin: 404, outsider: 404 },
  },
  {
    name: "POST query-preview in another workspace",
    method: "POST",
    path: (f) => `/api/workspaces/${f.otherWorkspace.id}/query-preview`,
    body: () => ({ ...previewBody(), sourceId: fx.otherSource.id }),
    expect: othersOnly(200),
  },

  // Limits
  { name: "GET limits", method: "GET", path: (f) => `/api/workspaces/${f.workspace.id}/limits`, expect: expectFor("admin") },
  {
    name: "PUT limits",
    method: "PUT",
    path: (f) => `/api/workspaces/${f.workspace.id}/limits`,
    body: { llmRatePerMinute: 5, llmDailyTokenBudget: null },
    expect: expectFor("admin"),
  },
  { name: "GET limits of a missing workspace", method: "GET", path: "/api/workspaces/ws_missing/limits", expect: missing },

  // The document itself is public: it describes the API, it holds no data.
  { name: "GET openapi.json", method: "GET", path: "/api/openapi.json", expect: { anonymous: 200, viewer: 200, editor: 200, admin: 200, outsider: 200 } },
];

describe("role table", () => {
  roleTable(cases, () => ({ app: fx.app, fixture: fx.roles }));
});

describe("nothing crossed workspaces", () => {
  test("the other workspace's dashboard was neither changed nor deleted by anyone", async () => {
    const res = await call(fx.app, fx.roles.cookies.outsider, "GET", `/api/dashboards/${otherDashboardId}`);
    expect(res.status).toBe(200);
    expect((await res.json()).version).toBe(1);
  });
});

// Every mutating route, sent by a browser from another site with each persona's cookie.
const MUTATING: [string, string, () => string, () => unknown][] = [
  ["POST", "dashboards", () => `/api/workspaces/${fx.roles.workspace.id}/dashboards`, () => ({ spec: dashboardSpec(fx.source.id) })],
  ["PUT", "dashboard", () => `/api/dashboards/${dashboardId}`, () => ({ version: 1, spec: dashboardSpec(fx.source.id) })],
  ["DELETE", "dashboard", () => `/api/dashboards/${dashboardId}`, () => undefined],
  ["POST", "sources", () => `/api/workspaces/${fx.roles.workspace.id}/sources`, sourceBody],
  ["PUT", "source", () => `/api/sources/${fx.source.id}`, () => ({ version: 1, notes: "x" })],
  ["DELETE", "source", () => `/api/sources/${fx.source.id}`, () => undefined],
  ["POST", "source test", () => `/api/sources/${fx.source.id}/test`, () => undefined],
  ["POST", "catalog refresh", () => `/api/sources/${fx.source.id}/catalog/refresh`, () => undefined],
  ["POST", "query-preview", () => `/api/workspaces/${fx.roles.workspace.id}/query-preview`, previewBody],
  ["PUT", "limits", () => `/api/workspaces/${fx.roles.workspace.id}/limits`, () => ({ llmRatePerMinute: 1, llmDailyTokenBudget: 1 })],
];

describe("cross-site mutating requests are refused for every persona", () => {
  const rows = MUTATING.flatMap(([method, name, path, body]) =>
    PERSONAS.flatMap((persona) => [
      [`${method} ${name} as ${persona}, Origin: evil`, method, path, body, persona, { origin: "https://evil.example" }] as const,
      [`${method} ${name} as ${persona}, Sec-Fetch-Site: cross-site`, method, path, body, persona, { "sec-fetch-site": "cross-site" }] as const,
    ]),
  );
  test.each(rows)("%s", async (_label, method, path, body, persona, headers) => {
    const res = await call(fx.app, fx.roles.cookies[persona], method, path(), body(), headers);
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe("cross_site_request");
  });

  test("after all of that the targets are untouched", async () => {
    const d = await (await call(fx.app, fx.roles.cookies.viewer, "GET", `/api/dashboards/${dashboardId}`)).json();
    expect(d.version).toBe(1);
    const s = await (await call(fx.app, fx.roles.cookies.admin, "GET", `/api/sources/${fx.source.id}`)).json();
    expect(s.notes).not.toBe("x");
  });
});
