import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PERSONAS, roleTable } from "../lib/auth/testing/role-table.ts";
import { createApiToken } from "../lib/api-tokens/store.ts";
import { saveDashboard } from "../lib/dashboards/save.ts";
import type { Source } from "../lib/sources/index.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "./testing/api-fixture.ts";
import { API_ROLE_CASES, type ApiRoleFixture, type ConsumedQueue, previewBody, sourceBody } from "./testing/api.security.cases.ts";

// Every route of the JSON API × {anonymous, viewer, editor, admin, admin of another workspace}
// (the table is API_ROLE_CASES in testing/api.security.cases.ts). Routes that succeed for several personas and
// consume their resource (PUT, DELETE) take a fresh resource per request from a queue filled in beforeAll.

let fx: ApiFixture;
let fixture: ApiRoleFixture;
const queues: Record<ConsumedQueue, string[]> = { putDashboard: [], deleteDashboard: [], putSource: [], deleteSource: [] };
let dashboardId: string;
let otherDashboardId: string;

const QUEUED = 5; // one per persona

async function newDashboard(workspaceId: string, source: Source): Promise<string> {
  // A custom variable, so that the role table can read its options.
  const spec = dashboardSpec(source.id, { variables: [{ name: "env", type: "custom" as const, values: ["prod", "staging"] }] });
  const d = await saveDashboard({ pool: fx.pool, guard: fx.guard }, { workspaceId, userSub: "seed", spec });
  return d.id;
}

function take(queue: ConsumedQueue): string {
  const id = queues[queue].shift();
  if (!id) throw new Error(`queue ${queue} is empty`);
  return id;
}

beforeAll(async () => {
  fx = await createApiFixture();
  const ws = fx.roles.workspace.id;
  dashboardId = await newDashboard(ws, fx.source);
  otherDashboardId = await newDashboard(fx.roles.otherWorkspace.id, fx.otherSource);
  for (let i = 0; i < QUEUED; i++) {
    queues.putDashboard.push(await newDashboard(ws, fx.source));
    queues.deleteDashboard.push(await newDashboard(ws, fx.source));
    queues.putSource.push((await fx.newSource(`put ${i}`)).id);
    queues.deleteSource.push((await fx.newSource(`delete ${i}`)).id);
  }
  const token = await createApiToken(fx.pool, {
    workspaceId: ws,
    name: "role table",
    role: "viewer",
    createdBy: "seed",
    expiresAt: null,
    createdAt: new Date(),
  });
  fixture = { ...fx.roles, api: fx, dashboardId, otherDashboardId, tokenId: token.stored.id, take };
});
afterAll(() => fx.close());

describe("role table", () => {
  roleTable(API_ROLE_CASES, () => ({ app: fx.app, fixture }));
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
  ["POST", "restore", () => `/api/dashboards/${dashboardId}/versions/1/restore`, () => ({ version: 1 })],
  ["POST", "sources", () => `/api/workspaces/${fx.roles.workspace.id}/sources`, () => sourceBody(fx)],
  ["PUT", "source", () => `/api/sources/${fx.source.id}`, () => ({ version: 1, notes: "x" })],
  ["DELETE", "source", () => `/api/sources/${fx.source.id}`, () => undefined],
  ["POST", "source test", () => `/api/sources/${fx.source.id}/test`, () => undefined],
  ["POST", "catalog refresh", () => `/api/sources/${fx.source.id}/catalog/refresh`, () => undefined],
  ["POST", "sql check", () => `/api/sources/${fx.source.id}/check`, () => ({ sql: "SELECT 1" })],
  ["POST", "query-preview", () => `/api/workspaces/${fx.roles.workspace.id}/query-preview`, () => previewBody(fx)],
  ["PUT", "limits", () => `/api/workspaces/${fx.roles.workspace.id}/limits`, () => ({ llmRatePerMinute: 1, llmDailyTokenBudget: 1 })],
  ["POST", "tokens", () => `/api/workspaces/${fx.roles.workspace.id}/tokens`, () => ({ name: "cross-site", role: "admin" })],
  ["DELETE", "token", () => `/api/workspaces/${fx.roles.workspace.id}/tokens/${fixture.tokenId}`, () => undefined],
];

describe("cross-site mutating requests are refused for every persona", () => {
  const rows = MUTATING.flatMap(([method, name, path, body]) =>
    PERSONAS.flatMap((persona) => [
      [`${method} ${name} as ${persona}, Origin: evil`, method, path, body, persona, { origin: "https://evil.example" }] as const,
      [
        `${method} ${name} as ${persona}, Sec-Fetch-Site: cross-site`,
        method,
        path,
        body,
        persona,
        { "sec-fetch-site": "cross-site" },
      ] as const,
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
