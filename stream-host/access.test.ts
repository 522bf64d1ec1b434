// Streams end with access: a group change, a deletion or a workspace admin's revocation ends the open streams of the
// people who lost their role there (event: forbidden), on this host and from another process through the config store.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { recordRevocation } from "../lib/auth/revocations.ts";
import { createSessionTokens } from "../lib/auth/session.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { deleteWorkspace, updateWorkspace } from "../lib/workspaces/store.ts";
import { listenerClientFactory } from "./dashboards.ts";
import { SESSION_SECRET, createTestHost, panel, seedDashboard, spec } from "./testing/fixture.ts";
import { type SseFrame, webStreamReader } from "./testing/sse-parse.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(async () => {
  await store.close();
});

const json = (f: SseFrame | null) => JSON.parse(f?.data ?? "null");

async function open(app: { request: (p: string, i?: RequestInit) => Response | Promise<Response> }, id: string, cookie: string) {
  const res = await app.request(`/api/dashboards/${id}/stream`, { headers: { cookie } });
  expect(res.status).toBe(200);
  const reader = webStreamReader(res.body!);
  expect((await reader.next())?.event).toBe("snapshot");
  return reader;
}

/** The next frame that is not a panel update. */
async function terminal(reader: ReturnType<typeof webStreamReader>) {
  let frame = await reader.next();
  while (frame?.event === "panel") frame = await reader.next();
  return frame;
}

function setup(listen = false) {
  const t = createTestHost({
    url: store.url,
    pool: store.pool,
    env: { DEFAULT_REFRESH_INTERVAL_MS: "60000" },
    ...(listen ? { host: { listen: listenerClientFactory(store.url) } } : {}),
  });
  const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: t.clock.now });
  const cookie = async (sub: string, groups: string[]) => `svc_session=${await tokens.mint({ sub, groups })}`;
  return { ...t, tokens, cookie };
}

describe("group changes and deletion", () => {
  test("a changed viewer group ends the old viewers' streams with forbidden; editors and other workspaces' streams continue", async () => {
    const t = setup();
    const a = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const b = await seedDashboard(store.pool, spec([panel("b")], { refreshIntervalMs: 60_000 }));
    const viewer = await open(t.app, a.dashboardId, await t.cookie("v", [a.workspace.viewer_group, b.workspace.viewer_group]));
    const editor = await open(t.app, a.dashboardId, await t.cookie("e", [a.workspace.editor_group]));
    const sameViewerOtherWorkspace = await open(
      t.app,
      b.dashboardId,
      await t.cookie("v", [a.workspace.viewer_group, b.workspace.viewer_group]),
    );

    await updateWorkspace(store.pool, a.workspace.id, { viewer_group: "new-viewers" });
    expect(await t.host.access.recheck(a.workspace.id)).toBe(1);
    const frame = await terminal(viewer);
    expect(frame?.event).toBe("forbidden");
    expect(json(frame)).toEqual({ workspaceId: a.workspace.id, reason: "role_removed" });
    expect(await viewer.next()).toBeNull();
    expect(t.host.hub.subscribersOf(a.dashboardId)).toBe(1);
    expect(t.host.hub.subscribersOf(b.dashboardId)).toBe(1);
    // A reconnect with the same session is the 404 of anyone without a role there.
    const again = await t.app.request(`/api/dashboards/${a.dashboardId}/stream`, {
      headers: { cookie: await t.cookie("v", [a.workspace.viewer_group]) },
    });
    expect(again.status).toBe(404);
    await editor.cancel();
    await sameViewerOtherWorkspace.cancel();
  });

  test("a workspace that no longer exists ends every stream of it (workspace_deleted)", async () => {
    const t = setup();
    const a = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const s = await open(t.app, a.dashboardId, await t.cookie("x", [a.workspace.admin_group]));
    // The host learns of the deletion before the dashboards' own notifications are handled.
    const loaded = t.host.hub.current(a.dashboardId)!;
    await store.pool.query("DELETE FROM dashboards WHERE workspace_id = $1", [a.workspace.id]);
    await store.pool.query("DELETE FROM workspaces WHERE id = $1", [a.workspace.id]);
    expect(loaded.workspaceId).toBe(a.workspace.id);
    await t.host.access.recheck(a.workspace.id);
    expect(json(await terminal(s))).toEqual({ workspaceId: a.workspace.id, reason: "workspace_deleted" });
  });

  test("a workspace whose groups cannot be read ends nothing (and is tried again)", async () => {
    const t = setup();
    const a = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const s = await open(t.app, a.dashboardId, await t.cookie("x", [a.workspace.viewer_group]));
    const access = (await import("./access.ts")).createStreamAccess({
      hub: t.host.hub,
      revocations: t.host.revocations,
      loadWorkspace: async () => {
        throw Object.assign(new Error("down"), { code: "ECONNREFUSED" });
      },
      timers: t.clock.timers,
      log: (await import("../lib/log/logger.ts")).createLogger({ silent: true }),
    });
    expect(await access.recheck(a.workspace.id)).toBe(0);
    expect(t.host.hub.subscribersOf(a.dashboardId)).toBe(1);
    expect(t.clock.pendingDelays()).toContain(2_000);
    await s.cancel();
  });
});

