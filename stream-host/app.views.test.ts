import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SnapshotFrame } from "../lib/live/frames.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { createTestHost, panel, seedDashboard, spec } from "./testing/fixture.ts";
import { webStreamReader } from "./testing/sse-parse.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(async () => {
  await store.close();
});

async function open(app: { request: (p: string, i?: RequestInit) => Response | Promise<Response> }, path: string, cookie: string) {
  const res = await app.request(path, { headers: { cookie } });
  return { res, reader: res.status === 200 && res.body ? webStreamReader(res.body) : null };
}

async function seeded(env: Record<string, string> = {}) {
  const t = createTestHost({ url: store.url, pool: store.pool, env });
  const { dashboardId, workspace } = await seedDashboard(
    store.pool,
    spec([panel("a")], { variables: [{ name: "service", type: "custom", values: ["checkout", "search"], multi: true }] }),
  );
  const cookie = await t.cookieFor([workspace.viewer_group]);
  return { t, dashboardId, cookie, path: (q: string) => `/api/dashboards/${dashboardId}/stream${q ? `?${q}` : ""}` };
}

describe("the stream's view parameters", () => {
  test("from, to, refresh and var-* pick the view; the snapshot says which", async () => {
    const { t, cookie, path } = await seeded();
    const s = await open(t.app, path("from=now-6h&to=now&refresh=30s&var-service=checkout&var-service=search&tz=UTC"), cookie);
    expect(s.res.status).toBe(200);
    const snap = JSON.parse((await s.reader!.next())?.data ?? "null") as SnapshotFrame;
    expect(snap.view).toEqual({
      from: "now-6h",
      to: "now",
      refreshMs: 30_000,
      vars: { service: ["checkout", "search"] },
      live: true,
      saved: false,
    });
    await s.reader!.cancel();
  });

  test.each([
    ["from", "from=now-99999999999w"],
    ["from", `from=${"x".repeat(10_000)}`],
    ["to", "to=now%00"],
    ["refresh", "refresh=1s"],
    ["refresh", "refresh=soon"],
    ["from", Array.from({ length: 1000 }, () => "from=now-1h").join("&")],
    ["var-region", "var-region=eu"],
  ])("a bad %s is a 400 problem naming it, and no stream opens", async (parameter, q) => {
    const { t, cookie, path } = await seeded();
    const { res } = await open(t.app, path(q), cookie);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = (await res.json()) as { detail: string };
    expect(body.detail).toContain(parameter);
    expect(t.host.hub.subscribers).toBe(0);
    expect(t.calls).toHaveLength(0);
  });

  test("past MAX_VIEWS_PER_DASHBOARD a new view is 429 too_many_views with Retry-After; open views and the saved one still admit viewers", async () => {
    const { t, cookie, path, dashboardId } = await seeded({ MAX_VIEWS_PER_DASHBOARD: "2" });
    const a = await open(t.app, path("from=now-2h"), cookie);
    const b = await open(t.app, path("from=now-3h"), cookie);
    expect([a.res.status, b.res.status]).toEqual([200, 200]);
    const c = await open(t.app, path("from=now-4h"), cookie);
    expect(c.res.status).toBe(429);
    expect(c.res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(((await c.res.json()) as { code?: string; type?: string }).code ?? "").toBe("too_many_views");
    const again = await open(t.app, path("from=now-2h"), cookie);
    const saved = await open(t.app, path(""), cookie);
    expect([again.res.status, saved.res.status]).toEqual([200, 200]);
    expect(t.host.hub.viewsOf(dashboardId)).toBe(3);
    for (const s of [a, b, again, saved]) await s.reader!.cancel();
  });
});
