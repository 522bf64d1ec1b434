import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../../../lib/auth/session.ts";
import { type RoleFixture, expectSignedIn, requestAs, roleTable, seedRoleFixture } from "../../../lib/auth/testing/role-table.ts";
import { parseConfig } from "../../../lib/config/parse.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import type { OidcLogin } from "../../../lib/oidc/login.ts";
import { testAppDeps } from "../../testing/app-deps.ts";
import { createTestConfigStore } from "../../../lib/testing/pg.ts";
import { createApp } from "../../app.ts";
import { AUTH_ROLE_CASES } from "../../testing/auth.security.cases.ts";

const SECRET = "role-table-secret-role-table-secret-0123";
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let app: Hono;
let fixture: RoleFixture;
const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: 3600 });

beforeAll(async () => {
  store = await createTestConfigStore();
  const { config } = parseConfig({ DATABASE_URL: store.url, SESSION_SECRET: SECRET, PUBLIC_BASE_URL: "https://dash.example.com" });
  const deps = testAppDeps(config, { pool: store.pool, log: createLogger({ silent: true }) });
  app = createApp({ ...deps, oidc: null });
  fixture = await seedRoleFixture(store.pool, sessions, config.SESSION_COOKIE_NAME);
});
afterAll(() => store.close());

describe("role table", () => {
  roleTable(AUTH_ROLE_CASES, () => ({ app, fixture }));
});

describe("what each persona sees", () => {
  test("/api/workspaces lists only my workspaces, with my role", async () => {
    const body = async (p: "viewer" | "admin" | "outsider") =>
      (await (await requestAs(app, fixture, p, { method: "GET", path: "/api/workspaces", expect: expectSignedIn() })).json()) as {
        workspaces: { id: string; role: string; groups?: unknown }[];
      };
    expect((await body("viewer")).workspaces).toEqual([{ id: fixture.workspace.id, name: fixture.workspace.name, role: "viewer" }]);
    const admin = (await body("admin")).workspaces;
    expect(admin).toHaveLength(1);
    expect(admin[0]).toMatchObject({ id: fixture.workspace.id, role: "admin", groups: { admin: fixture.workspace.admin_group } });
    expect((await body("outsider")).workspaces.map((w) => w.id)).toEqual([fixture.otherWorkspace.id]);
  });

  test("the highest role wins when a user is in several groups of one workspace", async () => {
    const cookie = `${fixture.cookieName}=${await sessions.mint({
      sub: "multi",
      groups: [fixture.workspace.viewer_group, fixture.workspace.editor_group],
    })}`;
    const res = await app.request(`/api/workspaces/${fixture.workspace.id}`, { headers: { cookie } });
    expect(await res.json()).toMatchObject({ role: "editor" });
  });

  test("/api/me carries the session's identity and workspaces, never the token", async () => {
    const res = await app.request("/api/me", { headers: { cookie: fixture.cookies.editor! } });
    expect(res.status).toBe(200);
    const me = await res.json();
    expect(me).toEqual({
      sub: fixture.users.editor.sub,
      name: "Ed Editor",
      email: null,
      groups: fixture.users.editor.groups,
      workspaces: [{ id: fixture.workspace.id, name: fixture.workspace.name, role: "editor" }],
      accountUrl: null,
    });
    expect(JSON.stringify(me)).not.toContain(fixture.cookies.editor!.split("=")[1]);
  });

  test("a 401 is problem+json with the stable code and a request id", async () => {
    const res = await app.request("/api/me");
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = await res.json();
    expect(body).toMatchObject({ code: "unauthenticated", status: 401 });
    expect(body.requestId).toEqual(expect.any(String));
  });

  test("a 404 for another workspace looks exactly like a 404 for a missing one", async () => {
    const other = await app.request(`/api/workspaces/${fixture.otherWorkspace.id}`, { headers: { cookie: fixture.cookies.admin! } });
    const missing = await app.request("/api/workspaces/ws_missing", { headers: { cookie: fixture.cookies.admin! } });
    expect(other.status).toBe(404);
    const strip = (b: Record<string, unknown>) => ({ ...b, requestId: undefined });
    expect(strip(await other.json())).toEqual(strip(await missing.json()));
  });
});

