// Dashboard variables end to end on a real PostgreSQL: a viewer's values resolved against the options, bound by the
// guarded runner as parameters (a value holding quotes, semicolons or `$1` stays data), query variables' options
// run at most once per cadence and shared.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Catalog } from "../catalog/types.ts";
import type { QueryRunner, RunRequest } from "../query/runner.ts";
import { type RunnerFixture, createRunnerFixture } from "../query/testing/runner-fixture.ts";
import type { Source } from "../sources/store.ts";
import { rejection } from "../testing/rejection.ts";
import { ALL_VALUE, type DashboardSpec, type Variable } from "./spec.ts";
import { createVariableOptionsCache, resolveVariables, selectionValues, viewSelection } from "./variables.ts";

let db: RunnerFixture;
let runner: QueryRunner;
let source: Source;

const catalog: Catalog = {
  tables: [
    {
      schema: "public",
      name: "items",
      timeColumn: "ts",
      columns: [
        { name: "ts", type: "timestamp with time zone" },
        { name: "name", type: "text" },
        { name: "code", type: "integer" },
      ],
    },
  ],
};

const T0 = Date.UTC(2026, 0, 1);
const range = { fromMs: T0, toMs: T0 + 3_600_000 };

/** Names that would change a statement if they were spliced into it. */
const HOSTILE = [
  "plain",
  "it's",
  "'; DROP TABLE items; --",
  "$1",
  "$2) OR (1=1",
  "a\\' OR 1=1 --",
  '"quoted", {braced}',
  "x' || (SELECT 1) || '",
  "$__timeFrom()",
  "${name}",
  "{}",
  "NULL",
  "ünïcödé 🚀",
];

beforeAll(async () => {
  db = await createRunnerFixture({
    database: "vars",
    setup: async (m) => {
      await m.admin(`
        CREATE TABLE items (ts timestamptz NOT NULL, name text NOT NULL, code integer NOT NULL);
        REVOKE ALL ON SCHEMA public FROM PUBLIC;
      `);
      await m.admin(
        "INSERT INTO items SELECT timestamptz '2026-01-01T00:10:00Z', n, i::int FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i)",
        [HOSTILE],
      );
    },
    role: "pb_vars",
    grants: ["GRANT USAGE ON SCHEMA public TO %I", "GRANT SELECT ON items TO %I"],
  });
  runner = db.runner({ env: { QUERY_TIMEOUT_SECONDS: "5" } });
  source = db.fx.source({ catalog });
});

afterAll(async () => {
  await db?.close();
});

const one: Variable = { name: "item", type: "custom", values: HOSTILE };
const many: Variable = { name: "items", type: "custom", values: HOSTILE, multi: true, includeAll: true };
const COUNT_ONE = "SELECT count(*)::int, min(code) FROM items WHERE $__timeFilter(ts) AND name = $item";
const COUNT_MANY = "SELECT count(*)::int FROM items WHERE $__timeFilter(ts) AND name IN (${items})";
const COUNT_NOT = "SELECT count(*)::int FROM items WHERE $__timeFilter(ts) AND name NOT IN ($items)";

function run(sql: string, variableValues: RunRequest["variableValues"], variables: readonly Variable[] = [one, many]) {
  return runner.run({ source, sql, range, variables, variableValues });
}

