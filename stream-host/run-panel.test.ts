import type pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RunRequest } from "../lib/query/runner.ts";
import { createSource, saveCatalog } from "../lib/sources/index.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";
import { type HangProxy, startHangProxy } from "../lib/store/testing/hang-proxy.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { createWorkspace } from "../lib/workspaces/store.ts";
import { type LoadedDashboard, panelError } from "./poller.ts";
import { runPanelWith } from "./run-panel.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(async () => {
  await store.close();
});

async function seed(name: string) {
  const ws = await createWorkspace(store.pool, { name, viewer_group: `${name}-v`, editor_group: `${name}-e`, admin_group: `${name}-a` });
  const source = await createSource(store.pool, ws.id, {
    name: "m",
    host: "127.0.0.1",
    port: 5432,
    database: "m",
    sslmode: "disable",
    secretRef: "M",
  });
  return { ws, source };
}

const EMPTY = { columns: [], rows: [], truncated: false, elapsedMs: 0 };

function countingRunner(count: () => void) {
  return {
    run: async () => {
      count();
      return EMPTY;
    },
  };
}

function dashboard(workspaceId: string, sourceId: string): LoadedDashboard {
  return {
    id: "db_x",
    workspaceId,
    version: 1,
    spec: {
      title: "t",
      time: { from: "now-1h", to: "now" },
      panels: [{ id: "p", title: "p", type: "stat", sourceId, sql: "SELECT 1" }],
    },
  };
}

test("runs the stored SQL on the panel's source with the tick's range; the source is re-read after the cache time", async () => {
  const { ws, source } = await seed("rp1");
  const runs: RunRequest[] = [];
  let now = 1_000;
  const runner = {
    run: async (req: RunRequest) => {
      runs.push(req);
      return EMPTY;
    },
  };
  const run = runPanelWith(runner, { pool: store.pool, now: () => now }, { cacheMs: 5000 });
  const d = dashboard(ws.id, source.id);
  const range = { fromMs: 1, toMs: 2 };
  await run(d.spec.panels[0], d, range, new AbortController().signal);
  expect(runs[0]).toMatchObject({ workspaceId: ws.id, sql: "SELECT 1", range, source: { id: source.id, catalog: null } });

  await saveCatalog(store.pool, source.id, { tables: [] }, new Date());
  now += 4000;
  await run(d.spec.panels[0], d, range, new AbortController().signal);
  expect(runs[1].source.catalog).toBeNull();
  now += 1001;
  await run(d.spec.panels[0], d, range, new AbortController().signal);
  expect(runs[2].source.catalog).toEqual({ tables: [] });
});

test("a source of another workspace, or one that does not exist, is the panel's not_found error; no query runs", async () => {
  const a = await seed("rp2a");
  const b = await seed("rp2b");
  let runs = 0;
  const run = runPanelWith(
    countingRunner(() => runs++),
    { pool: store.pool },
  );
  const foreign = dashboard(a.ws.id, b.source.id);
  await expect(run(foreign.spec.panels[0], foreign, { fromMs: 1, toMs: 2 }, new AbortController().signal)).rejects.toMatchObject({
    code: "not_found",
  });
  const missing = dashboard(a.ws.id, "src_missing");
  await expect(run(missing.spec.panels[0], missing, { fromMs: 1, toMs: 2 }, new AbortController().signal)).rejects.toMatchObject({
    code: "not_found",
  });
  expect(runs).toBe(0);
});

test("a poller stopped while the source was being read starts no metric query", async () => {
  const { ws, source } = await seed("rp3");
  let runs = 0;
  const run = runPanelWith(
    countingRunner(() => runs++),
    { pool: store.pool },
  );
  const d = dashboard(ws.id, source.id);
  const abort = new AbortController();
  const pending = run(d.spec.panels[0], d, { fromMs: 1, toMs: 2 }, abort.signal);
  abort.abort();
  await expect(pending).rejects.toMatchObject({ code: "source_unavailable" });
  expect(runs).toBe(0);
});