describe("session cookie handling at the edge", () => {
  const hostileCookies: [string, (f: RoleFixture) => string][] = [
    ["a token signed with another secret", () => "svc_session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4IiwiZ3JvdXBzIjpbXX0.AAAA"],
    ["an oversized cookie", () => `svc_session=${"a".repeat(8000)}`],
    ["garbage", () => "svc_session=%%%garbage%%%"],
    ["the session under another cookie name", (f) => `other=${f.cookies.admin!.split("=")[1]}`],
    ["an empty cookie", () => "svc_session="],
  ];
  test.each(hostileCookies)("%s is a 401", async (_name, cookie) => {
    const res = await app.request("/api/me", { headers: { cookie: cookie(fixture) } });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: "unauthenticated" });
  });
});

describe("cross-site mutating requests", () => {
  const crossSite: [string, Record<string, string>, number][] = [
    ["Origin of another site", { origin: "https://evil.example" }, 403],
    ["Origin null (sandboxed frame)", { origin: "null" }, 403],
    ["Origin of a sibling subdomain", { origin: "https://evil.dash.example.com" }, 403],
    ["Origin http instead of https", { origin: "http://dash.example.com" }, 403],
    ["Sec-Fetch-Site cross-site without Origin", { "sec-fetch-site": "cross-site" }, 403],
    ["our Origin", { origin: "https://dash.example.com" }, 204],
    ["Sec-Fetch-Site same-origin", { "sec-fetch-site": "same-origin" }, 204],
    ["no Origin and no Sec-Fetch-Site (a script)", {}, 204],
  ];
  test.each(crossSite)("POST /api/auth/logout with %s → %i", async (_name, headers, status) => {
    const cookie = await fixture.mintCookie(fixture.users.admin);
    const res = await app.request("/api/auth/logout", { method: "POST", headers: { ...headers, cookie } });
    expect(res.status).toBe(status);
    if (status === 403) {
      expect(await res.json()).toMatchObject({ code: "cross_site_request" });
      expect(res.headers.get("set-cookie")).toBeNull();
      // A refused logout ends nothing.
      expect((await app.request("/api/me", { headers: { cookie } })).status).toBe(200);
    }
  });

  test.each(crossSite.filter(([, , status]) => status === 403))(
    "POST /api/auth/sessions/revoke with %s → 403, nothing revoked",
    async (_name, headers) => {
      const cookie = await fixture.mintCookie({ ...fixture.users.viewer, sub: `cross-site-${Math.random()}` });
      const res = await app.request("/api/auth/sessions/revoke", { method: "POST", headers: { ...headers, cookie } });
      expect(res.status).toBe(403);
      expect((await app.request("/api/me", { headers: { cookie } })).status).toBe(200);
    },
  );

  test("logout clears the session cookie", async () => {
    const res = await app.request("/api/auth/logout", {
      method: "POST",
      headers: { cookie: await fixture.mintCookie(fixture.users.admin) },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("set-cookie")).toMatch(/^svc_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Lax/);
  });

  test("login without a configured identity provider is a clear 503", async () => {
    const res = await app.request("/api/auth/login");
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: "identity_provider_unavailable", detail: expect.stringContaining("OIDC_ISSUER") });
  });

  test("a callback without a login cookie is a clear 400, as an HTML page for browsers", async () => {
    const res = await app.request("/api/auth/callback?code=x&state=y", { headers: { accept: "text/html" } });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();
    expect(html).toContain("Sign-in failed");
    expect(html).not.toMatch(/at .*\.ts:\d+/);
  });
});

describe("in production", () => {
  test("session cookies get the Secure attribute", async () => {
    const { config } = parseConfig({
      NODE_ENV: "production",
      DATABASE_URL: store.url,
      SESSION_SECRET: SECRET,
      SOURCE_SECRET_REFS: "REF:ws_1",
    });
    const deps = testAppDeps(config, { pool: store.pool, log: createLogger({ silent: true }) });
    const prodApp = createApp({ ...deps, oidc: null });
    const res = await prodApp.request("/api/auth/logout", {
      method: "POST",
      headers: { cookie: await fixture.mintCookie(fixture.users.admin) },
    });
    expect(res.headers.get("set-cookie")).toMatch(/^svc_session=; Max-Age=0; Path=\/; HttpOnly; Secure; SameSite=Lax/);
    // The same token works there: verification is local and only needs the secret.
    expect((await prodApp.request("/api/me", { headers: { cookie: fixture.cookies.admin! } })).status).toBe(200);
  });
});

