import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ApiFixture, MAX_RESULT_BYTES, call, createApiFixture } from "../../testing/api-fixture.ts";

let fx: ApiFixture;
let path: string;
const HOUR = { from: "now-1h", to: "now" };

beforeAll(async () => {
  fx = await createApiFixture();
  path = `/api/workspaces/${fx.roles.workspace.id}/query-preview`;
});
afterAll(() => fx.close());

const preview = (sql: string, extra: Record<string, unknown> = {}, persona: "editor" | "admin" | "viewer" = "editor") =>
  call(fx.app, fx.roles.cookies[persona], "POST", path, { sourceId: fx.source.id, sql, time: HOUR, ...extra });

describe("query preview: happy path", () => {
  test("a guarded time series comes back as columns and rows with the resolved range", async () => {
    const res = await preview(
      "SELECT $__timeGroup(ts, '5m') AS t, count(*) AS n FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
    );
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.columns).toEqual([
      { name: "t", type: expect.any(String) },
      { name: "n", type: expect.any(String) },
    ]);
    expect(body.rows.length).toBeGreaterThanOrEqual(12);
    expect(typeof body.rows[0][0]).toBe("number");
    expect(body.truncated).toBe(false);
    expect(body.range.toMs - body.range.fromMs).toBe(3_600_000);
    // Only the last hour of the 600 one-minute rows is counted: the macros were bound to the range.
    const total = body.rows.reduce((a: number, r: number[]) => a + Number(r[1]), 0);
    expect(total).toBeGreaterThanOrEqual(59);
    expect(total).toBeLessThanOrEqual(61);
  });

  test("admins may preview too", async () => {
    expect((await preview("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)", {}, "admin")).status).toBe(200);
  });
});

describe("query preview: limits and the guard", () => {
  test("a result over MAX_RESULT_BYTES is a 400 naming the limit", async () => {
    const res = await preview("SELECT ts, body FROM payloads WHERE $__timeFilter(ts)", { time: { from: "now-1d", to: "now" } });
    expect(res.status).toBe(400);
    const p = await res.json();
    expect(p.code).toBe("result_too_large");
    expect(p.detail).toContain("MAX_RESULT_BYTES");
    expect(p.detail).toContain(String(MAX_RESULT_BYTES));
    expect(res.headers.get("content-type")).toContain("application/problem+json");
  });

  test.each([
    ["DELETE FROM http_requests", "keyword"],
    ["UPDATE http_requests SET status = 0 WHERE $__timeFilter(ts)", "keyword"],
    ["SELECT pg_sleep(5)", "function"],
    ["SELECT pg_read_file('/etc/passwd')", "function"],
    ["SELECT * FROM pg_catalog.pg_shadow", "catalog"],
    ["SELECT * FROM other_table", "catalog"],
    ["SELECT count(*) FROM http_requests", "time"],
    ["SELECT 1 /* hi */", "comment"],
    ["SELECT 1; SELECT 2", "structure"],
    [" ; ", "empty"],
  ])("%s is a 422 with reason %s", async (sql, reason) => {
    const res = await preview(sql);
    expect(res.status).toBe(422);
    const p = await res.json();
    expect(p).toMatchObject({ code: "guard_rejected", reason });
    expect(p.requestId).toBe(res.headers.get("x-request-id"));
  });

  test("a source of another workspace is a 404, and its SQL never runs", async () => {
    const res = await preview("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)", { sourceId: fx.otherSource.id });
    expect(res.status).toBe(404);
  });

  test("a source whose catalog was never refreshed refuses with reason catalog", async () => {
    const s = await fx.newSource("unrefreshed");
    await fx.pool.query("UPDATE sources SET catalog = NULL, catalog_refreshed_at = NULL WHERE id = $1", [s.id]);
    const res = await preview("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)", { sourceId: s.id });
    expect(res.status).toBe(422);
    expect((await res.json()).reason).toBe("catalog");
  });

  test.each([
    [{ time: { from: "yesterday", to: "now" } }, "time.from"],
    [{ time: { from: "now", to: "now-1h" } }, "time"],
    [{ sql: "" }, "sql"],
    [{ sourceId: undefined }, "sourceId"],
  ])("bad input %j is a 400 naming %s", async (extra, field) => {
    const res = await preview("SELECT 1", extra);
    expect(res.status).toBe(400);
    const p = await res.json();
    expect(p.code).toBe("validation_failed");
    expect(p.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: field })]));
  });

  test("a viewer may not run SQL of their own", async () => {
    const res = await preview("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)", {}, "viewer");
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe("forbidden");
  });
});

