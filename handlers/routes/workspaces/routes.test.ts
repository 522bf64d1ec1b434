import type pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DASHBOARD_CHANGED_CHANNEL } from "../../../lib/dashboards/store.ts";
import { saveDashboard } from "../../../lib/dashboards/save.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "../../testing/api-fixture.ts";

// The platform admin's workspace routes (the role table in handlers/testing/api.security.cases.ts pins that nobody else may
// call them) and the member routes they change.
const PLATFORM = "pb-platform-admins";
let fx: ApiFixture;
let platform: string;

beforeAll(async () => {
  fx = await createApiFixture({ env: { PLATFORM_ADMIN_GROUP: PLATFORM } });
  platform = await fx.roles.mintCookie({ sub: "platform-admin", name: "Pat Platform", groups: [PLATFORM] });
});
afterAll(() => fx.close());

const asPlatform = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  call(fx.app, platform, method, path, body, headers);
const groups = (p: string) => ({ viewer: `${p}-viewers`, editor: `${p}-editors`, admin: `${p}-admins` });

describe("create", () => {
  test("a platform admin creates a workspace; a member of its groups then sees it with the matching role", async () => {
    const res = await asPlatform("POST", "/api/admin/workspaces", { name: "  Checkout  ", groups: groups("checkout") });
    expect(res.status).toBe(201);
    const ws = await res.json();
    expect(ws).toMatchObject({ name: "Checkout", groups: groups("checkout"), dashboards: 0, sources: 0 });
    expect(ws.id).toMatch(/^ws_[A-Za-z0-9_-]{16}$/);
    expect(res.headers.get("location")).toBe(`/api/admin/workspaces/${ws.id}`);

    const editor = await fx.roles.mintCookie({ sub: "checkout-editor", groups: ["checkout-editors"] });
    const mine = await (await call(fx.app, editor, "GET", "/api/workspaces")).json();
    expect(mine.workspaces).toEqual([{ id: ws.id, name: "Checkout", role: "editor" }]);
  });

  test("an id of the operator's choosing is kept; a second workspace with it is a 409", async () => {
    const first = await asPlatform("POST", "/api/admin/workspaces", { id: "ws_payments", name: "Payments", groups: groups("pay") });
    expect(first.status).toBe(201);
    expect((await first.json()).id).toBe("ws_payments");
    const again = await asPlatform("POST", "/api/admin/workspaces", { id: "ws_payments", name: "Other", groups: groups("pay2") });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: "conflict" });
  });

  test.each([
    ["no name", { groups: groups("x") }, "name"],
    ["a blank name", { name: "   ", groups: groups("x") }, "name"],
    ["a missing group", { name: "X", groups: { viewer: "v", editor: "e" } }, "groups.admin"],
    ["an id without the ws_ prefix", { id: "payments", name: "X", groups: groups("x") }, "id"],
    ["an id with a slash", { id: "ws_a/b", name: "X", groups: groups("x") }, "id"],
    ["a control character in a group", { name: "X", groups: { ...groups("x"), admin: "a\u0007" } }, "groups.admin"],
  ])("%s is a 400 naming the field", async (_label, body, field) => {
    const res = await asPlatform("POST", "/api/admin/workspaces", body);
    expect(res.status).toBe(400);
    const problem = await res.json();
    expect(problem.code).toBe("validation_failed");
    expect(problem.issues.map((i: { path: string }) => i.path)).toContain(field);
  });
});