describe("an identity provider that sends very many groups", () => {
  // Enterprise directories send hundreds of long group names; a session cookie over ~4 KB is dropped
  // by browsers (and refused by verify), which would send the user round the sign-in loop for good.
  test("the session keeps the workspace groups that matter and stays a cookie browsers accept", async () => {
    const { config } = parseConfig({ DATABASE_URL: store.url, SESSION_SECRET: SECRET, PUBLIC_BASE_URL: "https://dash.example.com" });
    const deps = testAppDeps(config, { pool: store.pool, log: createLogger({ silent: true }) });
    const noise = Array.from({ length: 200 }, (_, i) => `CN=Department distribution list ${i},OU=Groups,DC=corp,DC=example,DC=com`);
    const groups = [...noise.slice(0, 100), fixture.workspace.editor_group, ...noise.slice(100)];
    const tx = { state: "st", nonce: "no", codeVerifier: "cv", redirectUri: "https://dash.example.com/api/auth/callback", returnTo: "/" };
    const oidc: OidcLogin = {
      begin: async () => ({ authorizationUrl: new URL("https://idp.example.com/authorize"), transaction: tx }),
      complete: async () => ({ sub: "many-groups", name: "Manny Groups", groups }),
    };
    const readiness = { ...deps.readiness, checkIdentityProvider: async () => ({ status: "ok" as const }) };
    const appWithIdp = createApp({ ...deps, readiness, oidc });
    const login = await appWithIdp.request("/api/auth/login");
    expect(login.status).toBe(302);
    const loginCookie = login.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const callback = await appWithIdp.request("/api/auth/callback?code=c&state=st", { headers: { cookie: loginCookie } });
    expect(callback.status).toBe(302);
    const session = callback.headers.getSetCookie().find((c) => c.startsWith(`${fixture.cookieName}=`))!;
    const pair = session.split(";")[0];
    expect(pair.length).toBeLessThanOrEqual(4096);
    const me = await appWithIdp.request("/api/me", { headers: { cookie: pair } });
    expect(me.status).toBe(200);
    const body = await me.json();
    expect(body.groups).toEqual([fixture.workspace.editor_group]);
    expect(body.workspaces).toEqual([expect.objectContaining({ id: fixture.workspace.id, role: "editor" })]);
  });

  test("the platform admin group is kept too", async () => {
    const { config } = parseConfig({
      DATABASE_URL: store.url,
      SESSION_SECRET: SECRET,
      PUBLIC_BASE_URL: "https://dash.example.com",
      PLATFORM_ADMIN_GROUP: "platform-admins",
    });
    const deps = testAppDeps(config, { pool: store.pool, log: createLogger({ silent: true }) });
    const noise = Array.from({ length: 200 }, (_, i) => `CN=Department distribution list ${i},OU=Groups,DC=corp,DC=example,DC=com`);
    const tx = { state: "st", nonce: "no", codeVerifier: "cv", redirectUri: "https://dash.example.com/api/auth/callback", returnTo: "/" };
    const oidc: OidcLogin = {
      begin: async () => ({ authorizationUrl: new URL("https://idp.example.com/authorize"), transaction: tx }),
      complete: async () => ({ sub: "many-groups-admin", groups: [...noise.slice(0, 150), "platform-admins", ...noise.slice(150)] }),
    };
    const readiness = { ...deps.readiness, checkIdentityProvider: async () => ({ status: "ok" as const }) };
    const appWithIdp = createApp({ ...deps, readiness, oidc });
    const login = await appWithIdp.request("/api/auth/login");
    const loginCookie = login.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const callback = await appWithIdp.request("/api/auth/callback?code=c&state=st", { headers: { cookie: loginCookie } });
    const pair = callback.headers
      .getSetCookie()
      .find((c) => c.startsWith(`${fixture.cookieName}=`))!
      .split(";")[0];
    expect((await (await appWithIdp.request("/api/me", { headers: { cookie: pair } })).json()).groups).toEqual(["platform-admins"]);
    expect((await appWithIdp.request("/api/admin/workspaces", { headers: { cookie: pair } })).status).toBe(200);
  });
});
