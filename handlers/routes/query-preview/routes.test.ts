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