describe("query preview: the dashboard's variables, bound as the stream binds them", () => {
  const DAY = { from: "now-1d", to: "now" };
  const SVC = { name: "svc", type: "custom", values: ["svc-0", "svc-1", "svc-2"], default: "svc-0" };
  const SVCS = { ...SVC, name: "svcs", multi: true, default: ["svc-0"] };
  const CODE = { name: "code", type: "custom", values: ["200", "500"] };
  const count = async (sql: string, values?: Record<string, string[]>, variables: unknown[] = [SVC, SVCS, CODE]) => {
    const res = await preview(sql, { time: DAY, variables, ...(values ? { values } : {}) });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(body)}`);
    return Number(body.rows[0][0]);
  };
  const BY_SVC = "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service = $svc";

  test("a chosen value is bound: one service's rows", async () => {
    expect(await count(BY_SVC, { svc: ["svc-1"] })).toBe(200);
    expect(await count("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service = ${svc}", { svc: ["svc-2"] })).toBe(200);
  });

  test("a variable left out binds its default", async () => {
    expect(await count(BY_SVC)).toBe(200);
    expect(await count("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service IN ($svcs)")).toBe(200);
  });

  test("All binds every option: a custom variable's values, and a query variable's options read over the range", async () => {
    const ALL = { ...SVCS, name: "every", includeAll: true, default: ["$__all"] };
    const ANY_SVC = "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service IN ($every)";
    expect(await count(ANY_SVC, { every: ["$__all"] }, [ALL])).toBe(600);
    expect(await count(ANY_SVC, undefined, [ALL])).toBe(600);
    const QUERY = {
      name: "every",
      type: "query",
      multi: true,
      includeAll: true,
      sourceId: fx.source.id,
      sql: "SELECT DISTINCT service FROM http_requests WHERE $__timeFilter(ts) AND service <> 'svc-1'",
    };
    expect(await count(ANY_SVC, { every: ["$__all"] }, [QUERY])).toBe(400);
  });

  test("a multi-value variable binds its whole selection as one array in IN (...)", async () => {
    expect(
      await count("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service IN ($svcs)", { svcs: ["svc-0", "svc-2"] }),
    ).toBe(400);
    expect(
      await count("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service NOT IN ($svcs)", { svcs: ["svc-0", "svc-2"] }),
    ).toBe(200);
  });

  test("the server infers the parameter's type from its use: an integer column", async () => {
    expect(await count("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND status = $code", { code: ["500"] })).toBe(60);
  });

  test("a statement naming a variable that is not declared is refused by the guard, as on the stream", async () => {
    const res = await preview(BY_SVC, { time: DAY, variables: [CODE] });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ code: "guard_rejected", reason: "structure" });
  });

  // Every value is data: it matches no service and never changes the statement (the table keeps its 600 rows).
  test.each([
    ["svc-1' OR '1'='1"],
    ["'; DELETE FROM http_requests; --"],
    ["svc-1; DROP TABLE http_requests"],
    ["$1"],
    ["$__timeFrom()"],
    ["${svc}"],
    ["svc-1)"],
    ["\\"],
    ["'"],
    ['"'],
    ["$$svc-1$$"],
    ["/* svc-1 */"],
    ["svc‐1"],
    ["SVC-1"],
    [" svc-1"],
    [""],
    ["x".repeat(1000)],
    ["🙂".repeat(250)],
  ])("hostile value %j binds as a value and matches nothing", async (value) => {
    expect(await count(BY_SVC, { svc: [value] })).toBe(0);
    expect(await count("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service IN ($svcs)", { svcs: [value, value] })).toBe(
      0,
    );
  });

  test("after the hostile values the table is whole", async () => {
    expect(await count("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)")).toBe(600);
  });

  test("property: any text bound to a variable matches exactly the rows holding that text", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constantFrom("svc-0", "svc-1", "svc-2"),
          fc.string({ unit: "grapheme", maxLength: 40 }).filter((s) => !s.includes("\u0000")),
        ),
        async (value) => {
          const expected = ["svc-0", "svc-1", "svc-2"].includes(value) ? 200 : 0;
          expect(await count(BY_SVC, { svc: [value] })).toBe(expected);
        },
      ),
      { numRuns: 40 },
    );
  });

  test.each([
    [{ values: { nope: ["x"] } }, "values.nope"],
    [{ values: { svc: ["svc-0", "svc-1"] } }, "values.svc"],
    [{ values: { svc: ["$__all"] } }, "values.svc"],
    [{ values: { svcs: ["$__all", "svc-0"] } }, "values.svcs"],
    [{ values: { svc: ["svc\u0000-1"] } }, "values.svc.0"],
    [{ values: { svc: ["x".repeat(1001)] } }, "values.svc.0"],
    [{ values: { svcs: Array.from({ length: 1001 }, (_, i) => `v${i}`) } }, "values.svcs"],
    [{ variables: [{ ...SVC, name: "__svc" }] }, "variables.0.name"],
    [{ variables: [{ ...SVC, name: "a b" }] }, "variables.0.name"],
    [{ variables: Array.from({ length: 21 }, (_, i) => ({ ...SVC, name: `v${i}` })) }, "variables"],
  ])("bad variables %# are a 400 naming %s", async (extra, field) => {
    const res = await preview(BY_SVC, { time: DAY, variables: [SVC, SVCS], ...extra });
    expect(res.status).toBe(400);
    const p = await res.json();
    expect(p.code).toBe("validation_failed");
    expect(p.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: field })]));
    expect(JSON.stringify(p)).not.toContain("\u0000");
  });

  test("a viewer may not preview with variables either", async () => {
    const res = await preview(BY_SVC, { time: DAY, variables: [SVC], values: { svc: ["svc-1"] } }, "viewer");
    expect(res.status).toBe(403);
  });
});
