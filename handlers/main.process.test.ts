import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { createWorkspace } from "../lib/workspaces/store.ts";
import { spawnHandlers } from "./testing/spawn-handlers.ts";

const SECRET = "handlers-process-test-secret-0123456789";
let store: Awaited<ReturnType<typeof createTestConfigStore>>;

beforeAll(async () => {
  store = await createTestConfigStore();
  await createWorkspace(store.pool, { name: "W", viewer_group: "w-view", editor_group: "w-edit", admin_group: "w-admin" });
});
afterAll(() => store.close());

function startHandlers(env: Record<string, string>) {
  return spawnHandlers({ DATABASE_URL: store.url, SESSION_SECRET: SECRET, ...env });
}

test("with FRAMEWORK_MANUAL_SIG_HANDLE=true, SIGTERM drains: readiness 503 draining at once, health 200, in-flight config-store work finishes, exit 0", async () => {
  const { child, port, exited } = await startHandlers({ FRAMEWORK_MANUAL_SIG_HANDLE: "true", SHUTDOWN_GRACE_MS: "20000" });
  const base = `http://127.0.0.1:${port}`;
  expect((await fetch(`${base}/api/ready`)).status).toBe(200);

  // Hold the workspaces table so a request's config-store query stays in flight across the signal.
  const locker = new pg.Client({ connectionString: store.url });
  await locker.connect();
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE workspaces IN ACCESS EXCLUSIVE MODE");
  const token = await createSessionTokens({ secret: SECRET, ttlSeconds: 600 }).mint({ sub: "u1", groups: ["w-view"] });
  const inFlight = fetch(`${base}/api/workspaces`, { headers: { cookie: `svc_session=${token}` } });
  await new Promise((r) => setTimeout(r, 300));

  child.kill("SIGTERM");
  // The flag is set synchronously on the signal; the listener stays open.
  let ready = await fetch(`${base}/api/ready`);
  for (let i = 0; i < 20 && ready.status !== 503; i++) ready = await fetch(`${base}/api/ready`);
  expect(ready.status).toBe(503);
  expect((await ready.json()).status).toBe("draining");
  expect((await fetch(`${base}/api/health`)).status).toBe(200);
  expect(child.exitCode).toBeNull();

  await locker.query("COMMIT");
  await locker.end();
  const res = await inFlight;
  expect(res.status).toBe(200);
  expect((await res.json()).workspaces).toHaveLength(1);
  expect(await exited).toBe(0);
}, 60_000);

test("without FRAMEWORK_MANUAL_SIG_HANDLE, SIGTERM exits 143 at once with no drain", async () => {
  const { child, exited } = await startHandlers({});
  child.kill("SIGTERM");
  expect(await exited).toBe(143);
}, 60_000);