describe("list, rename, set groups", () => {
  test("the list shows every workspace with its groups and counts, whoever the platform admin is a member of", async () => {
    const res = await asPlatform("GET", "/api/admin/workspaces");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const { workspaces } = await res.json();
    const fixture = workspaces.find((w: { id: string }) => w.id === fx.roles.workspace.id);
    expect(fixture).toMatchObject({
      name: fx.roles.workspace.name,
      groups: { viewer: fx.roles.workspace.viewer_group, editor: fx.roles.workspace.editor_group, admin: fx.roles.workspace.admin_group },
      sources: 1,
      dashboards: 0,
    });
    expect(workspaces.some((w: { id: string }) => w.id === fx.roles.otherWorkspace.id)).toBe(true);
    // Being a platform admin grants no role inside a workspace.
    expect((await asPlatform("GET", `/api/workspaces/${fx.roles.workspace.id}`)).status).toBe(404);
  });

  test("rename and a new editor group: the old group's members lose the role, the new group's members gain it", async () => {
    const ws = await (await asPlatform("POST", "/api/admin/workspaces", { name: "Search", groups: groups("search") })).json();
    const oldEditor = await fx.roles.mintCookie({ sub: "old-editor", groups: ["search-editors"] });
    const newEditor = await fx.roles.mintCookie({ sub: "new-editor", groups: ["search-team"] });

    const renamed = await asPlatform("PATCH", `/api/admin/workspaces/${ws.id}`, { name: "Search & ranking" });
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ name: "Search & ranking", groups: groups("search") });

    const regrouped = await asPlatform("PATCH", `/api/admin/workspaces/${ws.id}`, { groups: { editor: "search-team" } });
    expect((await regrouped.json()).groups).toEqual({ ...groups("search"), editor: "search-team" });
    expect((await call(fx.app, oldEditor, "GET", `/api/workspaces/${ws.id}`)).status).toBe(404);
    expect(await (await call(fx.app, newEditor, "GET", `/api/workspaces/${ws.id}`)).json()).toEqual({
      id: ws.id,
      name: "Search & ranking",
      role: "editor",
    });
    const read = await asPlatform("GET", `/api/admin/workspaces/${ws.id}`);
    expect(await read.json()).toMatchObject({ name: "Search & ranking", groups: { editor: "search-team" } });
  });

  test("an empty patch is a 400; a missing workspace is a 404", async () => {
    const empty = await asPlatform("PATCH", `/api/admin/workspaces/${fx.roles.workspace.id}`, {});
    expect(empty.status).toBe(400);
    expect((await asPlatform("PATCH", "/api/admin/workspaces/ws_missing", { name: "x" })).status).toBe(404);
    expect((await asPlatform("GET", "/api/admin/workspaces/ws_missing")).status).toBe(404);
    expect((await asPlatform("DELETE", "/api/admin/workspaces/ws_missing")).status).toBe(404);
  });
});

describe("delete", () => {
  test("an empty workspace is deleted", async () => {
    const ws = await (await asPlatform("POST", "/api/admin/workspaces", { name: "Empty", groups: groups("empty") })).json();
    expect((await asPlatform("DELETE", `/api/admin/workspaces/${ws.id}`)).status).toBe(204);
    expect((await asPlatform("GET", `/api/admin/workspaces/${ws.id}`)).status).toBe(404);
  });

  test("one with dashboards and sources is refused with 409 naming the counts; force=true deletes it with them and announces each dashboard", async () => {
    const ws = await (await asPlatform("POST", "/api/admin/workspaces", { name: "Busy", groups: groups("busy") })).json();
    const source = await fx.newSource("busy metrics", ws.id);
    const dash = await saveDashboard(
      { pool: fx.pool, guard: fx.guard },
      { workspaceId: ws.id, userSub: "seed", spec: dashboardSpec(source.id) },
    );

    const refused = await asPlatform("DELETE", `/api/admin/workspaces/${ws.id}`);
    expect(refused.status).toBe(409);
    const problem = await refused.json();
    expect(problem).toMatchObject({ code: "conflict", dashboards: 1, sources: 1 });
    expect(problem.detail).toContain("force=true");
    expect((await fx.pool.query("SELECT 1 FROM dashboards WHERE id = $1", [dash.id])).rowCount).toBe(1);

    const listener: pg.PoolClient = await fx.pool.connect();
    // Resolves when the deleted dashboard is announced (delivery to the listener is asynchronous).
    const announced = new Promise<void>((resolve) => {
      listener.on("notification", (n) => {
        if (n.channel === DASHBOARD_CHANGED_CHANNEL && n.payload === dash.id) resolve();
      });
    });
    await listener.query(`LISTEN ${DASHBOARD_CHANGED_CHANNEL}`);
    try {
      const forced = await asPlatform("DELETE", `/api/admin/workspaces/${ws.id}?force=true`);
      expect(forced.status).toBe(204);
      await announced;
    } finally {
      await listener.query(`UNLISTEN ${DASHBOARD_CHANGED_CHANNEL}`);
      listener.release();
    }
    const left = await fx.pool.query(
      "SELECT (SELECT count(*)::int FROM dashboards WHERE workspace_id = $1) + (SELECT count(*)::int FROM sources WHERE workspace_id = $1) AS n",
      [ws.id],
    );
    expect(left.rows[0].n).toBe(0);
  });

  test("force must be true or false", async () => {
    expect((await asPlatform("DELETE", `/api/admin/workspaces/${fx.roles.workspace.id}?force=yes`)).status).toBe(400);
    expect((await asPlatform("GET", `/api/admin/workspaces/${fx.roles.workspace.id}`)).status).toBe(200);
  });
});

