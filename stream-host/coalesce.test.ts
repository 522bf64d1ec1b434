// Coalesced queries, counted at the database: panels with the same source, statement, bound values and range
// on different dashboards share one query per tick (their pollers tick on one grid per cadence); another
// workspace's source on the same database, or another variable value, is a query of its own. The real runner
// and guard against a metrics database whose view logs every query it serves (stream-host/testing/seed.ts).
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../lib/config/parse.ts";
import type { DashboardSpec } from "../lib/dashboards/spec.ts";
import type { Cell } from "../lib/live/frames.ts";
import { createManualTimers } from "../lib/lifecycle/manual-timers.ts";
import { createLogger } from "../lib/log/logger.ts";
import { createMetrics } from "../lib/metrics/metrics.ts";
import { createSecretsDir } from "../lib/query/testing/metrics-db.ts";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { buildQueryServices } from "../lib/service/query-services.ts";
import { newId } from "../lib/store/ids.ts";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";
import { createStreamHost } from "./app.ts";
import { loadDashboard } from "./dashboards.ts";
import type { Sink } from "./sse.ts";
import { prepareCountingMetricsDb, seedStreamFixture } from "./testing/seed.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let counting: Awaited<ReturnType<typeof prepareCountingMetricsDb>>;
let secrets: Awaited<ReturnType<typeof createSecretsDir>>;
let env: Record<string, string>;
/** Dashboards by what they should share: three in workspace A, one in B, and three with a variable (1, 2, 1). */
let ids: { a: string[]; b: string; vars: string[] };

const REFRESH_MS = 5000;

beforeAll(async () => {
  store = await createTestConfigStore();
  const metricsUrl = (await createDatabase("coalesce_metrics")).url;
  counting = await prepareCountingMetricsDb(metricsUrl);
  const panels = [{ id: "p1", view: "counted_v" }];
  const a = await seedStreamFixture(store.pool, { metricsUrl, panels, refreshIntervalMs: REFRESH_MS, dashboards: 3 });
  const b = await seedStreamFixture(store.pool, { metricsUrl, panels, refreshIntervalMs: REFRESH_MS });
  const vars: string[] = [];
  for (const value of ["1", "2", "1"]) {
    const spec: DashboardSpec = {
      title: "With a variable",
      refreshIntervalMs: REFRESH_MS,
      time: { from: "now-1h", to: "now" },
      variables: [{ name: "n", type: "custom", values: ["1", "2"], default: value }],
      panels: [{ id: "p1", title: "p1", type: "stat", sourceId: a.sourceId, sql: "SELECT n FROM counted_v WHERE n = $n" }],
    };
    const id = newId("db");
    await store.pool.query(
      "INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by) VALUES ($1, $2, $3, 1, 'test', 'test')",
      [id, a.workspace.id, JSON.stringify(spec)],
    );
    vars.push(id);
  }
  ids = { a: a.dashboardIds, b: b.dashboardIds[0], vars };
  secrets = await createSecretsDir();
  await secrets.set("METRICS_USERNAME", a.env.METRICS_USERNAME);
  await secrets.set("METRICS_PASSWORD", a.env.METRICS_PASSWORD);
  env = {
    SOURCE_SECRET_REFS: `METRICS:${a.workspace.id},${b.workspace.id}`,
    SOURCE_ALLOWED_HOSTS: a.env.SOURCE_ALLOWED_HOSTS,
    SOURCE_SECRETS_DIR: secrets.dir,
  };
}, 60_000);

afterAll(async () => {
  await counting?.close();
  await secrets?.remove();
  await store?.close();
});

/** A sink that keeps the rows of every panel frame it is sent. */
function sink() {
  const rows: Cell[][][] = [];
  let closed = false;
  const s: Sink = {
    write(frame) {
      for (const m of Buffer.from(frame)
        .toString()
        .matchAll(/^event: panel\ndata: (.*)$/gm)) {
        const data = JSON.parse(m[1]) as { result?: { rows: Cell[][] } };
        if (data.result) rows.push(data.result.rows);
      }
      return true;
    },
    async end() {
      closed = true;
    },
    destroy() {
      closed = true;
    },
    onClose() {},
    get closed() {
      return closed;
    },
  };
  return { sink: s, rows };
}

async function run(coalesce: boolean) {
  const clock = createManualTimers();
  const { config } = parseConfig({
    DATABASE_URL: store.url,
    NODE_ENV: "test",
    COALESCE_PANEL_QUERIES: String(coalesce),
    ...env,
  });
  const metrics = createMetrics(new Registry(), { defaultCollectors: false });
  const deps = buildServiceDeps(config, { pool: store.pool, metrics, log: createLogger({ silent: true }), now: clock.now });
  const { queryRunner } = await buildQueryServices(config, metrics);
  const host = createStreamHost(deps, { queryRunner, sessions: null, timers: clock.timers, monotonic: clock.now, listen: false });
  const sinks = new Map<string, ReturnType<typeof sink>>();
  for (const id of [...ids.a, ids.b, ...ids.vars]) {
    const d = await loadDashboard(store.pool, id);
    if (!d) throw new Error("dashboard missing");
    const s = sink();
    sinks.set(id, s);
    host.hub.subscribe(d, s.sink);
  }
  const perTick: number[] = [];
  try {
    for (let tick = 0; tick < 3; tick++) {
      const before = await counting.count("counted");
      // The first ticks start at once; later ones come due together on the cadence's grid.
      clock.advance(tick === 0 ? 0 : REFRESH_MS);
      await host.hub.idle();
      perTick.push((await counting.count("counted")) - before);
    }
    clock.advance(1000);
    return { perTick, sinks, shared: queryRunner.shared };
  } finally {
    host.beginDrain();
    await host.settle();
  }
}

describe("coalesced panel queries (real PostgreSQL, queries counted at the database)", () => {
  test("identical panels share one query per tick across dashboards; other workspaces and other values do not", async () => {
    const on = await run(true);
    // Workspace A's three dashboards: 1; workspace B's: 1; the variable's values 1, 2, 1: 2.
    expect(on.perTick).toEqual([4, 4, 4]);
    expect(on.shared.joined).toBe(3 * 3);
    for (const id of [...ids.a, ids.b, ids.vars[0], ids.vars[2]]) expect(on.sinks.get(id)?.rows).toEqual([[[1]], [[1]], [[1]]]);
    // The view logs the query and returns n = 1: the dashboard bound to 2 has its own (empty) result.
    expect(on.sinks.get(ids.vars[1])?.rows).toEqual([[], [], []]);

    const off = await run(false);
    expect(off.perTick).toEqual([7, 7, 7]);
    expect(off.shared).toEqual({ started: 0, joined: 0 });
  }, 60_000);
});
