// Logout across processes: the handlers and the stream host run as real child processes (their own
// entry points) on one embedded PostgreSQL, and a logout posted to the handlers must end the stream the
// same session holds open on the stream host, through the config store's LISTEN/NOTIFY only.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { recordRevocation } from "../../../lib/auth/revocations.ts";
import { createSessionTokens } from "../../../lib/auth/session.ts";
import { freePort } from "../../../lib/embedded/postgres.ts";
import { createTestConfigStore } from "../../../lib/testing/pg.ts";
import { type HostProcess, get, openStream, spawnStreamHost } from "../../../stream-host/testing/child.ts";
import { panel, seedDashboard, spec } from "../../../stream-host/testing/fixture.ts";
import { type HandlersProcess, spawnHandlers } from "../../testing/spawn-handlers.ts";

const SECRET = "logout-process-test-secret-0123456789ab";
const tokens = createSessionTokens({ secret: SECRET, ttlSeconds: 3600 });

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let streamHost: HostProcess;
let handlers: HandlersProcess;
let seeded: Awaited<ReturnType<typeof seedDashboard>>;
let streamPath: string;

beforeAll(async () => {
  store = await createTestConfigStore();
  seeded = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
  streamPath = `/api/dashboards/${seeded.dashboardId}/stream`;
  const env = { DATABASE_URL: store.url, SESSION_SECRET: SECRET, NODE_ENV: "test" };
  [streamHost, handlers] = await Promise.all([
    (async () => spawnStreamHost({ ...env, STREAM_PORT: String(await freePort()) }))(),
    spawnHandlers(env),
  ]);
}, 60_000);

afterAll(async () => {
  streamHost?.kill("SIGKILL");
  handlers?.child.kill("SIGKILL");
  await store.close();
});

const cookieFor = async (sub: string, groups = [seeded.workspace.viewer_group]) => `svc_session=${await tokens.mint({ sub, groups })}`;
const me = async (cookie: string) => (await fetch(`${handlers.base}/api/me`, { headers: { cookie } })).status;

/** Polls `check` until it holds (a NOTIFY crosses two processes and a database: real time passes). */
async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("logout across the handlers and the stream host (two real processes, one config store)", () => {
  test("logout posted to the handlers ends the stream the session holds on the stream host; the cookie is then refused by both", async () => {
    const cookie = await cookieFor("process-logout-user");
    const bystander = await cookieFor("process-bystander");
    const stream = await openStream(streamHost.port, streamPath, { cookie });
    const other = await openStream(streamHost.port, streamPath, { cookie: bystander });
    expect(stream.status).toBe(200);
    await stream.waitFor((f) => f.event === "snapshot");
    await other.waitFor((f) => f.event === "snapshot");
    expect(await me(cookie)).toBe(200);

    const logout = await fetch(`${handlers.base}/api/auth/logout`, { method: "POST", headers: { cookie } });
    expect(logout.status).toBe(204);

    // Within a couple of seconds (the bound only makes a broken build fail instead of hang).
    const ended = await stream.waitFor((f) => f.event === "session_expired", 5_000);
    expect(JSON.parse(ended.data ?? "null")).toMatchObject({ reason: "revoked" });
    await stream.closed;

    const again = await get(streamHost.port, streamPath, { cookie });
    expect(again.status).toBe(401);
    expect(JSON.parse(again.body)).toMatchObject({ code: "unauthenticated" });
    expect(await me(cookie)).toBe(401);

    // Nobody else's stream was touched.
    expect(other.frames.some((f) => f.frame.event === "session_expired")).toBe(false);
    expect(await me(bystander)).toBe(200);
    other.close();
  }, 30_000);

  test("a workspace admin revoking a member's access on the handlers ends that member's stream of the workspace on the stream host", async () => {
    const target = await cookieFor("process-revoked-user");
    const admin = await cookieFor("process-admin", [seeded.workspace.admin_group]);
    const stream = await openStream(streamHost.port, streamPath, { cookie: target });
    await stream.waitFor((f) => f.event === "snapshot");

    const res = await fetch(`${handlers.base}/api/workspaces/${seeded.workspace.id}/sessions/revoke`, {
      method: "POST",
      headers: { cookie: admin, "content-type": "application/json" },
      body: JSON.stringify({ sub: "process-revoked-user" }),
    });
    expect(res.status).toBe(200);
    // A workspace admin revokes that workspace's access only (docs/auth.md): the stream ends with forbidden, and
    // the session, still valid elsewhere, finds the dashboard gone (404) rather than being signed out (401).
    await stream.waitFor((f) => f.event === "forbidden", 5_000);
    await stream.closed;
    expect((await get(streamHost.port, streamPath, { cookie: target })).status).toBe(404);
    expect(await me(admin)).toBe(200);
  }, 30_000);

  test("the handlers process learns a revocation another instance wrote, through its own listener", async () => {
    const cookie = await cookieFor("process-elsewhere-user");
    const session = (await tokens.verifySession(cookie.split("=")[1]))!;
    expect(await me(cookie)).toBe(200);
    // This test process plays the other instance: it writes and announces the logout itself.
    await recordRevocation(
      store.pool,
      { kind: "session", sessionId: session.sessionId, sub: session.user.sub, expiresAt: session.expiresAt },
      Date.now(),
    );
    await eventually(async () => (await me(cookie)) === 401, "the handlers refuse the session revoked elsewhere");
    expect((await get(streamHost.port, streamPath, { cookie })).status).toBe(401);
  }, 30_000);
});