describe("variables are bound as parameters on PostgreSQL", () => {
  test.each(HOSTILE.map((v, i) => [v, i + 1]))("a single value %j matches its own row and nothing else", async (value, code) => {
    const r = await run(COUNT_ONE, { item: [value as string] });
    expect(r.rows).toEqual([[1, code]]);
  });

  test("a multi-value selection is one array parameter: every hostile value stays one element", async () => {
    expect((await run(COUNT_MANY, { items: HOSTILE.slice(1, 6) })).rows).toEqual([[5]]);
    expect((await run(COUNT_NOT, { items: HOSTILE.slice(1, 6) })).rows).toEqual([[HOSTILE.length - 5]]);
    expect((await run(COUNT_MANY, { items: [] })).rows).toEqual([[0]]);
  });

  test("All binds every option: the filter keeps every row", async () => {
    const { values } = await resolveVariables({ variables: [many] }, { items: [ALL_VALUE] }, async () => []);
    expect(values.items).toEqual(HOSTILE);
    expect((await run(COUNT_MANY, values)).rows).toEqual([[HOSTILE.length]]);
  });

  test("a value is typed by its use, as a quoted literal would be (an integer column takes '3')", async () => {
    const code: Variable = { name: "code", type: "custom", values: ["3", "x"] };
    const sql = "SELECT name FROM items WHERE $__timeFilter(ts) AND code = $code";
    expect((await run(sql, { code: ["3"] }, [code])).rows).toEqual([[HOSTILE[2]]]);
    // Not a number: PostgreSQL refuses the value as data, never as SQL.
    expect((await rejection(run(sql, { code: ["x"] }, [code]))).code).toBe("query_failed");
  });

  test("an unknown $x is refused by the guard with structure, naming it, before the database is asked", async () => {
    const err = await rejection(run("SELECT count(*) FROM items WHERE $__timeFilter(ts) AND name = $nope", { nope: ["a"] }));
    expect(err.code).toBe("guard_rejected");
    expect(err.extra).toEqual({ reason: "structure" });
    expect(err.detail).toContain("$nope");
  });

  test("a declared variable without a value, or with several where one is bound, is a 400 naming it", async () => {
    expect(await rejection(run(COUNT_ONE, {}))).toMatchObject({
      code: "validation_failed",
      status: 400,
      detail: expect.stringContaining("item"),
    });
    expect(await rejection(run(COUNT_ONE, { item: ["a", "b"] }))).toMatchObject({ code: "validation_failed" });
  });

  test("property: whatever the values, the statement keeps its shape and compares them as data", async () => {
    const piece = fc.oneof(
      fc.constantFrom("'", '"', ";", "$1", "$", "\\", "{", "}", ",", " ", "--", "/*", "*/", "NULL", "(", ")", "$__all", " OR 1=1", "${x}"),
      fc.string({ unit: "binary", maxLength: 3 }),
    );
    const value = fc.string({ unit: piece, maxLength: 12 }).filter((s) => !s.includes("\0"));
    await fc.assert(
      fc.asyncProperty(value, fc.array(value, { maxLength: 5 }), async (single, several) => {
        const r = await run(
          "SELECT $item::text AS one, (SELECT count(*)::int FROM items WHERE $__timeFilter(ts) AND name IN ($items)) AS n",
          { item: [single], items: several },
        );
        const expected = HOSTILE.filter((h) => several.includes(h)).length;
        expect(r.rows).toEqual([[single, expected]]);
      }),
      { numRuns: 60 },
    );
  });
});

