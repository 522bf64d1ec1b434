import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ApiFixture, call, createApiFixture } from "../../testing/api-fixture.ts";

// The verdict as you type: the server's guard on one statement, with where its refusal points.

let fx: ApiFixture;
let editor: string;
const check = (sql: unknown, sourceId = fx.source.id) => call(fx.app, editor, "POST", `/api/sources/${sourceId}/check`, { sql });

beforeAll(async () => {
  fx = await createApiFixture();
  editor = fx.roles.cookies.editor!;
});
afterAll(() => fx.close());

describe("POST /api/sources/:sourceId/check", () => {
  test("an accepted statement is {ok: true}, without the expansion", async () => {
    const res = await check("SELECT $__timeGroup(ts, $__interval) AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  test.each([
    ["SELECT * FROM pg_shadow", "catalog", "pg_shadow"],
    ["SELECT 'ü', pg_sleep(1) FROM http_requests WHERE $__timeFilter(ts)", "function", "pg_sleep"],
    ["SELECT ts FROM http_requests WHER $__timeFilter(ts)", "structure", "$__timeFilter"],
  ])("%s is refused with the place of what it names", async (sql, reason, at) => {
    const res = await check(sql);
    expect(res.status).toBe(200);
    const v = await res.json();
    expect(v).toMatchObject({ ok: false, reason });
    expect(sql.slice(v.location).startsWith(at)).toBe(true);
  });

  test("the dashboard's variables are declared with the statement", async () => {
    const sql = "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service = $service";
    expect(await (await check(sql)).json()).toMatchObject({ ok: false, reason: "structure" });
    const res = await call(fx.app, editor, "POST", `/api/sources/${fx.source.id}/check`, { sql, variables: [{ name: "service" }] });
    expect(await res.json()).toEqual({ ok: true });
  });

  test("the refusals are not counted as rejected queries", async () => {
    const metric = async () =>
      /reason="catalog"} (\d+)/.exec(await fx.registry.getSingleMetricAsString("svc_sql_validation_rejections_total"))?.[1] ?? "0";
    const before = await metric();
    await check("SELECT * FROM pg_shadow");
    expect(await metric()).toBe(before);
  });

  test.each([
    ["a 2 MB statement", { sql: "x".repeat(2 * 1024 * 1024) }, 400],
    ["no sql", {}, 400],
    ["sql not a string", { sql: 42 }, 400],
  ])("%s is a clear 4xx", async (_name, body, status) => {
    const res = await call(fx.app, editor, "POST", `/api/sources/${fx.source.id}/check`, body);
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toMatch(/problem\+json/);
  });

  test("a statement over SQL_MAX_LENGTH but within the body limit gets the guard's verdict", async () => {
    const v = await (await check(`SELECT ${"1+".repeat(15_000)}1`)).json();
    expect(v).toMatchObject({ ok: false, reason: "structure", message: expect.stringMatching(/SQL_MAX_LENGTH/) });
  });
});