describe("who may", () => {
  test("a workspace admin is not a platform admin: 403 with a detail that says what is needed", async () => {
    const res = await call(fx.app, fx.roles.cookies.admin, "POST", "/api/admin/workspaces", { name: "X", groups: groups("x") });
    expect(res.status).toBe(403);
    expect((await res.json()).detail).toContain("platform admin");
  });

  test("with PLATFORM_ADMIN_GROUP unset nobody is a platform admin, and the 403 says so", async () => {
    const bare = await createApiFixture();
    try {
      const cookie = await bare.roles.mintCookie({ sub: "would-be", groups: [PLATFORM] });
      const res = await call(bare.app, cookie, "GET", "/api/admin/workspaces");
      expect(res.status).toBe(403);
      expect((await res.json()).detail).toContain("PLATFORM_ADMIN_GROUP");
    } finally {
      await bare.close();
    }
  });

  test.each([
    ["POST", "/api/admin/workspaces", { name: "X", groups: { viewer: "v", editor: "e", admin: "a" } }],
    ["PATCH", "/api/admin/workspaces/WS", { name: "hijacked" }],
    ["DELETE", "/api/admin/workspaces/WS?force=true", undefined],
  ])("%s %s from another site is refused even for a platform admin", async (method, path, body) => {
    const res = await asPlatform(method, path.replace("WS", fx.roles.workspace.id), body, { origin: "https://evil.example" });
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe("cross_site_request");
    expect((await asPlatform("GET", `/api/admin/workspaces/${fx.roles.workspace.id}`)).status).toBe(200);
  });
});

describe("hostile input from a platform admin's session is a 400 that changes nothing", () => {
  const long = "x".repeat(70_000);
  const g = { viewer: "v", editor: "e", admin: "a" };
  test.each([
    ["a name of 70,000 characters", { name: long, groups: g }],
    ["a group of 70,000 characters", { name: "X", groups: { ...g, viewer: long } }],
    ["a newline in the name", { name: "a\nb", groups: g }],
    ["a DEL in a group", { name: "X", groups: { ...g, editor: "e\u007f" } }],
    ["a NUL in the name", { name: "a\u0000b", groups: g }],
    ["an id with SQL in it", { id: "ws_x'; DROP TABLE workspaces; --", name: "X", groups: g }],
    ["an id of 61 characters after ws_", { id: `ws_${"a".repeat(61)}`, name: "X", groups: g }],
    ["groups as an array", { name: "X", groups: ["v", "e", "a"] }],
    ["a number for a name", { name: 42, groups: g }],
    ["extra nesting", { name: { $ne: "" }, groups: g }],
  ])("POST with %s", async (_label, body) => {
    const before = (await fx.pool.query("SELECT count(*)::int AS n FROM workspaces")).rows[0].n;
    const res = await asPlatform("POST", "/api/admin/workspaces", body);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect((await fx.pool.query("SELECT count(*)::int AS n FROM workspaces")).rows[0].n).toBe(before);
  });

  test.each([
    ["a workspace id with a slash", "/api/admin/workspaces/ws_a%2Fb", 404],
    ["a workspace id of 200 characters", `/api/admin/workspaces/ws_${"a".repeat(197)}`, 400],
  ])("PATCH and DELETE on %s", async (_label, path, status) => {
    expect((await asPlatform("PATCH", path, { name: "x" })).status).toBe(status);
    expect((await asPlatform("DELETE", `${path}?force=true`)).status).toBe(status);
  });
});
