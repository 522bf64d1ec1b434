import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../../../lib/auth/session.ts";
import { getDashboard } from "../../../lib/dashboards/store.ts";
import { saveProblemLists } from "../../../web/lib/save-problem.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec, ORIGIN, SESSION_SECRET } from "../../testing/api-fixture.ts";

let fx: ApiFixture;
let editor: string;
let viewer: string;
let base: string;

beforeAll(async () => {
  fx = await createApiFixture();
  editor = fx.roles.cookies.editor!;
  viewer = fx.roles.cookies.viewer!;
  base = `/api/workspaces/${fx.roles.workspace.id}/dashboards`;
});
afterAll(() => fx.close());

async function create(spec: unknown = dashboardSpec(fx.source.id)) {
  const res = await call(fx.app, editor, "POST", base, { spec });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; version: number; spec: { title: string } };
}

describe("dashboards: happy path", () => {
  test("create, list, read, update, delete", async () => {
    const res = await call(fx.app, editor, "POST", base, { spec: dashboardSpec(fx.source.id) });
    expect(res.status).toBe(201);
    const created = await res.json();
    expect(res.headers.get("location")).toBe(`/api/dashboards/${created.id}`);
    expect(created).toMatchObject({
      workspaceId: fx.roles.workspace.id,
      version: 1,
      effectiveRefreshIntervalMs: 10_000,
      createdBy: fx.roles.users.editor.sub,
      spec: { title: "HTTP traffic" },
    });

    const list = await (await call(fx.app, viewer, "GET", base)).json();
    expect(list.dashboards).toContainEqual(expect.objectContaining({ id: created.id, title: "HTTP traffic", version: 1, panelCount: 2 }));

    const read = await call(fx.app, viewer, "GET", `/api/dashboards/${created.id}`);
    expect(read.status).toBe(200);
    expect((await read.json()).spec.panels).toHaveLength(2);

    const upd = await call(fx.app, editor, "PUT", `/api/dashboards/${created.id}`, {
      version: 1,
      spec: dashboardSpec(fx.source.id, { title: "Renamed" }),
    });
    expect(upd.status).toBe(200);
    expect(await upd.json()).toMatchObject({ version: 2, spec: { title: "Renamed" }, updatedBy: fx.roles.users.editor.sub });

    expect((await call(fx.app, editor, "DELETE", `/api/dashboards/${created.id}`)).status).toBe(204);
    expect((await call(fx.app, viewer, "GET", `/api/dashboards/${created.id}`)).status).toBe(404);
  });

  test("without refreshIntervalMs the default applies; a stored value below a raised floor is clamped on read", async () => {
    const d = await create({ ...dashboardSpec(fx.source.id), refreshIntervalMs: undefined });
    const got = await (await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}`)).json();
    expect(got.effectiveRefreshIntervalMs).toBe(fx.config.DEFAULT_REFRESH_INTERVAL_MS);
    await fx.pool.query(`UPDATE dashboards SET spec = jsonb_set(spec, '{refreshIntervalMs}', '100') WHERE id = $1`, [d.id]);
    const clamped = await (await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}`)).json();
    expect(clamped.effectiveRefreshIntervalMs).toBe(fx.config.MIN_REFRESH_INTERVAL_MS);
  });
});

describe("dashboards: the points warning of a save", () => {
  const perMinute = {
    id: "per-minute",
    title: "Per minute",
    type: "timeseries" as const,
    sql: "SELECT $__timeGroup(ts, '1m') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
  };

  test("create and update answer warnings naming the panel whose fixed bucket gives more points than are kept; the save goes through", async () => {
    const base24h = dashboardSpec(fx.source.id, { time: { from: "now-24h", to: "now" } });
    const spec = { ...base24h, panels: [...base24h.panels, { ...perMinute, sourceId: fx.source.id }] };
    const res = await call(fx.app, editor, "POST", base, { spec });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: string; warnings: unknown[] };
    expect(created.warnings).toEqual([
      {
        panelId: "per-minute",
        pointsPerSeries: 1440,
        kept: fx.config.MAX_WINDOW_POINTS,
        rangeMs: 86_400_000,
        stepMs: 60_000,
        message: "1,440 points per series over 24 h; 720 are kept (MAX_WINDOW_POINTS). Use $__interval or a coarser bucket.",
      },
    ]);
    // Over 6 h the same bucket fits: the update answers no warning.
    const upd = await call(fx.app, editor, "PUT", `/api/dashboards/${created.id}`, {
      version: 1,
      spec: { ...spec, time: { from: "now-6h", to: "now" } },
    });
    expect(upd.status).toBe(200);
    expect(((await upd.json()) as { warnings: unknown[] }).warnings).toEqual([]);
  });
});

