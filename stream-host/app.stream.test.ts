import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createRevocationSet, recordRevocation } from "../lib/auth/revocations.ts";
import { createSessionTokens } from "../lib/auth/session.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { listenerClientFactory } from "./dashboards.ts";
import { SESSION_SECRET, createTestHost, flush, panel, seedDashboard, spec, textResult, updateDashboard } from "./testing/fixture.ts";
import { type SseFrame, webStreamReader } from "./testing/sse-parse.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(async () => {
  await store.close();
});

const json = (f: SseFrame | null) => JSON.parse(f?.data ?? "null");

async function open(app: { request: (p: string, i?: RequestInit) => Response | Promise<Response> }, id: string, cookie?: string) {
  const res = await app.request(`/api/dashboards/${id}/stream`, { headers: cookie ? { cookie } : {} });
  return { res, reader: res.body ? webStreamReader(res.body) : null };
}

describe("authentication and membership", () => {
  test.each([
    ["no cookie", undefined, 401],
    ["garbage token", "svc_session=not-a-jwt", 401],
    ["a token signed with another secret", "svc_session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", 401],
  ])("%s → %s", async (_name, cookie, status) => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId } = await seedDashboard(store.pool, spec([panel("a")]));
    const { res } = await open(t.app, dashboardId, cookie);
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(t.calls).toHaveLength(0);
  });

  test("a dashboard that does not exist, one in a workspace where the caller has no role, and a malformed id are the same 404", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const member = await t.cookieFor([workspace.viewer_group]);
    const outsider = await t.cookieFor(["someone-else"]);
    expect((await open(t.app, "db_missing", member)).res.status).toBe(404);
    expect((await open(t.app, dashboardId, outsider)).res.status).toBe(404);
    expect((await open(t.app, "db_%27%3B--", member)).res.status).toBe(404);
    expect(t.calls).toHaveLength(0);
  });

  test.each(["viewer_group", "editor_group", "admin_group"] as const)("%s members may stream", async (group) => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const { res, reader } = await open(t.app, dashboardId, await t.cookieFor([workspace[group]]));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache, no-transform");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    expect((await reader!.next())?.event).toBe("snapshot");
    await reader!.cancel();
  });
});