describe("through a config-store outage (a TCP proxy in front of the test server that refuses or stops forwarding)", () => {
  // A proxy rather than a second server: it stops and hangs in microseconds; the process test
  // (stream-host/dependency-faults.process.test.ts) freezes real servers.
  let proxy: HangProxy;
  let pool: pg.Pool;
  beforeAll(async () => {
    const u = new URL(store.url);
    proxy = await startHangProxy({ host: u.hostname, port: Number(u.port) });
    pool = createConfigStorePool({ connectionString: proxy.urlFor(store.url), max: 2, statementTimeoutMs: 5000 });
  });
  afterAll(async () => {
    proxy.resume();
    await pool.end();
    await proxy.close();
  });

  /** One panel of a seeded dashboard, run through the proxied pool with a recording runner and a manual clock. */
  async function panelThroughProxy(tag: string, opts: { readTimeoutMs: number; staleMaxMs: number }) {
    const { ws, source } = await seed(tag);
    const runs: RunRequest[] = [];
    const clock = { now: 1_000 };
    const run = runPanelWith(
      {
        run: async (req: RunRequest) => {
          runs.push(req);
          return EMPTY;
        },
      },
      { pool, now: () => clock.now },
      { cacheMs: 5000, ...opts },
    );
    const d = dashboard(ws.id, source.id);
    const go = () => run(d.spec.panels[0], d, { fromMs: 1, toMs: 2 }, new AbortController().signal);
    return { source, runs, clock, go };
  }

  test("a stopped store: panels run on the last good copy until CONFIG_STORE_STALE_MAX_MS, then stop with config_store_unavailable; back when it answers", async () => {
    const { source, runs, clock, go } = await panelThroughProxy("rp4", { readTimeoutMs: 2000, staleMaxMs: 60_000 });
    await go();
    await proxy.stop();
    try {
      clock.now += 6000;
      await go();
      clock.now += 6000;
      await go();
      expect(runs.map((r) => r.source.id)).toEqual([source.id, source.id, source.id]);
      clock.now += 60_000;
      const err = await go().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: "config_store_unavailable", extra: { cause: "stale" } });
      expect(panelError(err).code).toBe("config_store_unavailable");
      expect(runs).toHaveLength(3);
    } finally {
      await proxy.start();
    }
    // The store is back: the next read (in the background after a failure) brings a fresh copy.
    clock.now += 6000;
    await until(
      async () =>
        (await go().then(
          () => true,
          () => false,
        )) && runs.length === 4,
      "a panel runs again",
    );
  });

  test("a hung store stalls a panel at most once, for one bounded read; then the copy serves at once while reads retry in the background", async () => {
    const { runs, clock, go } = await panelThroughProxy("rp5", { readTimeoutMs: 150, staleMaxMs: 600_000 });
    await go();
    proxy.hang();
    try {
      clock.now += 6000;
      // The read runs into its bound and is given up; the panel runs on the copy.
      await go();
      expect(runs).toHaveLength(2);
      // Given up at once: the pool holds no client stuck on the hung server beyond the one retry in flight.
      expect(pool.totalCount).toBeLessThanOrEqual(1);
      clock.now += 6000;
      // The store failed the last read: the copy serves without waiting, a read goes on in the background.
      let settled = false;
      const pending = go().then(() => {
        settled = true;
      });
      await until(() => settled, "the panel ran on the copy");
      await pending;
      expect(runs).toHaveLength(3);
    } finally {
      proxy.resume();
    }
  });

  test("with no copy yet, a panel whose source cannot be read fails with config_store_unavailable", async () => {
    const { ws, source } = await seed("rp6");
    let runs = 0;
    const run = runPanelWith(
      countingRunner(() => runs++),
      { pool },
      { readTimeoutMs: 2000 },
    );
    const d = dashboard(ws.id, source.id);
    await proxy.stop();
    try {
      const err = await run(d.spec.panels[0], d, { fromMs: 1, toMs: 2 }, new AbortController().signal).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: "config_store_unavailable", status: 503 });
      expect(JSON.stringify(panelError(err))).not.toMatch(/127\.0\.0\.1|:\d{4,5}/);
      expect(runs).toBe(0);
    } finally {
      await proxy.start();
    }
  });
});

/** Polls `cond`: the store's recovery is seen through real sockets, where no gate promise exists. */
async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
