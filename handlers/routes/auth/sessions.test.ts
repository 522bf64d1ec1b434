// Ending sessions on the server: logout, "sign out everywhere", an admin ending a user's sessions, and
// the lifetime rules, through the handlers app (app.request, real PostgreSQL).
import type { Hono } from "hono";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createRevocationSet, listenForRevocations } from "../../../lib/auth/revocations.ts";
import { createSessionTokens } from "../../../lib/auth/session.ts";
import { type RoleFixture, seedRoleFixture } from "../../../lib/auth/testing/role-table.ts";
import type { SessionUser } from "../../../lib/auth/types.ts";
import { parseConfig } from "../../../lib/config/parse.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { testAppDeps } from "../../testing/app-deps.ts";
import { listenerClientFactory } from "../../../lib/store/listen.ts";
import { createConfigStorePool } from "../../../lib/store/pool.ts";
import { createTestConfigStore } from "../../../lib/testing/pg.ts";
import { createApp } from "../../app.ts";

const SECRET = "session-revocation-secret-0123456789abc";
const TTL = 3600;
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let app: Hono;
let fixture: RoleFixture;
const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: TTL });
const config = () => parseConfig({ DATABASE_URL: store.url, SESSION_SECRET: SECRET, SESSION_TTL_SECONDS: String(TTL) }).config;

beforeAll(async () => {
  store = await createTestConfigStore();
  app = createApp({ ...testAppDeps(config(), { pool: store.pool, log: createLogger({ silent: true }) }), oidc: null });
  fixture = await seedRoleFixture(store.pool, sessions, "svc_session");
});
afterAll(() => store.close());

