import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DASHBOARD_CHANGED_CHANNEL } from "./store.ts";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import type { AppError } from "../http/errors.ts";
import { createSource, saveCatalog } from "../sources/index.ts";
import { createGuard, loadGuardParser } from "../sql-guard/index.ts";
import { createTestConfigStore } from "../testing/pg.ts";
import { rejection } from "../testing/rejection.ts";
import { createWorkspace } from "../workspaces/store.ts";
import { checkPanels, deleteDashboard, parseDashboardSpec, saveDashboard } from "./save.ts";
import { getDashboard, listDashboards } from "./store.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let deps: Parameters<typeof saveDashboard>[0];
let ws: string;
let otherWs: string;
let sourceId: string;
let otherSourceId: string;
let neverRefreshedId: string;

const GOOD_SQL = "SELECT $__timeGroup(ts, $__interval) AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1";

function spec(panels: { id: string; sql: string; sourceId?: string }[], extra: Record<string, unknown> = {}) {
  return {
    title: "Traffic",
    time: { from: "now-1h", to: "now" },
    panels: panels.map((p) => ({ id: p.id, title: p.id, type: "timeseries" as const, sourceId: p.sourceId ?? sourceId, sql: p.sql })),
    ...extra,
  };
}

beforeAll(async () => {
  await loadGuardParser();
  store = await createTestConfigStore();
  deps = { pool: store.pool, guard: createGuard({}) };
  const groups = (p: string) => ({ viewer_group: `${p}-v`, editor_group: `${p}-e`, admin_group: `${p}-a` });
  ws = (await createWorkspace(store.pool, { name: "A", ...groups("a") })).id;
  otherWs = (await createWorkspace(store.pool, { name: "B", ...groups("b") })).id;
  const source = { name: "m", host: "127.0.0.1", database: "metrics", secretRef: "METRICS" };
  sourceId = (await createSource(store.pool, ws, source)).id;
  await saveCatalog(store.pool, sourceId, DEMO_CATALOG, new Date());
  otherSourceId = (await createSource(store.pool, otherWs, source)).id;
  await saveCatalog(store.pool, otherSourceId, DEMO_CATALOG, new Date());
  neverRefreshedId = (await createSource(store.pool, ws, { ...source, name: "fresh" })).id;
});
afterAll(() => store.close());

describe("saveDashboard refuses panel SQL the guard rejects", () => {
  const hostile: [string, string, string][] = [
    ["writes (DELETE)", "DELETE FROM http_requests", "keyword"],
    ["writes (INSERT)", "INSERT INTO http_requests (ts, status) VALUES (now(), 1)", "keyword"],
    ["writes through a CTE", "WITH d AS (DELETE FROM http_requests RETURNING *) SELECT count(*) FROM d", "keyword"],
    ["SELECT INTO", "SELECT * INTO stolen FROM http_requests WHERE $__timeFilter(ts)", "keyword"],
    ["sleeps", "SELECT pg_sleep(10)", "function"],
    ["sleeps inside a query", "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND pg_sleep(1) IS NOT NULL", "function"],
    ["reads a system catalog", "SELECT usename, passwd FROM pg_catalog.pg_shadow", "catalog"],
    ["reads pg_class unqualified", "SELECT relname FROM pg_class", "catalog"],
    ["reads information_schema", "SELECT table_name FROM information_schema.tables", "catalog"],
    ["two statements", "SELECT 1; DROP TABLE http_requests", "structure"],
    ["a comment", "SELECT 1 -- hi", "comment"],
  ];
  test.each(hostile)("%s", async (_name, sql, reason) => {
    const before = (await listDashboards(store.pool, ws)).length;
    const err = await rejection(
      saveDashboard(deps, {
        workspaceId: ws,
        userSub: "u1",
        spec: spec([
          { id: "p1", sql: GOOD_SQL },
          { id: "bad", sql },
        ]),
      }),
    );
    expect(err.code).toBe("guard_rejected");
    expect(err.status).toBe(422);
    expect(err.extra.panels).toEqual([{ panelId: "bad", reason, message: expect.any(String) }]);
    expect(err.detail).toContain("bad");
    expect((await listDashboards(store.pool, ws)).length).toBe(before);
  });

  test("an update to a hostile spec is refused and leaves the stored spec alone", async () => {
    const saved = await saveDashboard(deps, { workspaceId: ws, userSub: "u1", spec: spec([{ id: "p1", sql: GOOD_SQL }]) });
    const err = await rejection(
      saveDashboard(deps, {
        workspaceId: ws,
        userSub: "u2",
        dashboardId: saved.id,
        baseVersion: saved.version,
        spec: spec([{ id: "p1", sql: "SELECT pg_sleep(100)" }]),
      }),
    );
    expect(err.code).toBe("guard_rejected");
    const now = await getDashboard(store.pool, saved.id);
    expect(now?.version).toBe(1);
    expect(now?.spec.panels[0].sql).toBe(GOOD_SQL);
  });

  test("every failing panel is listed with its reason", async () => {
    const failures = await checkPanels(
      deps,
      ws,
      spec([
        { id: "a", sql: "UPDATE http_requests SET status = 1" },
        { id: "b", sql: GOOD_SQL },
        { id: "c", sql: "SELECT * FROM secrets_table" },
        { id: "d", sql: "SELECT count(*) FROM http_requests" },
      ]),
    );
    expect(failures.map((f) => [f.panelId, f.reason])).toEqual([
      ["a", "keyword"],
      ["c", "catalog"],
      ["d", "time"],
    ]);
  });

  test("a source of another workspace is treated as missing, whatever the SQL", async () => {
    const err = await rejection(
      saveDashboard(deps, {
        workspaceId: ws,
        userSub: "u1",
        spec: spec([
          { id: "x", sql: GOOD_SQL, sourceId: otherSourceId },
          { id: "y", sql: GOOD_SQL, sourceId: "src_nope" },
        ]),
      }),
    );
    expect(err.extra.panels).toEqual([
      { panelId: "x", reason: "source", message: expect.any(String) },
      { panelId: "y", reason: "source", message: expect.any(String) },
    ]);
  });

  test("a never-refreshed catalog refuses the panel with reason catalog", async () => {
    const err = await rejection(
      saveDashboard(deps, { workspaceId: ws, userSub: "u1", spec: spec([{ id: "n", sql: GOOD_SQL, sourceId: neverRefreshedId }]) }),
    );
    expect(err.extra.panels).toMatchObject([{ panelId: "n", reason: "catalog" }]);
  });
});

