import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { NEVER_EXPIRES, tokenSub } from "../lib/api-tokens/authenticate.ts";
import { createApiToken, revokeApiToken } from "../lib/api-tokens/store.ts";
import { recordRevocation } from "../lib/auth/revocations.ts";
import type { Role } from "../lib/auth/types.ts";
import { createLogger } from "../lib/log/logger.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { listenerClientFactory } from "./dashboards.ts";
import { createTestHost, flush, panel, seedDashboard, spec } from "./testing/fixture.ts";
import { webStreamReader } from "./testing/sse-parse.ts";

// The stream host takes API tokens (Authorization: Bearer) like session cookies: the token's role in its own
// workspace only, hostile tokens a 401, and a revoked token's open streams end on every host at once.

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(async () => {
  await store.close();
});

async function open(app: { request: (p: string, i?: RequestInit) => Response | Promise<Response> }, id: string, token: string) {
  const res = await app.request(`/api/dashboards/${id}/stream`, { headers: { authorization: `Bearer ${token}` } });
  return { res, reader: res.body && res.status === 200 ? webStreamReader(res.body) : null };
}

async function tokenFor(workspaceId: string, role: Role = "viewer") {
  const t = await createApiToken(store.pool, {
    workspaceId,
    name: "stream",
    role,
    createdBy: "test",
    expiresAt: null,
    createdAt: new Date(0),
  });
  return { id: t.stored.id, token: t.token };
}

describe("API tokens on the stream", () => {
  test.each(["viewer", "editor", "admin"] as const)("a %s token of the dashboard's workspace streams", async (role) => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const s = await open(t.app, dashboardId, (await tokenFor(workspace.id, role)).token);
    expect(s.res.status).toBe(200);
    expect((await s.reader!.next())?.event).toBe("snapshot");
    await s.reader!.cancel();
  });

  test("the stream host writes one access line per stream: the pattern, status and caller kind, never the token", async () => {
    const raw: string[] = [];
    const t = createTestHost({ url: store.url, pool: store.pool, log: createLogger({ write: (l) => raw.push(l) }) });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const tok = await tokenFor(workspace.id);
    const s = await open(t.app, dashboardId, tok.token);
    await s.reader!.next();
    await s.reader!.cancel();
    await open(t.app, dashboardId, "pbt_nope");
    const lines = raw.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
    expect(lines.map((l) => [l.method, l.route, l.status, l.caller])).toEqual([
      ["GET", "/api/dashboards/:id/stream", 200, "token"],
      ["GET", "/api/dashboards/:id/stream", 401, "anonymous"],
    ]);
    expect(raw.join("")).not.toContain(tok.token);
    expect(raw.join("")).not.toContain(dashboardId);
  });

  test("a token of another workspace gets the same 404 as a missing dashboard", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId } = await seedDashboard(store.pool, spec([panel("a")]));
    const { workspace: other } = await seedDashboard(store.pool, spec([panel("a")]));
    const s = await open(t.app, dashboardId, (await tokenFor(other.id, "admin")).token);
    expect(s.res.status).toBe(404);
    expect(t.calls).toHaveLength(0);
  });

  test.each([
    ["empty", ""],
    ["10,000 characters", "a".repeat(10_000)],
    ["well-formed but never issued", `pbt_0123456789ab_${"A".repeat(43)}`],
  ])("%s: 401 problem naming what is wrong", async (_label, token) => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId } = await seedDashboard(store.pool, spec([panel("a")]));
    const s = await open(t.app, dashboardId, token);
    expect(s.res.status).toBe(401);
    expect(s.res.headers.get("content-type")).toBe("application/problem+json");
    expect((await s.res.json()).detail).toMatch(/^The API token was refused: /);
  });

  test("a revoked token is refused, and one past its expiry too", async () => {
    const t = createTestHost({ url: store.url, pool: store.pool });
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const revoked = await tokenFor(workspace.id);
    await revokeApiToken(store.pool, workspace.id, revoked.id, "admin", new Date(0));
    expect((await open(t.app, dashboardId, revoked.token)).res.status).toBe(401);
    const expiring = await createApiToken(store.pool, {
      workspaceId: workspace.id,
      name: "short",
      role: "viewer",
      createdBy: "test",
      expiresAt: new Date(t.clock.now() - 1),
      createdAt: new Date(0),
    });
    const res = (await open(t.app, dashboardId, expiring.token)).res;
    expect(res.status).toBe(401);
    expect((await res.json()).detail).toMatch(/expired at/);
  });

  test("revoking a token ends its open streams on every host at once (NOTIFY), and leaves other tokens' streams alone", async () => {
    const hosts = [0, 1].map(() =>
      createTestHost({ url: store.url, pool: store.pool, host: { listen: listenerClientFactory(store.url) } }),
    );
    try {
      const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
      const doomed = await tokenFor(workspace.id);
      const kept = await tokenFor(workspace.id);
      for (const h of hosts) h.host.start();
      await Promise.all(hosts.map((h) => h.host.listenerReady()));
      const streams = await Promise.all(hosts.map((h) => open(h.app, dashboardId, doomed.token)));
      const others = await Promise.all(hosts.map((h) => open(h.app, dashboardId, kept.token)));
      for (const s of [...streams, ...others]) expect((await s.reader!.next())?.event).toBe("snapshot");

      // What DELETE /api/workspaces/:id/tokens/:tokenId does: mark the row, then record and announce the revocation.
      await revokeApiToken(store.pool, workspace.id, doomed.id, "admin", new Date());
      await recordRevocation(
        store.pool,
        { kind: "session", sessionId: doomed.id, sub: tokenSub(doomed.id), expiresAt: NEVER_EXPIRES },
        Date.now(),
      );
      for (const s of streams) {
        let frame = await s.reader!.next();
        while (frame?.event === "panel") frame = await s.reader!.next();
        expect(frame?.event).toBe("session_expired");
        expect(JSON.parse(frame?.data ?? "null")).toMatchObject({ reason: "revoked" });
        expect(await s.reader!.next()).toBeNull();
      }
      await flush();
      for (const h of hosts) expect(h.host.hub.subscribersOf(dashboardId)).toBe(1);
      for (const s of others) await s.reader!.cancel();
    } finally {
      for (const h of hosts) {
        await h.host.beginDrain();
        await h.host.settle();
      }
    }
  });
});