let users = 0;
/** A user of its own (so revoking all their sessions touches no other test) with the fixture's viewer role. */
const newUser = (): SessionUser => ({ sub: `revocation-user-${++users}`, groups: [fixture.workspace.viewer_group] });
const cookieOf = async (u: SessionUser, tokens = sessions) => `svc_session=${await tokens.mint(u)}`;
const me = async (cookie: string, on: Pick<Hono, "request"> = app) => (await on.request("/api/me", { headers: { cookie } })).status;
const post = (path: string, cookie: string | null, body?: unknown, on: Pick<Hono, "request"> = app) =>
  on.request(path, {
    method: "POST",
    headers: { ...(cookie ? { cookie } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
const revocationRows = async (sessionId: string) =>
  (await store.pool.query("SELECT sub, expires_at FROM session_revocations WHERE session_id = $1", [sessionId])).rows;

describe("POST /api/auth/logout ends the session on the server", () => {
  test("the same cookie is then refused everywhere: API routes 401, pages send the browser to sign in", async () => {
    const u = newUser();
    const cookie = await cookieOf(u);
    expect(await me(cookie)).toBe(200);

    const out = await post("/api/auth/logout", cookie);
    expect(out.status).toBe(204);

    // The browser dropped the cookie, but whoever copied it still holds it:
    expect(await me(cookie)).toBe(401);
    expect((await app.request("/api/workspaces", { headers: { cookie } })).status).toBe(401);
    expect((await app.request(`/api/workspaces/${fixture.workspace.id}/dashboards`, { headers: { cookie } })).status).toBe(401);
    const page = await app.request("/", { headers: { cookie, accept: "text/html" } });
    expect(page.status).toBe(302);
    expect(page.headers.get("location")).toMatch(/^\/api\/auth\/login/);
  });

  test("the revocation is stored with the token's own expiry, so it lives exactly as long as the token could", async () => {
    const cookie = await cookieOf(newUser());
    const session = (await sessions.verifySession(cookie.split("=")[1]))!;
    expect((await post("/api/auth/logout", cookie)).status).toBe(204);
    const rows = await revocationRows(session.sessionId);
    expect(rows).toEqual([{ sub: session.user.sub, expires_at: new Date(session.expiresAt) }]);
  });

  test("only the session that logs out ends: another session of the same user keeps working", async () => {
    const u = newUser();
    const [laptop, phone] = [await cookieOf(u), await cookieOf(u)];
    expect((await post("/api/auth/logout", laptop)).status).toBe(204);
    expect(await me(laptop)).toBe(401);
    expect(await me(phone)).toBe(200);
  });

  test.each([
    ["no cookie", null],
    ["a garbage cookie", "svc_session=garbage"],
    ["a token signed with another secret", "svc_session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.AAAA"],
  ])("logout with %s is a 204 that records nothing", async (_name, cookie) => {
    const count = async () => Number((await store.pool.query("SELECT count(*) FROM session_revocations")).rows[0].count);
    const before = await count();
    expect((await post("/api/auth/logout", cookie)).status).toBe(204);
    expect(await count()).toBe(before);
  });

  test("logging out twice is fine: the second is a 204 and the session stays ended", async () => {
    const cookie = await cookieOf(newUser());
    expect((await post("/api/auth/logout", cookie)).status).toBe(204);
    expect((await post("/api/auth/logout", cookie)).status).toBe(204);
    expect(await me(cookie)).toBe(401);
  });

  test("another instance learns the logout through LISTEN/NOTIFY and refuses the cookie", async () => {
    const set = createRevocationSet();
    const deps = testAppDeps(config(), { pool: store.pool, log: createLogger({ silent: true }) });
    const listener = listenForRevocations({ set, pool: store.pool, connect: listenerClientFactory(store.url), log: deps.log });
    const other = createApp({ ...deps, oidc: null, revocations: set });
    try {
      await listener.start();
      await listener.ready;
      const cookie = await cookieOf(newUser());
      expect(await me(cookie, other)).toBe(200);
      expect((await post("/api/auth/logout", cookie)).status).toBe(204);
      const deadline = Date.now() + 10_000;
      while ((await me(cookie, other)) !== 401) {
        if (Date.now() > deadline) throw new Error("the other instance never refused the logged-out session");
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await listener.close();
    }
  });

  test("with the config store unreachable, logout still clears the cookie but answers 503: the session could not be ended", async () => {
    const dead = createConfigStorePool({ connectionString: store.url, max: 1 });
    await dead.end();
    const deps = testAppDeps(config(), { pool: dead, log: createLogger({ silent: true }) });
    const offline = createApp({ ...deps, oidc: null });
    const cookie = await cookieOf(newUser());
    const res = await post("/api/auth/logout", cookie, undefined, offline);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(res.headers.get("set-cookie")).toMatch(/^svc_session=; Max-Age=0/);
    expect(await res.json()).toMatchObject({ code: "config_store_unavailable" });

    const all = await post("/api/auth/sessions/revoke", cookie, undefined, offline);
    expect(all.status).toBe(503);
    expect(await all.json()).toMatchObject({ code: "config_store_unavailable" });
  });
});

describe("POST /api/auth/sessions/revoke: sign out everywhere", () => {
  test("ends every session of mine, this one included, and clears the cookie; a later sign-in works", async () => {
    const clock = { t: Date.UTC(2026, 3, 1, 12) };
    const now = () => clock.t;
    const timed = createApp({ ...testAppDeps(config(), { pool: store.pool, log: createLogger({ silent: true }), now }), oidc: null });
    const tokens = createSessionTokens({ secret: SECRET, ttlSeconds: TTL, now });
    const u = newUser();
    const [a, b] = [await cookieOf(u, tokens), await cookieOf(u, tokens)];
    const someoneElse = await cookieOf(newUser(), tokens);
    clock.t += 30_000;

    const res = await post("/api/auth/sessions/revoke", a, undefined, timed);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ sub: u.sub, revokedBefore: new Date(clock.t).toISOString() });
    expect(res.headers.get("set-cookie")).toMatch(/^svc_session=; Max-Age=0/);
    expect(await me(a, timed)).toBe(401);
    expect(await me(b, timed)).toBe(401);
    expect(await me(someoneElse, timed)).toBe(200);

    // Signing in again in a later second gives a session that works.
    clock.t += 1000;
    expect(await me(await cookieOf(u, tokens), timed)).toBe(200);

    const row = await store.pool.query("SELECT revoked_before, expires_at FROM user_session_revocations WHERE sub = $1", [u.sub]);
    expect(row.rows).toEqual([{ revoked_before: new Date(clock.t - 1000), expires_at: new Date(clock.t - 1000 + TTL * 1000) }]);
  });
});

describe("POST /api/workspaces/:workspaceId/sessions/revoke: an admin ends a person's access to the workspace", () => {
  test("the person loses this workspace in every session issued so far and keeps their others; the admin's own session is untouched", async () => {
    const target = { ...newUser(), groups: [fixture.workspace.editor_group, fixture.otherWorkspace.viewer_group] };
    const cookie = await cookieOf(target);
    const get = async (path: string, c: string) => (await app.request(path, { headers: { cookie: c } })).status;
    expect(await get(`/api/workspaces/${fixture.workspace.id}`, cookie)).toBe(200);
    const res = await post(`/api/workspaces/${fixture.workspace.id}/sessions/revoke`, fixture.cookies.admin, { sub: target.sub });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ sub: target.sub, revokedBefore: expect.any(String), workspaceId: fixture.workspace.id });
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await get(`/api/workspaces/${fixture.workspace.id}`, cookie)).toBe(404);
    expect(await get(`/api/workspaces/${fixture.otherWorkspace.id}`, cookie)).toBe(200);
    const mine = (await (await app.request("/api/me", { headers: { cookie } })).json()) as { workspaces: { id: string }[] };
    expect(mine.workspaces.map((w) => w.id)).toEqual([fixture.otherWorkspace.id]);
    expect(await me(fixture.cookies.admin!)).toBe(200);
    // Nothing was revoked everywhere.
    expect((await store.pool.query("SELECT 1 FROM user_session_revocations WHERE sub = $1", [target.sub])).rowCount).toBe(0);
  });

  test.each([
    ["no sub", {}],
    ["an empty sub", { sub: "" }],
    ["a sub longer than any session can carry", { sub: "x".repeat(513) }],
    ["a sub that is not a string", { sub: ["a"] }],
    ["not JSON", "{sub:"],
    ["a NUL in the sub", { sub: "a\u0000b" }],
    ["a lone surrogate in the sub", { sub: "a\ud800b" }],
  ])("%s is a 400 naming the field, and nothing is revoked", async (_name, body) => {
    const count = "SELECT (SELECT count(*) FROM user_session_revocations) + (SELECT count(*) FROM workspace_session_revocations) AS count";
    const before = (await store.pool.query(count)).rows[0].count;
    const res = await post(`/api/workspaces/${fixture.workspace.id}/sessions/revoke`, fixture.cookies.admin, body);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect((await store.pool.query(count)).rows[0].count).toBe(before);
  });

  test("an editor cannot, and an admin of another workspace is told the workspace does not exist", async () => {
    const target = newUser();
    const cookie = await cookieOf(target);
    expect(
      (await post(`/api/workspaces/${fixture.workspace.id}/sessions/revoke`, fixture.cookies.editor, { sub: target.sub })).status,
    ).toBe(403);
    expect(
      (await post(`/api/workspaces/${fixture.workspace.id}/sessions/revoke`, fixture.cookies.outsider, { sub: target.sub })).status,
    ).toBe(404);
    expect(await me(cookie)).toBe(200);
  });
});

describe("lifetime rules at the edge", () => {
  const sign = (claims: { iat: number; exp: number }) =>
    new SignJWT({ sid: "bGlmZXRpbWUtcnVsZS10ZXN0", groups: [fixture.workspace.viewer_group] })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject("lifetime-user")
      .setIssuedAt(claims.iat)
      .setExpirationTime(claims.exp)
      .sign(new TextEncoder().encode(SECRET));
  const nowS = () => Math.floor(Date.now() / 1000);
  test.each([
    ["a lifetime of SESSION_TTL_SECONDS", () => ({ iat: nowS(), exp: nowS() + TTL }), 200],
    ["a lifetime one second over SESSION_TTL_SECONDS", () => ({ iat: nowS(), exp: nowS() + TTL + 1 }), 401],
    ["a lifetime of a year", () => ({ iat: nowS() - 60, exp: nowS() + 365 * 86400 }), 401],
    ["iat ten minutes in the future", () => ({ iat: nowS() + 600, exp: nowS() + 1200 }), 401],
  ])("a correctly signed token with %s → %i", async (_name, claims, status) => {
    expect(await me(`svc_session=${await sign(claims())}`)).toBe(status);
  });
});