describe("spec validation", () => {
  test.each([
    ["refresh below the floor", { refreshIntervalMs: 500 }, "spec.refreshIntervalMs"],
    ["bad time expression", { time: { from: "yesterday", to: "now" } }, "spec.time.from"],
    ["unknown panel type", { panels: [{ id: "p", title: "p", type: "pie", sourceId: "s", sql: "SELECT 1" }] }, "spec.panels.0.type"],
    ["a duplicate variable", { variables: [1, 2].map(() => ({ name: "v", type: "custom", values: ["a"] })) }, "spec.variables.1.name"],
  ])("%s is a 400 validation_failed naming the field, as the dashboards API answers", async (_n, extra, path) => {
    const err = await rejection(Promise.resolve().then(() => parseDashboardSpec(spec([{ id: "p1", sql: GOOD_SQL }], extra), 2000)));
    expect(err.code).toBe("validation_failed");
    expect(err.status).toBe(400);
    expect(err.extra.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  });

  test("an update without a base version is refused", async () => {
    const saved = await saveDashboard(deps, { workspaceId: ws, userSub: "u1", spec: spec([{ id: "p1", sql: GOOD_SQL }]) });
    const err = await rejection(saveDashboard(deps, { workspaceId: ws, userSub: "u1", dashboardId: saved.id, spec: spec([]) }));
    expect(err.code).toBe("validation_failed");
  });
});

describe("optimistic concurrency", () => {
  test("two saves from the same version: exactly one wins, the other gets version_conflict and overwrites nothing", async () => {
    const base = await saveDashboard(deps, { workspaceId: ws, userSub: "creator", spec: spec([{ id: "p1", sql: GOOD_SQL }]) });
    const edit = (who: string) =>
      saveDashboard(deps, {
        workspaceId: ws,
        userSub: who,
        dashboardId: base.id,
        baseVersion: base.version,
        spec: spec([{ id: "p1", sql: GOOD_SQL }], { title: `edited by ${who}` }),
      });
    const results = await Promise.allSettled([edit("alice"), edit("bob")]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r) => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    const err = (lost[0] as PromiseRejectedResult).reason as AppError;
    expect(err.code).toBe("version_conflict");
    expect(err.extra).toMatchObject({ currentVersion: 2, baseVersion: 1 });
    const winner = (won[0] as PromiseFulfilledResult<{ updatedBy: string }>).value.updatedBy;
    const stored = await getDashboard(store.pool, base.id);
    expect(stored?.version).toBe(2);
    expect(stored?.spec.title).toBe(`edited by ${winner}`);
    expect(stored?.updatedBy).toBe(winner);
  });

  test("an update of a dashboard in another workspace is not_found", async () => {
    const saved = await saveDashboard(deps, { workspaceId: ws, userSub: "u", spec: spec([{ id: "p1", sql: GOOD_SQL }]) });
    const err = await rejection(
      saveDashboard(deps, { workspaceId: otherWs, userSub: "u", dashboardId: saved.id, baseVersion: 1, spec: spec([]) }),
    );
    expect(err.code).toBe("not_found");
  });

  test("delete with a stale version is a conflict; with the current one it deletes", async () => {
    const saved = await saveDashboard(deps, { workspaceId: ws, userSub: "u", spec: spec([{ id: "p1", sql: GOOD_SQL }]) });
    await saveDashboard(deps, {
      workspaceId: ws,
      userSub: "u",
      dashboardId: saved.id,
      baseVersion: 1,
      spec: spec([{ id: "p1", sql: GOOD_SQL }]),
    });
    expect((await rejection(deleteDashboard(store.pool, { dashboardId: saved.id, workspaceId: ws, baseVersion: 1 }))).code).toBe(
      "version_conflict",
    );
    await deleteDashboard(store.pool, { dashboardId: saved.id, workspaceId: ws, baseVersion: 2 });
    expect(await getDashboard(store.pool, saved.id)).toBeNull();
    expect((await rejection(deleteDashboard(store.pool, { dashboardId: saved.id, workspaceId: ws }))).code).toBe("not_found");
  });
});

describe("change notifications", () => {
  test("create, update and delete each NOTIFY the dashboard id; a refused save does not", async () => {
    const listener = new pg.Client({ connectionString: store.url });
    await listener.connect();
    const seen: string[] = [];
    let wake: () => void = () => {};
    listener.on("notification", (n) => {
      if (n.channel === DASHBOARD_CHANGED_CHANNEL && n.payload) seen.push(n.payload);
      wake();
    });
    await listener.query(`LISTEN ${DASHBOARD_CHANGED_CHANNEL}`);
    const next = (count: number) =>
      new Promise<void>((resolve) => {
        wake = () => seen.length >= count && resolve();
        wake();
      });
    try {
      const saved = await saveDashboard(deps, { workspaceId: ws, userSub: "u", spec: spec([{ id: "p1", sql: GOOD_SQL }]) });
      await next(1);
      await rejection(
        saveDashboard(deps, {
          workspaceId: ws,
          userSub: "u",
          dashboardId: saved.id,
          baseVersion: 1,
          spec: spec([{ id: "p1", sql: "DELETE FROM x" }]),
        }),
      );
      await rejection(
        saveDashboard(deps, {
          workspaceId: ws,
          userSub: "u",
          dashboardId: saved.id,
          baseVersion: 7,
          spec: spec([{ id: "p1", sql: GOOD_SQL }]),
        }),
      );
      await saveDashboard(deps, {
        workspaceId: ws,
        userSub: "u",
        dashboardId: saved.id,
        baseVersion: 1,
        spec: spec([{ id: "p1", sql: GOOD_SQL }]),
      });
      await next(2);
      await deleteDashboard(store.pool, { dashboardId: saved.id, workspaceId: ws });
      await next(3);
      expect(seen).toEqual([saved.id, saved.id, saved.id]);
    } finally {
      await listener.end();
    }
  });
});

describe("variables on save", () => {
  const service = { name: "service", type: "custom" as const, values: ["api", "web"] };
  const routes = {
    name: "routes",
    type: "query" as const,
    sourceId: "",
    sql: "SELECT DISTINCT route FROM http_requests WHERE $__timeFilter(ts)",
    multi: true,
  };
  const USES = `SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service = $service AND route IN ($routes)`;

  test("panels may name the declared variables; query variables' SQL passes the guard", async () => {
    const saved = await saveDashboard(deps, {
      workspaceId: ws,
      userSub: "u1",
      spec: spec([{ id: "p", sql: USES }], { variables: [service, { ...routes, sourceId }] }),
    });
    expect(saved.spec.variables).toHaveLength(2);
  });

  test("a panel naming an undeclared variable is refused with structure, naming it", async () => {
    const err = await rejection(
      saveDashboard(deps, { workspaceId: ws, userSub: "u1", spec: spec([{ id: "p", sql: USES }], { variables: [service] }) }),
    );
    expect(err.code).toBe("guard_rejected");
    expect(err.extra.panels).toEqual([{ panelId: "p", reason: "structure", message: expect.stringContaining("$routes") }]);
  });

  test.each([
    ["writes", "DELETE FROM http_requests", "keyword"],
    ["reads a system catalog", "SELECT usename FROM pg_catalog.pg_user", "catalog"],
    ["names a variable", "SELECT DISTINCT route FROM http_requests WHERE $__timeFilter(ts) AND service = $service", "structure"],
    ["misses the time filter", "SELECT DISTINCT route FROM http_requests", "time"],
  ])("a query variable whose SQL %s is refused, naming the variable", async (_n, sql, reason) => {
    const err = await rejection(
      saveDashboard(deps, {
        workspaceId: ws,
        userSub: "u1",
        spec: spec([{ id: "p", sql: GOOD_SQL }], { variables: [service, { ...routes, sourceId, sql }] }),
      }),
    );
    expect(err.code).toBe("guard_rejected");
    expect(err.extra).toMatchObject({ reason, panels: [], variables: [{ variable: "routes", reason }] });
    expect(err.detail).toContain("$routes");
  });

  test("a query variable on another workspace's source is refused like a missing one", async () => {
    const err = await rejection(
      saveDashboard(deps, {
        workspaceId: ws,
        userSub: "u1",
        spec: spec([{ id: "p", sql: GOOD_SQL }], { variables: [{ ...routes, sourceId: otherSourceId }] }),
      }),
    );
    expect(err.extra.variables).toEqual([{ variable: "routes", reason: "source", message: expect.any(String) }]);
  });
});

describe("a save warns of panels whose fixed bucket gives more points per series than the browser keeps", () => {
  const NOW = Date.UTC(2026, 10, 27, 6, 30);
  const withPoints = () => ({ ...deps, points: { maxWindowPoints: 720, now: () => NOW } });
  const day = (panels: { id: string; sql: string }[], time = { from: "now-24h", to: "now" }) => spec(panels, { time });
  const perMinute = "SELECT $__timeGroup(ts, '1m') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1";

  test.each([
    ["$__timeGroup(ts, '1m')", perMinute],
    [
      "date_bin('1 minute', ...)",
      "SELECT date_bin('1 minute', ts, timestamptz 'epoch') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
    ],
    [
      "date_trunc('minute', ...) per service",
      "SELECT date_trunc('minute', ts) AS t, service, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1",
    ],
  ])("%s over 24 h: 1,440 points per series, 720 kept, named by panel; the save goes through", async (_name, sql) => {
    const saved = await saveDashboard(withPoints(), {
      workspaceId: ws,
      userSub: "u1",
      spec: day([
        { id: "fine", sql },
        { id: "ok", sql: GOOD_SQL },
      ]),
    });
    expect(saved.warnings).toEqual([
      {
        panelId: "fine",
        pointsPerSeries: 1440,
        kept: 720,
        rangeMs: 86_400_000,
        stepMs: 60_000,
        message: "1,440 points per series over 24 h; 720 are kept (MAX_WINDOW_POINTS). Use $__interval or a coarser bucket.",
      },
    ]);
    expect((await getDashboard(store.pool, saved.id))?.version).toBe(1);
  });

  test.each([
    ["$__interval (never more than MAX_WINDOW_POINTS by construction)", GOOD_SQL, { from: "now-24h", to: "now" }],
    ["a 5-minute bucket over 24 h (288 points)", perMinute.replace("'1m'", "'5m'"), { from: "now-24h", to: "now" }],
    ["a 1-minute bucket over 12 h (exactly 720)", perMinute, { from: "now-12h", to: "now" }],
    ["no bucket", "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)", { from: "now-24h", to: "now" }],
  ])("no warning for %s", async (_name, sql, time) => {
    const saved = await saveDashboard(withPoints(), { workspaceId: ws, userSub: "u1", spec: day([{ id: "p", sql }], time) });
    expect(saved.warnings).toEqual([]);
  });

  test("the saved range counts as written: fixed instants, and an update warns too", async () => {
    const first = await saveDashboard(withPoints(), {
      workspaceId: ws,
      userSub: "u1",
      spec: day([{ id: "p", sql: perMinute }], { from: "2026-11-20T00:00:00Z", to: "2026-11-21T00:00:00Z" }),
    });
    expect(first.warnings.map((w) => w.pointsPerSeries)).toEqual([1440]);
    const updated = await saveDashboard(withPoints(), {
      workspaceId: ws,
      userSub: "u1",
      dashboardId: first.id,
      baseVersion: first.version,
      spec: day([{ id: "p", sql: perMinute }], { from: "now-7d", to: "now" }),
    });
    expect(updated.warnings[0]).toMatchObject({ panelId: "p", pointsPerSeries: 10_080, message: expect.stringContaining("over 7 d") });
  });

  test("without `points` (provisioning, the demo) nothing is computed", async () => {
    const saved = await saveDashboard(deps, { workspaceId: ws, userSub: "u1", spec: day([{ id: "p", sql: perMinute }]) });
    expect(saved.warnings).toEqual([]);
  });
});