describe("the event protocol", () => {
  test("snapshot on attach, one query per panel per tick shared by every subscriber, latest results for late subscribers without a query", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a"), panel("b")]));
    const cookie = await t.cookieFor([workspace.viewer_group]);

    const first = await open(t.app, dashboardId, cookie);
    const snap = json(await first.reader!.next());
    expect(snap.dashboard).toMatchObject({ id: dashboardId, version: 1, title: "Traffic", refreshIntervalMs: 5000 });
    expect(snap.dashboard.panels).toEqual([
      { id: "a", title: "Panel a", type: "stat" },
      { id: "b", title: "Panel b", type: "stat" },
    ]);
    // Subscribers never see the panels' SQL.
    expect(JSON.stringify(snap)).not.toContain("SELECT");
    expect(snap.panels).toEqual([]);

    const others = await Promise.all(Array.from({ length: 20 }, () => open(t.app, dashboardId, cookie)));
    for (const o of others) expect((await o.reader!.next())?.event).toBe("snapshot");
    expect(t.host.hub.subscribersOf(dashboardId)).toBe(21);
    expect(await t.registry.getSingleMetricAsString("svc_sse_subscribers")).toContain(`{dashboard="${dashboardId}"} 21`);
    expect(await t.registry.getSingleMetricAsString("svc_pollers_active")).toContain("svc_pollers_active 1");

    t.clock.runNext();
    await flush();
    expect(t.calls.map((c) => c.panelId).sort()).toEqual(["a", "b"]);
    for (const s of [first, ...others]) {
      const got = [json(await s.reader!.next()), json(await s.reader!.next())];
      expect(got.map((u) => u.panelId).sort()).toEqual(["a", "b"]);
      expect(got[0]).toMatchObject({ at: t.clock.now(), result: { rows: expect.any(Array) } });
    }

    const late = await open(t.app, dashboardId, cookie);
    const lateSnap = json(await late.reader!.next());
    expect(lateSnap.panels.map((p: { panelId: string }) => p.panelId).sort()).toEqual(["a", "b"]);
    expect(t.calls).toHaveLength(2);

    for (const s of [first, late, ...others]) await s.reader!.cancel();
  });

  test("a failing panel arrives as that panel's error while the others arrive as results", async () => {
    const { AppError } = await import("../lib/http/errors.ts");
    const good = { columns: [{ name: "v", type: "int4" }], rows: [[1]], truncated: false, elapsedMs: 1 };
    const t = createTestHost({
      url: store.url,
      pool: store.pool,
      runPanel: async (p) => {
        if (p.id === "bad") throw new AppError("guard_rejected", "function pg_sleep is not allowed", { reason: "function" });
        return good;
      },
    });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("bad"), panel("good")]));
    const s = await open(t.app, dashboardId, await t.cookieFor([workspace.viewer_group]));
    await s.reader!.next();
    t.clock.runNext();
    await flush();
    const frames = [json(await s.reader!.next()), json(await s.reader!.next())];
    expect(frames).toContainEqual({
      panelId: "bad",
      at: t.clock.now(),
      error: { code: "function", reason: "function", message: "function pg_sleep is not allowed" },
    });
    expect(frames).toContainEqual({ panelId: "good", at: t.clock.now(), result: good });
    await s.reader!.cancel();
  });

  test("a comment heartbeat every 15 s", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, env: { DEFAULT_REFRESH_INTERVAL_MS: "60000" } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const s = await open(t.app, dashboardId, await t.cookieFor([workspace.viewer_group]));
    await s.reader!.next();
    t.clock.runNext(); // first tick
    await flush();
    await s.reader!.next();
    t.clock.advance(14_999);
    t.clock.advance(1);
    expect(await s.reader!.next({ comments: true })).toEqual({ comment: "heartbeat" });
    await s.reader!.cancel();
  });

  test("no heartbeat while the view's ticks write (every 2 s): their frames keep the stream alive", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, env: { MIN_REFRESH_INTERVAL_MS: "2000" } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 2000 }));
    const s = await open(t.app, dashboardId, await t.cookieFor([workspace.viewer_group]));
    await s.reader!.next();
    t.clock.runNext(); // first tick
    await flush();
    const seen: SseFrame[] = [];
    // 31 s of 2 s ticks: two heartbeat instants (15 s, 30 s), each less than a tick after the view last wrote.
    for (let ms = 0; ms < 31_000; ms += 1000) {
      t.clock.advance(1000);
      await flush();
      await flush();
    }
    const ticks = t.calls.length;
    expect(ticks).toBeGreaterThanOrEqual(15);
    // Every tick's frame, in order, and nothing between them.
    while (seen.filter((f) => f.event === "panel").length < ticks) seen.push((await s.reader!.next({ comments: true }))!);
    expect(seen.filter((f) => f.comment === "heartbeat")).toEqual([]);
    await s.reader!.cancel();
  });

  test("disconnects are noticed: counts and gauges follow, the last one stops the poller and removes its series", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const cookie = await t.cookieFor([workspace.viewer_group]);
    const a = await open(t.app, dashboardId, cookie);
    const b = await open(t.app, dashboardId, cookie);
    await a.reader!.next();
    await b.reader!.next();
    t.clock.runNext();
    await flush();
    expect(await t.registry.metrics()).toContain(`svc_poller_tick_duration_seconds_count{dashboard="${dashboardId}"} 1`);

    await a.reader!.cancel();
    await flush();
    expect(t.host.hub.subscribersOf(dashboardId)).toBe(1);
    expect(await t.registry.getSingleMetricAsString("svc_sse_subscribers")).toContain(`{dashboard="${dashboardId}"} 1`);

    await b.reader!.cancel();
    await flush();
    expect(t.host.hub.dashboards).toBe(0);
    const scrape = await t.registry.metrics();
    expect(scrape).not.toContain(dashboardId);
    expect(scrape).toContain("svc_pollers_active 0");
    // No timer of the stopped poller is left, so no query can start later.
    const before = t.calls.length;
    t.clock.advance(60_000);
    await flush();
    expect(t.calls).toHaveLength(before);
  });

  test("a subscriber that stops reading is dropped instead of buffered without bound; the others keep streaming", async () => {
    const t = createTestHost({
      url: store.url,
      pool: store.pool,
      host: { maxBufferedBytes: 2048 },
      runPanel: async () => textResult([["x".repeat(1000)]]),
    });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const cookie = await t.cookieFor([workspace.viewer_group]);
    const reading = await open(t.app, dashboardId, cookie);
    const stuck = await open(t.app, dashboardId, cookie);
    await reading.reader!.next();
    t.clock.runNext();
    for (let i = 0; i < 6; i++) {
      if (i > 0) t.clock.advance(5000);
      await flush();
      expect((await reading.reader!.next())?.event).toBe("panel");
    }
    expect(t.host.hub.subscribersOf(dashboardId)).toBe(1);
    expect(await t.registry.getSingleMetricAsString("svc_sse_subscribers")).toContain(`{dashboard="${dashboardId}"} 1`);
    await expect(
      (async () => {
        while (await stuck.reader!.next()) {}
      })(),
    ).rejects.toThrow();
    await reading.reader!.cancel();
  });
});

