// Who may end whose sessions: a platform admin everywhere, a workspace admin only their workspace's access; every
// revocation rate limited per caller, the admins' capped (real PostgreSQL, app.request).
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../../../lib/auth/session.ts";
import { type RoleFixture, seedRoleFixture } from "../../../lib/auth/testing/role-table.ts";
import type { SessionUser } from "../../../lib/auth/types.ts";
import { parseConfig } from "../../../lib/config/parse.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { createTestConfigStore } from "../../../lib/testing/pg.ts";
import { createApp } from "../../app.ts";
import { testAppDeps } from "../../testing/app-deps.ts";

const SECRET = "scoped-revocation-secret-0123456789abc";
const PLATFORM = "platform-admins";
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let fixture: RoleFixture;
const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: 3600 });

beforeAll(async () => {
  store = await createTestConfigStore();
  fixture = await seedRoleFixture(store.pool, sessions, "svc_session");
});
afterAll(() => store.close());

function appWith(env: Record<string, string> = {}): Hono {
  const config = parseConfig({ DATABASE_URL: store.url, SESSION_SECRET: SECRET, PLATFORM_ADMIN_GROUP: PLATFORM, ...env }).config;
  return createApp({ ...testAppDeps(config, { pool: store.pool, log: createLogger({ silent: true }) }), oidc: null });
}

let users = 0;
const newUser = (groups: string[]): SessionUser => ({ sub: `scoped-user-${++users}`, groups });
const cookieOf = async (u: SessionUser) => `svc_session=${await sessions.mint(u)}`;
const post = (app: Hono, path: string, cookie: string, body: unknown) =>
  app.request(path, { method: "POST", headers: { cookie, "content-type": "application/json" }, body: JSON.stringify(body) });
const status = async (app: Hono, path: string, cookie: string) => (await app.request(path, { headers: { cookie } })).status;

describe("scope", () => {
  test("a workspace admin's revocation of a platform admin who is not a member changes nothing they have", async () => {
    const app = appWith();
    const victim = newUser([PLATFORM, fixture.otherWorkspace.viewer_group]);
    const cookie = await cookieOf(victim);
    const res = await post(app, `/api/workspaces/${fixture.workspace.id}/sessions/revoke`, fixture.cookies.admin!, { sub: victim.sub });
    expect(res.status).toBe(200);
    expect(await status(app, "/api/me", cookie)).toBe(200);
    expect(await status(app, `/api/workspaces/${fixture.otherWorkspace.id}`, cookie)).toBe(200);
    expect(await status(app, "/api/admin/workspaces", cookie)).toBe(200);
  });

  test("a platform admin ends every session of a person, everywhere", async () => {
    const app = appWith();
    const admin = await cookieOf(newUser([PLATFORM]));
    const victim = newUser([fixture.workspace.viewer_group, fixture.otherWorkspace.viewer_group]);
    const cookie = await cookieOf(victim);
    const res = await post(app, "/api/admin/sessions/revoke", admin, { sub: victim.sub });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ sub: victim.sub });
    expect(body.workspaceId).toBeUndefined();
    expect(await status(app, "/api/me", cookie)).toBe(401);
    expect(await status(app, "/api/me", admin)).toBe(200);
  });

  test.each([
    ["a workspace admin", () => fixture.cookies.admin!],
    ["an editor", () => fixture.cookies.editor!],
  ])("%s cannot revoke everywhere (403) and nothing is recorded", async (_name, cookie) => {
    const app = appWith();
    const victim = newUser([fixture.workspace.viewer_group]);
    const res = await post(app, "/api/admin/sessions/revoke", cookie(), { sub: victim.sub });
    expect(res.status).toBe(403);
    expect((await store.pool.query("SELECT 1 FROM user_session_revocations WHERE sub = $1", [victim.sub])).rowCount).toBe(0);
  });
});

describe("limits", () => {
  test("revocations are rate limited per caller (429 with Retry-After); another caller is not affected", async () => {
    const app = appWith({ SESSION_REVOKE_RATE_PER_MINUTE: "2" });
    const admin = await cookieOf(newUser([fixture.workspace.admin_group]));
    const path = `/api/workspaces/${fixture.workspace.id}/sessions/revoke`;
    for (let i = 0; i < 2; i++) expect((await post(app, path, admin, { sub: `limited-${i}` })).status).toBe(200);
    const refused = await post(app, path, admin, { sub: "limited-3" });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await store.pool.query("SELECT 1 FROM workspace_session_revocations WHERE sub = 'limited-3'")).rowCount).toBe(0);
    const other = await cookieOf(newUser([fixture.workspace.admin_group]));
    expect((await post(app, path, other, { sub: "limited-4" })).status).toBe(200);
  });

  test("past SESSION_REVOCATIONS_MAX an admin's revocation is refused; a person's own sign out everywhere never is", async () => {
    const app = appWith({ SESSION_REVOCATIONS_MAX: "100", SESSION_REVOKE_RATE_PER_MINUTE: "1000" });
    const admin = await cookieOf(newUser([fixture.workspace.admin_group]));
    const path = `/api/workspaces/${fixture.workspace.id}/sessions/revoke`;
    let refused: Response | null = null;
    for (let i = 0; i < 101 && !refused; i++) {
      const res = await post(app, path, admin, { sub: `cap-${i}-${"x".repeat(400)}` });
      if (res.status !== 200) refused = res;
    }
    expect(refused?.status).toBe(429);
    expect((await refused!.json()).detail).toContain("SESSION_REVOCATIONS_MAX");
    const self = newUser([fixture.workspace.viewer_group]);
    const selfCookie = await cookieOf(self);
    expect((await post(app, "/api/auth/sessions/revoke", selfCookie, {})).status).toBe(200);
    expect(await status(app, "/api/me", selfCookie)).toBe(401);
  });

  test("expired rows are swept by the next write", async () => {
    const app = appWith();
    await store.pool.query(
      "INSERT INTO workspace_session_revocations (sub, workspace_id, revoked_before, expires_at) VALUES ('stale', $1, now() - interval '2 days', now() - interval '1 day')",
      [fixture.workspace.id],
    );
    expect(
      (await post(app, `/api/workspaces/${fixture.workspace.id}/sessions/revoke`, fixture.cookies.admin!, { sub: "fresh" })).status,
    ).toBe(200);
    expect((await store.pool.query("SELECT 1 FROM workspace_session_revocations WHERE sub = 'stale'")).rowCount).toBe(0);
  });
});