describe("a workspace admin's revocation", () => {
  test("ends the person's streams of that workspace only, with forbidden; their other workspaces and later sessions keep streaming", async () => {
    const t = setup();
    const a = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const b = await seedDashboard(store.pool, spec([panel("b")], { refreshIntervalMs: 60_000 }));
    const groups = [a.workspace.viewer_group, b.workspace.viewer_group];
    const inA = await open(t.app, a.dashboardId, await t.cookie("p", groups));
    const inB = await open(t.app, b.dashboardId, await t.cookie("p", groups));
    const other = await open(t.app, a.dashboardId, await t.cookie("q", groups));

    const now = t.clock.now();
    t.host.revocations.add({ kind: "workspace", sub: "p", workspaceId: a.workspace.id, revokedBefore: now, expiresAt: now + 3_600_000 });
    const frame = await terminal(inA);
    expect(frame?.event).toBe("forbidden");
    expect(json(frame)).toEqual({ workspaceId: a.workspace.id, reason: "access_revoked" });
    expect(await inA.next()).toBeNull();
    expect(t.host.hub.subscribersOf(a.dashboardId)).toBe(1);
    expect(t.host.hub.subscribersOf(b.dashboardId)).toBe(1);
    // The revoked session is refused a new stream of that workspace (404), not of the other.
    const oldCookie = await t.cookie("p", groups);
    expect((await t.app.request(`/api/dashboards/${a.dashboardId}/stream`, { headers: { cookie: oldCookie } })).status).toBe(404);
    // A session issued after the revocation (`iat` has whole seconds) has the workspace again.
    t.clock.advance(1_000);
    const newer = await open(t.app, a.dashboardId, await t.cookie("p", groups));
    for (const r of [inB, other, newer]) await r.cancel();
  });
});

describe("across processes", () => {
  test("a group change and a revocation committed by another process reach this host's listener", async () => {
    const t = setup(true);
    try {
      const a = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
      const b = await seedDashboard(store.pool, spec([panel("b")], { refreshIntervalMs: 60_000 }));
      const viewer = await open(t.app, a.dashboardId, await t.cookie("v", [a.workspace.viewer_group]));
      const revoked = await open(t.app, b.dashboardId, await t.cookie("r", [b.workspace.viewer_group]));
      await t.host.listenerReady();
      await updateWorkspace(store.pool, a.workspace.id, { viewer_group: "someone-else" });
      expect(json(await terminal(viewer))).toMatchObject({ reason: "role_removed" });
      const now = Date.now();
      await recordRevocation(
        store.pool,
        { kind: "workspace", sub: "r", workspaceId: b.workspace.id, revokedBefore: t.clock.now(), expiresAt: now + 3_600_000 },
        now,
      );
      expect(json(await terminal(revoked))).toMatchObject({ reason: "access_revoked" });
      // A forced delete of a workspace is announced too.
      const c = await seedDashboard(store.pool, spec([panel("c")], { refreshIntervalMs: 60_000 }));
      const inC = await open(t.app, c.dashboardId, await t.cookie("w", [c.workspace.viewer_group]));
      await deleteWorkspace(store.pool, c.workspace.id, { force: true });
      expect((await terminal(inC))?.event).toMatch(/^(forbidden|dashboard)$/);
    } finally {
      await t.host.beginDrain();
      await t.host.settle();
    }
  });

  test("a rename is not a group change: no notification ends anything", async () => {
    const changed = await store.pool.query("SELECT 1");
    expect(changed.rowCount).toBe(1);
    const a = await seedDashboard(store.pool, spec([panel("a")]));
    const listener = listenerClientFactory(store.url)();
    await listener.connect();
    const got: string[] = [];
    listener.on("notification", (n) => got.push(n.payload ?? ""));
    await listener.query("LISTEN pulseboard_workspace_access");
    await updateWorkspace(store.pool, a.workspace.id, { name: "Renamed" });
    await updateWorkspace(store.pool, a.workspace.id, { editor_group: "editors-2" });
    await expect.poll(() => got).toEqual([a.workspace.id]);
    await listener.end();
  });
});