describe("spec changes reach a running poller without a restart", () => {
  test("NOTIFY → event: dashboard, and the new panel is queried at once", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, host: { listen: listenerClientFactory(store.url) } });
    try {
      const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
      const s = await open(t.app, dashboardId, await t.cookieFor([workspace.viewer_group]));
      await s.reader!.next();
      t.clock.runNext();
      await flush();
      expect(json(await s.reader!.next()).panelId).toBe("a");
      // The listener connects in the background with the first subscriber.
      await t.host.listenerReady();
      await updateDashboard(store.pool, dashboardId, spec([panel("a"), panel("b")], { title: "Traffic v2" }));
      const changed = await s.reader!.next();
      expect(changed?.event).toBe("dashboard");
      expect(json(changed)).toMatchObject({ id: dashboardId, version: 2, title: "Traffic v2" });
      t.clock.runNext();
      await flush();
      expect(t.calls.filter((c) => c.panelId === "b")[0].dashboard.version).toBe(2);
      await s.reader!.cancel();
    } finally {
      await t.host.beginDrain();
      await t.host.settle();
    }
  });

  test("a lost LISTEN connection is re-established and changes made meanwhile are picked up", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, host: { listen: listenerClientFactory(store.url) } });
    try {
      const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
      const s = await open(t.app, dashboardId, await t.cookieFor([workspace.viewer_group]));
      await s.reader!.next();
      await t.host.listenerReady();
      const killed = await store.pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pulseboard-listen' AND datname = current_database()",
      );
      expect(killed.rowCount).toBeGreaterThan(0);
      await until(() => !t.host.listenerConnected());
      // Announced while nobody listens: this notification is lost.
      await updateDashboard(store.pool, dashboardId, spec([panel("a"), panel("c")], { title: "Changed while away" }));
      t.clock.advance(500); // the reconnect backoff (the poller's first tick is due too)
      let changed = await s.reader!.next();
      while (changed?.event === "panel") changed = await s.reader!.next();
      expect(changed?.event).toBe("dashboard");
      expect(json(changed)).toMatchObject({ version: 2, title: "Changed while away" });
      expect(t.host.listenerConnected()).toBe(true);
      await s.reader!.cancel();
    } finally {
      await t.host.beginDrain();
      await t.host.settle();
    }
  });

  test("a deleted dashboard ends its streams", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, host: { listen: listenerClientFactory(store.url) } });
    try {
      const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
      const s = await open(t.app, dashboardId, await t.cookieFor([workspace.viewer_group]));
      await s.reader!.next();
      await t.host.listenerReady();
      await store.pool.query("DELETE FROM dashboards WHERE id = $1", [dashboardId]);
      await store.pool.query("SELECT pg_notify('pulseboard_dashboard_changed', $1)", [dashboardId]);
      const frame = await s.reader!.next();
      expect(frame?.event).toBe("dashboard");
      expect(json(frame)).toEqual({ id: dashboardId, deleted: true });
      expect(await s.reader!.next()).toBeNull();
      expect(t.host.hub.dashboards).toBe(0);
    } finally {
      await t.host.beginDrain();
      await t.host.settle();
    }
  });
});

