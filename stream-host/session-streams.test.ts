// STREAMS_PER_SESSION_MAX: one session holds at most that many open streams on an instance (429 beyond it); a closed
// stream gives its place back, and other sessions are not affected.
import { afterAll, beforeAll, expect, test } from "vitest";
import { createSessionStreams } from "./session-streams.ts";
import { createSessionTokens } from "../lib/auth/session.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { SESSION_SECRET, createTestHost, flush, panel, seedDashboard, spec } from "./testing/fixture.ts";
import { webStreamReader } from "./testing/sse-parse.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(() => store.close());

test("the counter: max per session, idempotent release", () => {
  const s = createSessionStreams(2);
  const a = s.open("x");
  s.open("x");
  expect(() => s.open("x")).toThrow(expect.objectContaining({ code: "rate_limited" }));
  s.open("y");
  a();
  a();
  expect(s.count("x")).toBe(1);
  s.open("x");
});

test("through the route: the 3rd stream of a session is 429 with Retry-After; another session streams; closing one frees a place", async () => {
  const t = createTestHost({ url: store.url, pool: store.pool, env: { STREAMS_PER_SESSION_MAX: "2" } });
  const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
  const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: t.clock.now });
  const mine = `svc_session=${await tokens.mint({ sub: "many-tabs", groups: [workspace.viewer_group] })}`;
  const theirs = `svc_session=${await tokens.mint({ sub: "other", groups: [workspace.viewer_group] })}`;
  const open = (cookie: string) => t.app.request(`/api/dashboards/${dashboardId}/stream`, { headers: { cookie } });
  const first = await open(mine);
  const second = await open(mine);
  expect([first.status, second.status]).toEqual([200, 200]);
  const third = await open(mine);
  expect(third.status).toBe(429);
  expect(third.headers.get("retry-after")).toBe("5");
  expect((await third.json()).detail).toContain("STREAMS_PER_SESSION_MAX");
  const other = await open(theirs);
  expect(other.status).toBe(200);
  const reader = webStreamReader(first.body!);
  expect((await reader.next())?.event).toBe("snapshot");
  await reader.cancel();
  await flush();
  const again = await open(mine);
  expect(again.status).toBe(200);
  for (const r of [second, other, again]) await r.body?.cancel();
});
