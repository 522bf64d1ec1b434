import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { onError } from "../http/problem.ts";
import { configStoreFault } from "../store/faults.ts";
import { createTestConfigStore } from "../testing/pg.ts";
import { getWorkspace } from "../workspaces/store.ts";
import { rejectCrossSite, requireRole, requireSession, workspaceFromParam } from "./middleware.ts";
import { roleIn } from "./roles.ts";
import { createSessionTokens } from "./session.ts";
import { type RoleCase, type RoleFixture, expectFor, roleTable, seedRoleFixture } from "./testing/role-table.ts";
import type { AuthVariables } from "./types.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let fixture: RoleFixture;
const sessions = createSessionTokens({ secret: "middleware-test-secret-0123456789abcdef", ttlSeconds: 600 });
const app = new Hono<{ Variables: AuthVariables }>();
app.onError(onError(() => {}, configStoreFault));

beforeAll(async () => {
  store = await createTestConfigStore();
  fixture = await seedRoleFixture(store.pool, sessions, "svc_session");
  const session = requireSession({ sessions, cookieName: "svc_session" });
  const ws = workspaceFromParam("ws");
  // A resource route: the workspace comes from loading the resource; unknown ids resolve to null.
  const byThing = async (c: { req: { param(n: string): string | undefined } }) =>
    c.req.param("thing") === "thing-1" ? fixture.workspace.id : null;
  for (const role of ["viewer", "editor", "admin"] as const) {
    app.get(`/ws/:ws/${role}`, session, requireRole(role, ws, { findWorkspace: (id) => getWorkspace(store.pool, id) }), (c) =>
      c.json({ workspaceId: c.var.workspaceId, role: c.var.role, sub: c.var.user.sub }),
    );
  }
  app.delete(
    "/things/:thing",
    rejectCrossSite({}),
    session,
    requireRole("editor", byThing as never, { findWorkspace: (id) => getWorkspace(store.pool, id) }),
    (c) => c.body(null, 204),
  );
});
afterAll(() => store.close());

const cases: RoleCase[] = [
  { method: "GET", path: (f) => `/ws/${f.workspace.id}/viewer`, name: "viewer route", expect: expectFor("viewer") },
  { method: "GET", path: (f) => `/ws/${f.workspace.id}/editor`, name: "editor route", expect: expectFor("editor") },
  { method: "GET", path: (f) => `/ws/${f.workspace.id}/admin`, name: "admin route", expect: expectFor("admin") },
  { method: "DELETE", path: "/things/thing-1", name: "editor resource route", expect: expectFor("editor", 204) },
  {
    method: "DELETE",
    path: "/things/thing-404",
    name: "missing resource",
    expect: { anonymous: 401, viewer: 404, editor: 404, admin: 404, outsider: 404 },
  },
];

describe("requireRole", () => {
  roleTable(cases, () => ({ app, fixture }));

  test("sets workspaceId and role for the handler", async () => {
    const res = await app.request(`/ws/${fixture.workspace.id}/editor`, { headers: { cookie: fixture.cookies.admin! } });
    expect(await res.json()).toEqual({ workspaceId: fixture.workspace.id, role: "admin", sub: fixture.users.admin.sub });
  });

  test("a 403 names the role needed and the role held", async () => {
    const res = await app.request(`/ws/${fixture.workspace.id}/admin`, { headers: { cookie: fixture.cookies.editor! } });
    expect(await res.json()).toMatchObject({ code: "forbidden", requiredRole: "admin", role: "editor" });
  });

  test("a cross-site DELETE is refused before the session or the role is looked at", async () => {
    const res = await app.request("/things/thing-1", {
      method: "DELETE",
      headers: { cookie: fixture.cookies.admin!, origin: "https://evil.example" },
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: "cross_site_request" });
  });

  test("a same-origin DELETE (Origin equals the request's origin) passes", async () => {
    const res = await app.request("http://localhost/things/thing-1", {
      method: "DELETE",
      headers: { cookie: fixture.cookies.admin!, origin: "http://localhost" },
    });
    expect(res.status).toBe(204);
  });
});

describe("roleIn", () => {
  const ws = { viewer_group: "v", editor_group: "e", admin_group: "a" };
  test.each([
    [[], null],
    [["x"], null],
    [["v"], "viewer"],
    [["e"], "editor"],
    [["a"], "admin"],
    [["v", "a"], "admin"],
    [["e", "v"], "editor"],
    [["V"], null],
    [[""], null],
  ] as const)("%j → %s", (groups, role) => {
    expect(roleIn([...groups], ws)).toBe(role);
  });

  test("an empty group name in a workspace grants nothing, even to a user with an empty group", () => {
    expect(roleIn([""], { viewer_group: "", editor_group: "", admin_group: "" })).toBeNull();
  });
});