describe("session expiry", () => {
  test("a stream gets event: session_expired and closes when its session's exp passes; a longer session stays", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, env: { DEFAULT_REFRESH_INTERVAL_MS: "60000" } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: t.clock.now });
    const cookieFor = async (ttl: number) => `svc_session=${await tokens.mint({ sub: `u-${ttl}`, groups: [workspace.viewer_group] }, ttl)}`;
    // The manual clock starts on a whole second, so exp is exactly 60 s (and 120 s) from now.
    const short = await open(t.app, dashboardId, await cookieFor(60));
    const long = await open(t.app, dashboardId, await cookieFor(120));
    expect((await short.reader!.next())?.event).toBe("snapshot");
    expect((await long.reader!.next())?.event).toBe("snapshot");

    t.clock.advance(59_999);
    await flush();
    expect(t.host.hub.subscribersOf(dashboardId)).toBe(2);
    t.clock.advance(1);
    expect(t.host.hub.subscribersOf(dashboardId)).toBe(1);
    let frame = await short.reader!.next();
    while (frame?.event === "panel") frame = await short.reader!.next();
    expect(frame?.event).toBe("session_expired");
    expect(json(frame)).toEqual({ expiresAt: t.clock.now() });
    expect(await short.reader!.next()).toBeNull();

    // The last subscriber's expiry stops the poller like a disconnect does.
    t.clock.advance(60_000);
    await flush();
    expect(t.host.hub.dashboards).toBe(0);
    const calls = t.calls.length;
    t.clock.advance(600_000);
    await flush();
    expect(t.calls).toHaveLength(calls);
    let last = await long.reader!.next();
    while (last?.event === "panel") last = await long.reader!.next();
    expect(last?.event).toBe("session_expired");
    expect(await long.reader!.next()).toBeNull();
  });

  test("a stream that ends otherwise leaves no expiry timer behind", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, env: { DEFAULT_REFRESH_INTERVAL_MS: "60000" } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const s = await open(t.app, dashboardId, await t.cookieFor([workspace.viewer_group]));
    await s.reader!.next();
    await s.reader!.cancel();
    await flush();
    // The heartbeat interval is the host's own; no one-shot timer (tick, expiry) is left.
    expect(t.clock.pendingDelays()).toEqual([]);
  });
});

