// The guard's output is SQL a real PostgreSQL accepts: every realistic panel runs with its macros
// bound as the runner will bind them (ISO instants for from/to, intervalFor() for the interval).
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDatabase } from "../testing/pg.ts";
import { DEMO_CATALOG, DEMO_DDL, REALISTIC_PANEL_SQL } from "../catalog/testing/demo-catalog.ts";
import { type Guard, type MacroParam, createGuard, intervalFor, loadGuardParser } from "./index.ts";

let client: pg.Client;
let guard: Guard;

beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard();
  const { url } = await createDatabase("guard");
  client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(DEMO_DDL);
});

afterAll(async () => {
  await client?.end();
});

const NOW = Date.parse("2030-01-01T00:00:00Z");

function bind(params: readonly MacroParam[], fromMs: number, toMs: number): string[] {
  return params.map((p) =>
    p === "from" ? new Date(fromMs).toISOString() : p === "to" ? new Date(toMs).toISOString() : intervalFor(fromMs, toMs, 720),
  );
}

describe("expanded panel SQL runs on PostgreSQL", () => {
  test.each(REALISTIC_PANEL_SQL.map((sql) => [sql.replace(/\s+/g, " ").slice(0, 90), sql]))("%s", async (_n, sql) => {
    const v = guard.check(sql, DEMO_CATALOG);
    if (!v.ok) throw new Error(`${v.reason}: ${v.message}`);
    const to = Date.now();
    // The runner binds from/to as timestamptz and the interval as interval (typed parameters): the same here.
    const typed = v.sql.replace(
      /\$(\d+)/g,
      (_m, n: string) => `$${n}::${v.params[Number(n) - 1] === "interval" ? "interval" : "timestamptz"}`,
    );
    const res = await client.query({ text: typed, values: bind(v.params, to - 3_600_000, to) });
    expect(res.fields.length).toBeGreaterThan(0);
  });

  test("$__timeFilter bounds the rows to the range", async () => {
    const v = guard.check("SELECT count(*)::int AS n FROM http_requests WHERE $__timeFilter(ts)", DEMO_CATALOG);
    if (!v.ok) throw new Error(v.message);
    const now = Date.now();
    const all = await client.query({ text: v.sql, values: bind(v.params, now - 86_400_000, now + 60_000) });
    const none = await client.query({ text: v.sql, values: bind(v.params, NOW, NOW + 1) });
    expect(all.rows[0].n).toBe(5000);
    expect(none.rows[0].n).toBe(0);
  });

  test("$__timeGroup with $__interval gives at most MAX_WINDOW_POINTS buckets", async () => {
    const v = guard.check(
      "SELECT $__timeGroup(time, $__interval) AS t, avg(cpu) FROM host_metrics WHERE $__timeFilter(time) GROUP BY 1",
      DEMO_CATALOG,
    );
    if (!v.ok) throw new Error(v.message);
    const now = Date.now();
    const from = now - 6 * 3_600_000;
    const res = await client.query({ text: v.sql, values: bind(v.params, from, now) });
    expect(res.rowCount).toBeGreaterThan(10);
    expect(res.rowCount).toBeLessThanOrEqual(720);
  });
});
