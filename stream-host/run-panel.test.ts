import { afterAll, beforeAll, expect, test } from "vitest";
import type { RunRequest } from "../lib/query/runner.ts";
import { createSource, saveCatalog } from "../lib/sources/index.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { createWorkspace } from "../lib/workspaces/store.ts";
import type { LoadedDashboard } from "./poller.ts";
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
  const run = runPanelWith(countingRunner(() => runs++), { pool: store.pool });
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
  const run = runPanelWith(countingRunner(() => runs++), { pool: store.pool });
  const d = dashboard(ws.id, source.id);
  const abort = new AbortController();
  const pending = run(d.spec.panels[0], d, { fromMs: 1, toMs: 2 }, abort.signal);
  abort.abort();
  await expect(pending).rejects.toMatchObject({ code: "source_unavailable" });
  expect(runs).toBe(0);
});
