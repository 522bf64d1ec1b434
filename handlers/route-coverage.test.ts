import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RoleCase, RoleFixture } from "../lib/auth/testing/role-table.ts";
import { AI_ROLE_CASES, type AiRoleFixture } from "./testing/ai.security.cases.ts";
import { type ApiFixture, call, createApiFixture } from "./testing/api-fixture.ts";
import { AUTH_ROLE_CASES } from "./testing/auth.security.cases.ts";
import { API_ROLE_CASES, type ApiRoleFixture } from "./testing/api.security.cases.ts";

// Every /api route the handlers app serves must have a row in one of the role tables (anonymous,
// viewer, editor, admin, a member of another workspace), or be listed below as public with a reason.
// Without this, a new route could ship with a guard nobody tests.

/** Served to callers without a session by design, so no role table covers them. */
const PUBLIC_ROUTES: Record<string, string> = {
  "GET /api/health": "liveness probe: answers without touching any dependency, sessions included",
  "GET /api/ready": "readiness probe: the load balancer calls it without a session",
  "GET /api/openapi.json": "describes the API and holds no data (testing/api.security.cases.ts still pins 200 for every persona)",
  "GET /api/metrics": "guarded by the metrics gate (token and/or CIDR list), not by sessions; gate.test.ts and metrics.test.ts cover it",
  "GET /api/auth/login": "starts sign-in, so its callers have no session yet",
  "GET /api/auth/callback":
    "the identity provider's redirect back, before a session exists; routes/auth/security.test.ts and routes/auth/e2e.test.ts cover it",
};

interface Route {
  method: string;
  path: string;
}
/** One role-table case as the request it sends: which table, which method, which concrete path. */
interface Addressed extends Route {
  table: string;
}

const key = (r: Route) => `${r.method} ${r.path}`;

/** The method and pattern of every /api route the app serves, in registration order, without middleware. */
function servedRoutes(app: ApiFixture["app"]): Route[] {
  const seen = new Map<string, Route>();
  for (const r of app.routes) {
    if (r.method === "ALL" || !r.path.startsWith("/api/")) continue;
    seen.set(key(r), { method: r.method, path: r.path });
  }
  return [...seen.values()];
}

function patternOf(path: string): RegExp {
  // Only plain `:name` segments are understood; a wildcard, optional or regex param would be matched wrongly.
  if (/[*?{]/.test(path)) throw new Error(`route-coverage.test.ts cannot match ${path} yet: teach patternOf its syntax`);
  const source = path
    .split("/")
    .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}$`);
}

/** The served route a request reaches: the first registered one whose method and pattern match, as Hono dispatches. */
function routeFor(served: Route[], method: string, url: string): Route | undefined {
  const path = url.split("?")[0];
  return served.find((r) => r.method === method && patternOf(r.path).test(path));
}

/** Served routes that are neither public nor reached by any case, as `METHOD /pattern`. */
function uncovered(served: Route[], cases: Addressed[]): string[] {
  const reached = new Set(cases.map((c) => routeFor(served, c.method, c.path)).flatMap((r) => (r ? [key(r)] : [])));
  return served.map(key).filter((k) => !(k in PUBLIC_ROUTES) && !reached.has(k));
}

function addressed<F extends RoleFixture>(table: string, cases: RoleCase<F>[], fixture: F): Addressed[] {
  return cases.map((rc) => ({ table, method: rc.method, path: typeof rc.path === "function" ? rc.path(fixture) : rc.path }));
}

let fx: ApiFixture;
let served: Route[];
let cases: Addressed[];

beforeAll(async () => {
  fx = await createApiFixture();
  served = servedRoutes(fx.app);
  // A route parameter matches any id, so the resources the tables seed can be placeholders here.
  const id = "x_route_coverage";
  const apiFixture: ApiRoleFixture = { ...fx.roles, api: fx, dashboardId: id, otherDashboardId: id, tokenId: id, take: () => id };
  const aiFixture: AiRoleFixture = {
    ...fx.roles,
    sourceId: id,
    neverRefreshedId: id,
    dashboardId: id,
    spec: { title: "placeholder", time: { from: "now-1h", to: "now" }, panels: [] },
  };
  cases = [
    ...addressed("handlers/security.test.ts", API_ROLE_CASES, apiFixture),
    ...addressed("handlers/routes/auth/security.test.ts", AUTH_ROLE_CASES, fx.roles),
    ...addressed("handlers/routes/ai/security.test.ts", AI_ROLE_CASES, aiFixture),
  ];
});
afterAll(() => fx.close());

describe("role-table coverage of the handlers app", () => {
  test("the app serves the /api routes this check reads (the enumeration is not empty)", () => {
    expect(served.map(key)).toEqual(
      expect.arrayContaining(["GET /api/me", "GET /api/dashboards/:dashboardId", "POST /api/workspaces/:workspaceId/generate"]),
    );
  });

  test("every served /api route that is not public has a case in a role table", () => {
    const hint =
      "add a case for it to testing/api.security.cases.ts, testing/auth.security.cases.ts or testing/ai.security.cases.ts, or a reason to PUBLIC_ROUTES";
    expect(uncovered(served, cases), hint).toEqual([]);
  });

  test("every role-table case reaches a served route (no stale rows)", () => {
    const stray = cases.filter((c) => !routeFor(served, c.method, c.path)).map((c) => `${c.table}: ${c.method} ${c.path}`);
    expect(stray).toEqual([]);
  });

  test("every public exclusion is a route the app serves (no stale exclusions)", () => {
    const servedKeys = new Set(served.map(key));
    expect(Object.keys(PUBLIC_ROUTES).filter((k) => !servedKeys.has(k))).toEqual([]);
  });

  test.each(Object.keys(PUBLIC_ROUTES))("%s answers the same with and without a session (it does not look at one)", async (route) => {
    const [method, path] = route.split(" ");
    const anonymous = await call(fx.app, null, method, path);
    const admin = await call(fx.app, fx.roles.cookies.admin, method, path);
    expect(anonymous.status).not.toBe(401);
    expect(admin.status).toBe(anonymous.status);
  });

  test("a route no table reaches is reported, whatever its method", () => {
    const added = [
      ...served,
      { method: "GET", path: "/api/workspaces/:workspaceId/secrets" },
      { method: "PATCH", path: "/api/dashboards/:dashboardId" },
    ];
    expect(uncovered(added, cases)).toEqual(
      expect.arrayContaining(["GET /api/workspaces/:workspaceId/secrets", "PATCH /api/dashboards/:dashboardId"]),
    );
  });
});