describe("resolveVariables: a viewer's values against the options", () => {
  const spec: Pick<DashboardSpec, "variables"> = {
    variables: [
      { name: "env", type: "custom", values: ["prod", "staging"], default: "staging" },
      { name: "svc", type: "custom", values: ["api", "web", "db"], multi: true, includeAll: true, default: ["web", "api"] },
      { name: "first", type: "custom", values: ["a", "b"] },
    ],
  };
  const resolve = (requested: Record<string, string[]>) => resolveVariables(spec, requested, async () => []);

  test("absent means the default, or the first option", async () => {
    expect(await resolve({})).toEqual({
      selection: { env: ["staging"], svc: ["api", "web"], first: ["a"] },
      values: { env: ["staging"], svc: ["api", "web"], first: ["a"] },
    });
  });

  test("chosen values, deduplicated and in one order, so equal views have equal selections", async () => {
    const a = await resolve({ svc: ["web", "api", "web"], env: ["prod"] });
    const b = await resolve({ env: ["prod"], svc: ["api", "web"] });
    expect(JSON.stringify(a.selection)).toBe(JSON.stringify(b.selection));
    expect(a.values.svc).toEqual(["api", "web"]);
  });

  test("All selects every option; the selection keeps $__all so that All follows the options", async () => {
    const r = await resolve({ svc: [ALL_VALUE] });
    expect(r.selection.svc).toEqual([ALL_VALUE]);
    expect(r.values.svc).toEqual(["api", "web", "db"]);
    expect(await selectionValues(spec, r.selection, async () => [])).toEqual(r.values);
  });

  test("parameters of undeclared variables are ignored and never reach the selection", async () => {
    expect(Object.keys((await resolve({ nope: ["x"] })).selection)).toEqual(["env", "svc", "first"]);
  });

  test.each([
    ["a value outside the options", { env: ["dev"] }, "var-env"],
    ["several values where not multi", { env: ["prod", "staging"] }, "var-env"],
    ["All where not offered", { env: [ALL_VALUE] }, "var-env"],
    ["All beside a value", { svc: [ALL_VALUE, "api"] }, "var-svc"],
    ["a NUL", { env: ["prod\u0000"] }, "var-env"],
    ["10,000 characters", { env: ["x".repeat(10_000)] }, "var-env"],
    ["one bad value among good ones", { svc: ["api", "nope"] }, "var-svc"],
    ["10,000 distinct values", { svc: Array.from({ length: 10_000 }, (_, i) => `v${i}`) }, "var-svc"],
  ])("%s is a 400 naming the variable", async (_n, requested, path) => {
    const err = await rejection(resolve(requested));
    expect(err).toMatchObject({ code: "validation_failed", status: 400 });
    expect(err.extra.issues).toEqual([{ path, message: expect.any(String) }]);
    // The viewer's text is never echoed back.
    expect(err.detail).not.toContain("xxxxxxxx");
  });

  test("the same value repeated 10,000 times is one value", async () => {
    expect((await resolve({ env: Array(10_000).fill("prod") })).values.env).toEqual(["prod"]);
  });

  test("viewSelection keys a view: only what differs from the defaults, names sorted, values in one order", async () => {
    const none = async () => [];
    expect(await viewSelection(spec, { svc: ["web", "db"], env: ["prod"] }, none)).toEqual({ env: ["prod"], svc: ["db", "web"] });
    expect(Object.keys(await viewSelection(spec, { svc: ["db"], env: ["prod"] }, none))).toEqual(["env", "svc"]);
    // Exactly the defaults (given in any order) is the saved view.
    expect(await viewSelection(spec, { env: ["staging"], svc: ["web", "api"], first: ["a"] }, none)).toEqual({});
    expect(await viewSelection(spec, { svc: [ALL_VALUE] }, none)).toEqual({ svc: [ALL_VALUE] });
    expect((await rejection(viewSelection(spec, { env: ["dev"] }, none))).extra.issues).toEqual([
      { path: "var-env", message: expect.any(String) },
    ]);
  });

  test("viewSelection reads only the options of the variables asked for, and none when a shape is refused", async () => {
    const q: Variable = { name: "q", type: "query", sourceId: "src", sql: "SELECT 1" };
    const asked: string[] = [];
    const optionsOf = async (v: Variable) => {
      asked.push(v.name);
      return ["x", "y"];
    };
    const withQuery = { variables: [...(spec.variables ?? []), q] };
    expect(await viewSelection(withQuery, { env: ["prod"] }, optionsOf)).toEqual({ env: ["prod"] });
    expect(asked).toEqual([]);
    await rejection(viewSelection(withQuery, { q: ["x"], env: ["prod", "staging"] }, optionsOf));
    expect(asked).toEqual([]);
    expect(await viewSelection(withQuery, { q: ["y"] }, optionsOf)).toEqual({ q: ["y"] });
    expect(await viewSelection(withQuery, { q: ["x"] }, optionsOf)).toEqual({});
    expect(asked).toEqual(["q", "q"]);
  });

  test("selectionValues: a variable left out binds its default, All the options now; `only` binds just those", async () => {
    const none = async () => [];
    expect(await selectionValues(spec, { svc: [ALL_VALUE] }, none)).toEqual({ env: ["staging"], svc: ["api", "web", "db"], first: ["a"] });
    expect(await selectionValues(spec, { env: ["prod"] }, none, new Set(["env"]))).toEqual({ env: ["prod"] });
    const q: Variable = { name: "q", type: "query", sourceId: "src", sql: "SELECT 1", includeAll: true };
    let options = ["m", "n"];
    const optionsOf = async () => options;
    expect(await selectionValues({ variables: [q] }, {}, optionsOf)).toEqual({ q: ["m"] });
    expect(await selectionValues({ variables: [q] }, { q: [ALL_VALUE] }, optionsOf)).toEqual({ q: ["m", "n"] });
    options = ["n", "o", "p"];
    expect(await selectionValues({ variables: [q] }, {}, optionsOf)).toEqual({ q: ["n"] });
    expect(await selectionValues({ variables: [q] }, { q: [ALL_VALUE] }, optionsOf)).toEqual({ q: ["n", "o", "p"] });
    // A fixed choice binds as chosen without reading the options (a failing query does not fail it).
    expect(await selectionValues({ variables: [q] }, { q: ["m"] }, () => Promise.reject(new Error("down")))).toEqual({ q: ["m"] });
  });
});