describe("session revocation", () => {
  test("a revoked session's stream gets event: session_expired (reason revoked) and closes; other sessions' streams stay; the cookie is then refused", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, env: { DEFAULT_REFRESH_INTERVAL_MS: "60000" } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: t.clock.now });
    const token = await tokens.mint({ sub: "revoked-user", groups: [workspace.viewer_group] });
    const session = (await tokens.verifySession(token))!;
    const revoked = await open(t.app, dashboardId, `svc_session=${token}`);
    const sameUserElsewhere = await open(
      t.app,
      dashboardId,
      `svc_session=${await tokens.mint({ sub: "revoked-user", groups: [workspace.viewer_group] })}`,
    );
    expect((await revoked.reader!.next())?.event).toBe("snapshot");
    expect((await sameUserElsewhere.reader!.next())?.event).toBe("snapshot");

    t.host.revocations.add({ kind: "session", sessionId: session.sessionId, sub: "revoked-user", expiresAt: session.expiresAt });
    expect(t.host.hub.subscribersOf(dashboardId)).toBe(1);
    let frame = await revoked.reader!.next();
    while (frame?.event === "panel") frame = await revoked.reader!.next();
    expect(frame?.event).toBe("session_expired");
    expect(json(frame)).toEqual({ expiresAt: session.expiresAt, reason: "revoked" });
    expect(await revoked.reader!.next()).toBeNull();

    const again = await open(t.app, dashboardId, `svc_session=${token}`);
    expect(again.res.status).toBe(401);
    await sameUserElsewhere.reader!.cancel();
  });

  test("revoking every session of a user ends all of that user's streams and none of anyone else's", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, env: { DEFAULT_REFRESH_INTERVAL_MS: "60000" } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")], { refreshIntervalMs: 60_000 }));
    const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: t.clock.now });
    const cookie = async (sub: string) => `svc_session=${await tokens.mint({ sub, groups: [workspace.viewer_group] })}`;
    const mine = [await open(t.app, dashboardId, await cookie("leaver")), await open(t.app, dashboardId, await cookie("leaver"))];
    const theirs = await open(t.app, dashboardId, await cookie("stayer"));
    for (const s of [...mine, theirs]) expect((await s.reader!.next())?.event).toBe("snapshot");

    t.host.revocations.add({ kind: "user", sub: "leaver", revokedBefore: t.clock.now(), expiresAt: t.clock.now() + 3_600_000 });
    for (const s of mine) {
      expect(json(await s.reader!.next())).toMatchObject({ reason: "revoked" });
      expect(await s.reader!.next()).toBeNull();
    }
    expect(t.host.hub.subscribersOf(dashboardId)).toBe(1);
    await theirs.reader!.cancel();
  });

  test("a logout written to the config store by another process reaches this host's listener and ends the stream", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, host: { listen: listenerClientFactory(store.url) } });
    try {
      const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
      const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: t.clock.now });
      const token = await tokens.mint({ sub: "listened", groups: [workspace.viewer_group] });
      const session = (await tokens.verifySession(token))!;
      const s = await open(t.app, dashboardId, `svc_session=${token}`);
      expect(s.res.status).toBe(200);
      expect((await s.reader!.next())?.event).toBe("snapshot");
      await t.host.listenerReady();
      // The clocks differ (the host's is manual), so the row carries the real time's expiry to survive the writer's sweep.
      await recordRevocation(
        store.pool,
        { kind: "session", sessionId: session.sessionId, sub: "listened", expiresAt: Date.now() + 3_600_000 },
        Date.now(),
      );
      let frame = await s.reader!.next();
      while (frame?.event === "panel") frame = await s.reader!.next();
      expect(frame?.event).toBe("session_expired");
      expect(await s.reader!.next()).toBeNull();
    } finally {
      await t.host.beginDrain();
      await t.host.settle();
    }
  });

  test("a host whose revocations are not loaded yet makes a stream wait for them, and refuses one revoked in the meantime", async () => {
    // The set runs on the host's manual clock (entries already expired by it are not kept).
    const clock = { now: () => 0 };
    const set = createRevocationSet({ now: () => clock.now() });
    const t = createTestHost({ url: store.url, pool: store.pool, host: { revocations: set } });
    clock.now = t.clock.now;
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const tokens = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 3600, now: t.clock.now });
    const token = await tokens.mint({ sub: "early", groups: [workspace.viewer_group] });
    const session = (await tokens.verifySession(token))!;
    const pending = open(t.app, dashboardId, `svc_session=${token}`);
    // The request is waiting once its bounded wait for the load is armed.
    while (t.clock.pending === 0) await flush();
    set.add({ kind: "session", sessionId: session.sessionId, sub: "early", expiresAt: session.expiresAt });
    set.markLoaded();
    expect((await pending).res.status).toBe(401);
    expect(t.calls).toHaveLength(0);
  });

  test("if the revocations cannot be loaded in time the stream is a 503 with Retry-After, never an unchecked session", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, host: { revocations: createRevocationSet() } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const pending = t.app.request(`/api/dashboards/${dashboardId}/stream`, {
      headers: { cookie: await t.cookieFor([workspace.viewer_group]) },
    });
    while (t.clock.pending === 0) await flush();
    t.clock.advance(5000);
    const res = await pending;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(await res.json()).toMatchObject({ code: "config_store_unavailable" });
    expect(t.calls).toHaveLength(0);
  });
});