describe("dashboards: defaults and counting", () => {
  test("a new dashboard without a time range gets DEFAULT_TIME_FROM / DEFAULT_TIME_TO", async () => {
    const { time: _, ...spec } = dashboardSpec(fx.source.id);
    const d = await create(spec);
    const got = await (await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}`)).json();
    expect(got.spec.time).toEqual({ from: fx.config.DEFAULT_TIME_FROM, to: fx.config.DEFAULT_TIME_TO });
    // An update still has to say which range it wants.
    const upd = await call(fx.app, editor, "PUT", `/api/dashboards/${d.id}`, { version: 1, spec });
    expect(upd.status).toBe(400);
  });

  test("a save refused by the guard is counted in svc_sql_validation_rejections_total{reason}", async () => {
    const count = async () => {
      const text = await fx.registry.getSingleMetricAsString("svc_sql_validation_rejections_total");
      return Number(/reason="function"} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const before = await count();
    const spec = dashboardSpec(fx.source.id);
    spec.panels[1] = { ...spec.panels[1], sql: "SELECT pg_sleep(5)" };
    const res = await call(fx.app, editor, "POST", base, { spec });
    expect(res.status).toBe(422);
    expect(await count()).toBe(before + 1);
  });
});

describe("dashboards: lost update", () => {
  test("two editors save from the same version: one wins, the other gets 409 and nothing is overwritten", async () => {
    const d = await create();
    const sessions = createSessionTokens({ secret: SESSION_SECRET, ttlSeconds: 600 });
    const other = `${fx.roles.cookieName}=${await sessions.mint({ sub: "second-editor", groups: [fx.roles.workspace.editor_group] })}`;
    const put = (cookie: string, title: string) =>
      call(fx.app, cookie, "PUT", `/api/dashboards/${d.id}`, { version: 1, spec: dashboardSpec(fx.source.id, { title }) });
    const [a, b] = await Promise.all([put(editor, "by first"), put(other, "by second")]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([200, 409]);
    const loser = a.status === 409 ? a : b;
    const winnerTitle = a.status === 200 ? "by first" : "by second";
    const problem = await loser.json();
    expect(loser.headers.get("content-type")).toContain("application/problem+json");
    expect(problem).toMatchObject({ code: "version_conflict", status: 409, currentVersion: 2, baseVersion: 1 });
    const stored = await getDashboard(fx.pool, d.id);
    expect(stored?.version).toBe(2);
    expect(stored?.spec.title).toBe(winnerTitle);

    // The loser reloads and reapplies: based on version 2 it now succeeds.
    const retry = await call(fx.app, a.status === 409 ? editor : other, "PUT", `/api/dashboards/${d.id}`, {
      version: 2,
      spec: dashboardSpec(fx.source.id, { title: "merged" }),
    });
    expect(retry.status).toBe(200);
    expect((await retry.json()).version).toBe(3);
  });

  test("a delete based on a stale version is 409", async () => {
    const d = await create();
    await call(fx.app, editor, "PUT", `/api/dashboards/${d.id}`, { version: 1, spec: dashboardSpec(fx.source.id) });
    const res = await call(fx.app, editor, "DELETE", `/api/dashboards/${d.id}?version=1`);
    expect(res.status).toBe(409);
    expect(await getDashboard(fx.pool, d.id)).not.toBeNull();
  });
});

describe("dashboards: the guard on save", () => {
  const hostile: [string, string, string][] = [
    ["writes", "DELETE FROM http_requests WHERE $__timeFilter(ts)", "keyword"],
    ["writes in a CTE", "WITH x AS (UPDATE http_requests SET status = 0 RETURNING 1) SELECT count(*) FROM x", "keyword"],
    ["sleeps", "SELECT pg_sleep(30)", "function"],
    ["sleeps in a subquery", "SELECT (SELECT pg_sleep(1)) FROM http_requests WHERE $__timeFilter(ts)", "function"],
    ["reads a system catalog", "SELECT * FROM pg_catalog.pg_authid", "catalog"],
    ["reads pg_stat_activity", "SELECT query FROM pg_stat_activity", "catalog"],
  ];
  test.each(hostile)("a panel that %s cannot be created or saved over a good one", async (_n, sql, reason) => {
    const spec = dashboardSpec(fx.source.id);
    spec.panels[1] = { ...spec.panels[1], sql };
    const res = await call(fx.app, editor, "POST", base, { spec });
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body).toMatchObject({ code: "guard_rejected", reason, panels: [{ panelId: "errors", reason }] });
    // What the editor lists from this answer.
    expect(saveProblemLists(body).refused).toEqual([{ panelId: "errors", reason, message: expect.any(String) }]);
    expect(body.detail).toContain("errors");

    const d = await create();
    const put = await call(fx.app, editor, "PUT", `/api/dashboards/${d.id}`, { version: 1, spec });
    expect(put.status).toBe(422);
    const stored = await getDashboard(fx.pool, d.id);
    expect(stored?.version).toBe(1);
    expect(stored?.spec.panels[1].sql).not.toBe(sql);
  });

  test("a panel reading a source of another workspace is refused like a missing source", async () => {
    const spec = dashboardSpec(fx.otherSource.id);
    const res = await call(fx.app, editor, "POST", base, { spec });
    expect(res.status).toBe(422);
    expect((await res.json()).panels).toEqual([
      { panelId: "requests", reason: "source", message: expect.any(String) },
      { panelId: "errors", reason: "source", message: expect.any(String) },
    ]);
  });
});

describe("dashboards: input validation at the edge", () => {
  test.each([
    [
      "refresh below MIN_REFRESH_INTERVAL_MS",
      () => ({ spec: { ...dashboardSpec(fx.source.id), refreshIntervalMs: 100 } }),
      "spec.refreshIntervalMs",
    ],
    [
      "a bad time expression",
      () => ({ spec: { ...dashboardSpec(fx.source.id), time: { from: "last week", to: "now" } } }),
      "spec.time.from",
    ],
    [
      "an unknown panel type",
      () => {
        const spec = dashboardSpec(fx.source.id);
        (spec.panels[0] as { type: string }).type = "pie";
        return { spec };
      },
      "spec.panels.0.type",
    ],
    ["a missing title", () => ({ spec: { ...dashboardSpec(fx.source.id), title: undefined } }), "spec.title"],
    ["no spec at all", () => ({}), "spec"],
  ])("%s is a 400 naming the field", async (_n, body, field) => {
    const res = await call(fx.app, editor, "POST", base, body());
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const p = await res.json();
    expect(p.code).toBe("validation_failed");
    expect(p.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: field })]));
    expect(p.detail).toContain(field);
  });

  test("an update without a version is a 400 naming version", async () => {
    const d = await create();
    const res = await call(fx.app, editor, "PUT", `/api/dashboards/${d.id}`, { spec: dashboardSpec(fx.source.id) });
    expect(res.status).toBe(400);
    expect((await res.json()).issues).toEqual([expect.objectContaining({ path: "version" })]);
  });

  test("a body over the size limit is refused before it is parsed", async () => {
    const spec = dashboardSpec(fx.source.id, { title: "x".repeat(3 * 1024 * 1024) });
    const res = await call(fx.app, editor, "POST", base, { spec });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "bad_request", limit: 2 * 1024 * 1024 });
  });

  test("malformed JSON is a 400 problem", async () => {
    const res = await fx.app.request(base, {
      method: "POST",
      headers: { cookie: editor, "content-type": "application/json" },
      body: "{not json",
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
  });
});

describe("dashboards: errors carry the request id", () => {
  test("a problem body and its X-Request-Id header name the same id", async () => {
    const res = await call(fx.app, viewer, "GET", "/api/dashboards/db_missing");
    expect(res.status).toBe(404);
    const id = res.headers.get("x-request-id");
    expect(id).toBeTruthy();
    expect((await res.json()).requestId).toBe(id);
  });

  test("an unknown /api route is a problem+json 404 with the request id", async () => {
    const res = await call(fx.app, viewer, "GET", "/api/no-such-thing");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect((await res.json()).requestId).toBe(res.headers.get("x-request-id"));
  });

  test("success responses carry X-Request-Id too", async () => {
    const res = await call(fx.app, viewer, "GET", base);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });

  test("a 422 from deep in the save keeps the header", async () => {
    const spec = dashboardSpec(fx.source.id);
    spec.panels[0] = { ...spec.panels[0], sql: "SELECT pg_sleep(1)" };
    const res = await call(fx.app, editor, "POST", base, { spec });
    expect(res.status).toBe(422);
    expect((await res.json()).requestId).toBe(res.headers.get("x-request-id"));
  });
});

describe("dashboards: cross-site requests", () => {
  test.each([
    ["POST", () => base, () => ({ spec: dashboardSpec(fx.source.id) })],
    ["PUT", () => `/api/dashboards/db_x`, () => ({ version: 1, spec: dashboardSpec(fx.source.id) })],
    ["DELETE", () => `/api/dashboards/db_x`, () => undefined],
  ])("%s from another origin is refused even with a valid session", async (method, path, body) => {
    const res = await call(fx.app, editor, method, path(), body(), { origin: "https://evil.example" });
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe("cross_site_request");
  });

  test("the same request from our own origin passes", async () => {
    const res = await call(fx.app, editor, "POST", base, { spec: dashboardSpec(fx.source.id) }, { origin: ORIGIN });
    expect(res.status).toBe(201);
  });
});