describe("query variables: options from a guarded query, once per cadence, shared", () => {
  const variable: Variable = {
    name: "item",
    type: "query",
    sourceId: "",
    sql: "SELECT DISTINCT name FROM items WHERE $__timeFilter(ts) ORDER BY 1",
    includeAll: true,
  };
  const dashboard = () => ({
    id: "db_1",
    workspaceId: "ws_a",
    spec: { time: { from: "2026-01-01T00:00:00Z", to: "2026-01-01T01:00:00Z" }, refreshIntervalMs: 10_000 },
  });

  function counted() {
    let runs = 0;
    let clock = T0;
    const cache = createVariableOptionsCache({
      runner: {
        run: (req) => {
          runs++;
          return runner.run(req);
        },
      },
      getSource: async (ws, id) => (ws === source.workspaceId && id === source.id ? source : null),
      config: { DEFAULT_REFRESH_INTERVAL_MS: 15_000, MIN_REFRESH_INTERVAL_MS: 2_000 },
      now: () => clock,
    });
    return { cache, runs: () => runs, tick: (ms: number) => (clock += ms) };
  }

  test("the options are the query's one column; 100 concurrent viewers cost one run per cadence", async () => {
    const { cache, runs, tick } = counted();
    const v = { ...variable, sourceId: source.id };
    const d = dashboard();
    const all = await Promise.all(Array.from({ length: 100 }, () => cache.options(d, v)));
    expect(all.every((o) => o === all[0])).toBe(true);
    expect(new Set(all[0])).toEqual(new Set(HOSTILE));
    expect(runs()).toBe(1);
    tick(9_999);
    await cache.options(d, v);
    expect(runs()).toBe(1);
    tick(1);
    await cache.options(d, v);
    expect(runs()).toBe(2);
  });

  test("a viewer's value is checked against the query's options; All binds them all", async () => {
    const { cache } = counted();
    const v = { ...variable, sourceId: source.id };
    const d = dashboard();
    const spec = { variables: [v] };
    expect((await resolveVariables(spec, { item: ["$1"] }, cache.optionsOf(d))).values).toEqual({ item: ["$1"] });
    const err = await rejection(resolveVariables(spec, { item: ["not an item"] }, cache.optionsOf(d)));
    expect(err.extra.issues).toEqual([{ path: "var-item", message: expect.any(String) }]);
    expect(new Set((await resolveVariables(spec, { item: [ALL_VALUE] }, cache.optionsOf(d))).values.item)).toEqual(new Set(HOSTILE));
  });

  test("a query of two columns, or a source of another workspace, fails and the failure is kept for the cadence", async () => {
    const { cache, runs, tick } = counted();
    const d = dashboard();
    const two = { ...variable, sourceId: source.id, sql: "SELECT name, code FROM items WHERE $__timeFilter(ts)" };
    expect((await rejection(cache.options(d, two))).detail).toContain("exactly one column");
    expect((await rejection(cache.options(d, two))).detail).toContain("exactly one column");
    expect(runs()).toBe(1);
    tick(10_000);
    await rejection(cache.options(d, two));
    expect(runs()).toBe(2);
    expect((await rejection(cache.options(d, { ...variable, sourceId: "src_elsewhere" }))).code).toBe("not_found");
    // A refusal by the guard names the variable too.
    const unfiltered = { ...variable, sourceId: source.id, sql: "SELECT DISTINCT name FROM items" };
    expect(await rejection(cache.options(d, unfiltered))).toMatchObject({
      code: "guard_rejected",
      detail: expect.stringMatching(/^Variable item: /),
    });
  });

  test("an edited variable is a new entry, run at once", async () => {
    const { cache, runs } = counted();
    const d = dashboard();
    await cache.options(d, { ...variable, sourceId: source.id });
    const edited = { ...variable, sourceId: source.id, sql: "SELECT DISTINCT name FROM items WHERE $__timeFilter(ts) AND code < 3" };
    expect(await cache.options(d, edited)).toHaveLength(2);
    expect(runs()).toBe(2);
    expect(cache.size).toBe(2);
  });
});