describe("drain (in process)", () => {
  test("every stream gets retry with its own delay in 2000..10000 and event: draining, then closes; pollers stop first", async () => {
    let r = 0;
    const randoms = [0, 0.999999, 0.5, 0.25];
    const t = createTestHost({ url: store.url, pool: store.pool, host: { random: () => randoms[r++ % randoms.length] } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const cookie = await t.cookieFor([workspace.viewer_group]);
    const streams = await Promise.all(Array.from({ length: 4 }, () => open(t.app, dashboardId, cookie)));
    for (const s of streams) await s.reader!.next();

    t.deps.drain.start();
    const flushed = t.host.beginDrain();
    expect(t.host.hub.pollerOf(dashboardId)).toBeUndefined();
    const retries: number[] = [];
    for (const s of streams) {
      const frame = await s.reader!.next();
      expect(frame?.event).toBe("draining");
      retries.push(frame!.retry!);
      expect(await s.reader!.next()).toBeNull();
    }
    await flushed;
    expect(retries.sort((x, y) => x - y)).toEqual([2000, 4000, 6000, 10000]);
    // No tick may run any more.
    t.clock.advance(60_000);
    await flush();
    expect(t.calls).toHaveLength(0);
    expect(await t.registry.metrics()).toContain("svc_pollers_active 0");

    // A stream opened while draining gets 200 and the terminal frame at once, without authentication.
    const late = await open(t.app, dashboardId);
    expect(late.res.status).toBe(200);
    const frame = await late.reader!.next();
    expect(frame?.event).toBe("draining");
    expect(frame!.retry).toBeGreaterThanOrEqual(2000);
    expect(await late.reader!.next()).toBeNull();

    const ready = await t.app.request("/api/ready");
    expect(ready.status).toBe(503);
    expect((await ready.json()).status).toBe("draining");
    expect((await t.app.request("/api/health")).status).toBe(200);
    await t.host.settle();
  });
});

describe("compression", () => {
  test("STREAM_COMPRESSION=deflate: a request accepting deflate gets the stream deflated (snapshot, ticks and the drain frame decode, the stream ends whole); one refusing it gets frames as they are", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, env: { STREAM_COMPRESSION: "deflate" } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a"), panel("b")]));
    const cookie = await t.cookieFor([workspace.viewer_group]);
    const path = `/api/dashboards/${dashboardId}/stream`;
    const deflated = await t.app.request(path, { headers: { cookie, "accept-encoding": "gzip, deflate, br, zstd" } });
    const plain = await t.app.request(path, { headers: { cookie, "accept-encoding": "gzip, deflate;q=0, *" } });
    for (const res of [deflated, plain]) {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/event-stream");
      expect(res.headers.get("cache-control")).toBe("no-cache, no-transform");
      expect(res.headers.get("x-accel-buffering")).toBe("no");
      expect(res.headers.get("vary")).toBe("accept-encoding");
    }
    expect(deflated.headers.get("content-encoding")).toBe("deflate");
    expect(plain.headers.get("content-encoding")).toBeNull();
    // The web platform's "deflate" is the zlib format, as HTTP's is; it errors on a stream cut short.
    const d = webStreamReader(deflated.body!.pipeThrough(new DecompressionStream("deflate")));
    const p = webStreamReader(plain.body!);
    expect((await d.next())?.event).toBe("snapshot");
    expect((await p.next())?.event).toBe("snapshot");

    t.clock.runNext();
    await flush();
    const tick = async (r: typeof d) => [await r.next(), await r.next()].map((f) => f?.data).sort();
    const got = await tick(d);
    expect(got).toEqual(await tick(p));
    expect(got.map((x) => JSON.parse(x!).panelId)).toEqual(["a", "b"]);

    t.deps.drain.start();
    const flushed = t.host.beginDrain();
    const terminal = await d.next();
    expect(terminal?.event).toBe("draining");
    expect(terminal!.retry).toBeGreaterThanOrEqual(2000);
    expect(await d.next()).toBeNull();
    await flushed;

    // Opened while draining: the terminal frame alone, deflated too.
    const late = await t.app.request(path, { headers: { "accept-encoding": "deflate" } });
    expect(late.headers.get("content-encoding")).toBe("deflate");
    const l = webStreamReader(late.body!.pipeThrough(new DecompressionStream("deflate")));
    expect((await l.next())?.event).toBe("draining");
    expect(await l.next()).toBeNull();
    await t.host.settle();
  });

  test("STREAM_COMPRESSION=off: no stream is compressed, whatever the request accepts", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool, env: { STREAM_COMPRESSION: "off" } });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const { res, reader } = await (async () => {
      const r = await t.app.request(`/api/dashboards/${dashboardId}/stream`, {
        headers: { cookie: await t.cookieFor([workspace.viewer_group]), "accept-encoding": "deflate" },
      });
      return { res: r, reader: webStreamReader(r.body!) };
    })();
    expect(res.headers.get("content-encoding")).toBeNull();
    expect(res.headers.get("vary")).toBeNull();
    expect((await reader.next())?.event).toBe("snapshot");
    await reader.cancel();
  });
});

/** Waits for a state change caused by the database (a terminated connection), where no gate promise exists. */
async function until(cond: () => boolean, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}
