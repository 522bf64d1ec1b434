// A new stream while the config store is down or hung. The store sits behind a TCP proxy in this test
// (lib/store/testing/hang-proxy.ts) that refuses (down) or stops forwarding (hung, as a SIGSTOPped server
// looks to its clients) in front of the run's shared PostgreSQL: it switches in microseconds, where a
// second embedded server per file costs seconds. stream-host/dependency-faults.process.test.ts freezes
// real servers with SIGSTOP.
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLogger } from "../lib/log/logger.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";
import { type HangProxy, startHangProxy } from "../lib/store/testing/hang-proxy.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { createTestHost, panel, seedDashboard, spec } from "./testing/fixture.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let proxy: HangProxy;
let pool: pg.Pool;
beforeAll(async () => {
  store = await createTestConfigStore();
  const u = new URL(store.url);
  proxy = await startHangProxy({ host: u.hostname, port: Number(u.port) });
  pool = createConfigStorePool({ connectionString: proxy.urlFor(store.url), max: 2, statementTimeoutMs: 5000 });
});
afterAll(async () => {
  proxy.resume();
  await pool.end();
  await proxy.close();
  await store.close();
});

/** Polls `cond`: requests reach the hung socket through real I/O, where no gate promise exists. */
async function until(cond: () => boolean, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function host() {
  const lines: string[] = [];
  const t = createTestHost({ url: store.url, pool, log: createLogger({ write: (l) => lines.push(l) }) });
  return { t, lines };
}

const ADDRESS = (port: number) => new RegExp(`127\\.0\\.0\\.1|localhost|:${port}\\b|\\b${port}\\b`);

describe("a stream opened during a config-store fault", () => {
  test("store down: 503 config_store_unavailable with Retry-After at once, logged with a code and ids only; 200 again once it is back", async () => {
    const { t, lines } = host();
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const cookie = await t.cookieFor([workspace.viewer_group]);
    await proxy.stop();
    try {
      const res = await t.app.request(`/api/dashboards/${dashboardId}/stream`, { headers: { cookie } });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("5");
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      const body = await res.json();
      expect(body).toMatchObject({ code: "config_store_unavailable", status: 503 });
      const logged = lines.map((l) => JSON.parse(l));
      expect(logged).toContainEqual(expect.objectContaining({ msg: "config store unavailable", requestId: body.requestId }));
      const text = JSON.stringify(body) + lines.join("");
      expect(text).not.toMatch(ADDRESS(proxy.port));
      expect(text).not.toMatch(ADDRESS(Number(new URL(store.url).port)));
    } finally {
      await proxy.start();
    }
    const ok = await t.app.request(`/api/dashboards/${dashboardId}/stream`, { headers: { cookie } });
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
  });

  test("store hung: more requests than the pool has clients all answer 503 when READINESS_CHECK_TIMEOUT_MS runs out, the pool is not exhausted, and streams open after the hang", async () => {
    const { t } = host();
    const { dashboardId, workspace } = await seedDashboard(store.pool, spec([panel("a")]));
    const cookie = await t.cookieFor([workspace.viewer_group]);
    // Two healthy connections in the pool first, so the hang catches idle clients as well as new ones.
    await Promise.all([pool.query("SELECT 1"), pool.query("SELECT 1")]);
    proxy.hang();
    try {
      const answers = Array.from({ length: 5 }, () =>
        Promise.resolve(t.app.request(`/api/dashboards/${dashboardId}/stream`, { headers: { cookie } })),
      );
      // Every request is waiting on the store, each with its deadline armed on the host's clock.
      await until(() => t.clock.pendingDelays().filter((d) => d === 2000).length === 5, "five requests waiting on the store");
      t.clock.advance(2000);
      const responses = await Promise.all(answers);
      for (const res of responses) {
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBe("5");
        expect(await res.json()).toMatchObject({ code: "config_store_unavailable", cause: "timeout" });
      }
      // The clients the requests held were given up at once; nothing waits on a pool slot it cannot get.
      expect(pool.totalCount).toBeLessThanOrEqual(2);
      expect(pool.idleCount).toBe(0);
    } finally {
      proxy.resume();
    }
    const ok = await t.app.request(`/api/dashboards/${dashboardId}/stream`, { headers: { cookie } });
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
    expect(pool.totalCount).toBeLessThanOrEqual(2);
  });
});
