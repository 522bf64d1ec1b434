// Limits on what a workspace admin can make the service do: sources per workspace, and connection attempts
// (creates, connection tests) per person, on an injected clock.
import { afterAll, beforeAll, expect, test } from "vitest";
import { type ApiFixture, call, createApiFixture } from "../../testing/api-fixture.ts";

let fx: ApiFixture;
// Starts at the real time: session tokens are minted with it.
let t = Date.now();
let base: string;

beforeAll(async () => {
  fx = await createApiFixture({
    env: { SOURCES_PER_WORKSPACE_MAX: "3", SOURCE_CONNECT_RATE_PER_MINUTE: "2" },
    now: () => t,
  });
  base = `/api/workspaces/${fx.roles.workspace.id}/sources`;
});
afterAll(() => fx.close());

const body = (name: string) => ({
  name,
  host: fx.metrics.host,
  port: fx.metrics.port,
  database: fx.metrics.database,
  sslmode: "disable",
  secretRef: "METRICS",
});

async function count(): Promise<number> {
  const { rows } = await fx.pool.query("SELECT count(*)::int AS n FROM sources WHERE workspace_id = $1", [fx.roles.workspace.id]);
  return rows[0].n;
}

test("SOURCES_PER_WORKSPACE_MAX: one more source is a 409 source_limit_reached, refused before connecting", async () => {
  const admin = fx.roles.cookies.admin!;
  // The fixture's own source is the first of three.
  expect((await call(fx.app, admin, "POST", base, body("second"))).status).toBe(201);
  const third = await (await call(fx.app, admin, "POST", base, body("third"))).json();
  expect(await count()).toBe(3);
  const res = await call(fx.app, admin, "POST", base, body("fourth"));
  expect(res.status).toBe(409);
  expect(await res.json()).toMatchObject({ code: "source_limit_reached", limit: 3 });
  expect(await count()).toBe(3);
  // A refusal by the cap spent no connection attempt: after a delete, one refilled token is enough.
  expect((await call(fx.app, admin, "DELETE", `/api/sources/${third.id}`)).status).toBe(204);
  t += 30_000;
  expect((await call(fx.app, admin, "POST", base, body("fourth"))).status).toBe(201);
});

test("SOURCE_CONNECT_RATE_PER_MINUTE: connection tests per person, 429 with Retry-After until a token refills", async () => {
  const admin = await fx.roles.mintCookie({ ...fx.roles.users.admin, sub: "rate-admin" });
  const other = await fx.roles.mintCookie({ ...fx.roles.users.admin, sub: "rate-admin-2" });
  const testIt = (cookie: string) => call(fx.app, cookie, "POST", `/api/sources/${fx.source.id}/test`);
  expect((await testIt(admin)).status).toBe(200);
  expect((await testIt(admin)).status).toBe(200);
  const limited = await testIt(admin);
  expect(limited.status).toBe(429);
  expect(limited.headers.get("retry-after")).toBe("30");
  expect(await limited.json()).toMatchObject({ code: "rate_limited", retryAfterSeconds: 30 });
  // Another person has their own bucket; the limited one gets a token back after 30 s.
  expect((await testIt(other)).status).toBe(200);
  t += 29_000;
  expect((await testIt(admin)).status).toBe(429);
  t += 1_000;
  expect((await testIt(admin)).status).toBe(200);
});

test("a connection change and a catalog refresh count against the same limit", async () => {
  const admin = await fx.roles.mintCookie({ ...fx.roles.users.admin, sub: "rate-admin-3" });
  const s = await fx.newSource("limited");
  expect((await call(fx.app, admin, "POST", `/api/sources/${s.id}/catalog/refresh`)).status).toBe(200);
  expect((await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 1, sslmode: "prefer" })).status).toBe(200);
  expect((await call(fx.app, admin, "POST", `/api/sources/${s.id}/catalog/refresh`)).status).toBe(429);
  // A change that does not touch the connection does not connect and is not limited.
  expect((await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 2, notes: "ms" })).status).toBe(200);
});
