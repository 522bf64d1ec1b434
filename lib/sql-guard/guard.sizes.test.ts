// The size analysis and the time bounds against the statements that hurt a metrics server: each family of
// harmful statements refused directly and routed through CTEs, sub-selects, LATERAL and UNION; the realistic
// panels that look like them accepted; and a property that carrying a value through a CTE, a sub-select or
// a LATERAL never turns a refusal into an acceptance. Nothing here runs a statement.
import fc from "fast-check";
import { beforeAll, describe, expect, test } from "vitest";
import { DEMO_CATALOG, REALISTIC_PANEL_SQL } from "../catalog/testing/demo-catalog.ts";
import { FUNCTION_DECLARATIONS, OPERATOR_DECLARATIONS } from "./declarations.ts";
import { type Guard, createGuard, loadGuardParser, seriesRowsProblem } from "./index.ts";
import { intervalFor } from "./interval.ts";
import { safeName } from "./macros.ts";
import type { GuardReason } from "./verdict.ts";

let guard: Guard;
beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard({ cacheSize: 0 });
});

const F = "$__timeFilter(ts)";
/** An unbounded value: every route of the range concatenated. */
const AGG = `SELECT string_agg(route, '') AS v FROM http_requests WHERE ${F}`;

function refused(sql: string, reason: GuardReason): void {
  const v = guard.check(sql, DEMO_CATALOG);
  if (v.ok) throw new Error(`accepted: ${sql}`);
  expect(v.reason, `${sql}: ${v.message}`).toBe(reason);
  expect(v.message).not.toContain(sql);
}

function accepted(sql: string): void {
  const v = guard.check(sql, DEMO_CATALOG);
  if (!v.ok) throw new Error(`${v.reason}: ${v.message}\n${sql}`);
}

/** Harmful expressions over an unbounded value `v`, by family. */
const OVER_UNBOUNDED: [string, string][] = [
  // quadratic string functions nothing can stop
  ["btrim with characters", "length(btrim(v, v || ' '))"],
  ["rtrim with characters", "length(rtrim(v, v || ' '))"],
  ["ltrim with characters", "length(ltrim(v, 'x' || v))"],
  ["trim(BOTH ... FROM ...)", "length(trim(BOTH v FROM v))"],
  ["strpos", "strpos(v, v || 'x')"],
  ["position", "position(v IN v)"],
  ["split_part", "length(split_part(v, v, 2))"],
  ["replace with a computed replacement", "length(replace(v, 'a', v))"],
  ["replace over an aggregate", "length(replace(v, '/', '//'))"],
  ["LIKE over an aggregate", "v LIKE '%a%b%c%d%'"],
  // amplifiers
  ["format using it twice", "length(format('%1$s%1$s', v))"],
  ["format using it 2000 times", `length(format('${"%1$s".repeat(2000)}', v))`],
  ["json_build_object of copies", "length(json_build_object('a', v, 'b', v, 'c', v)::text)"],
  ["normalize NFKC", "length(normalize(v, NFKC))"],
  ["|| chain", `length(v${" || v".repeat(8)})`],
  ["|| chain of literals", `length(v${" || 'x'".repeat(80)})`],
  ["string_agg of it", "length(string_agg(v, ','))"],
  ["array_agg of it", "cardinality(array_agg(v))"],
  ["json_agg of it", "length(json_agg(v)::text)"],
  ["concat_ws separator", `length(concat_ws(v${", 'a'".repeat(10)}))`],
];

/** Ways to carry `v` from the aggregate to the expression. */
const ROUTES: [string, (expr: string) => string][] = [
  ["inline", (e) => `SELECT ${e.replaceAll("v", "(string_agg(route, ''))")} FROM http_requests WHERE ${F}`],
  ["one CTE", (e) => `WITH c1 AS (${AGG}) SELECT ${e} FROM c1`],
  ["two CTEs", (e) => `WITH c1 AS (${AGG}), c2 AS (SELECT v FROM c1) SELECT ${e} FROM c2`],
  [
    "eight CTEs",
    (e) => {
      const chain = Array.from({ length: 7 }, (_, i) => `c${i + 2} AS (SELECT c${i + 1}.v AS v FROM c${i + 1})`);
      return `WITH c1 AS (${AGG}), ${chain.join(", ")} SELECT ${e} FROM c8`;
    },
  ],
  ["sub-select in FROM", (e) => `SELECT ${e} FROM (${AGG}) AS q`],
  ["scalar sub-select", (e) => `SELECT ${e.replaceAll("v", `(${AGG})`)}`],
  ["LATERAL", (e) => `SELECT ${e} FROM services s CROSS JOIN LATERAL (${AGG} AND service = s.name) AS q`],
  ["UNION", (e) => `SELECT ${e} FROM (${AGG} UNION ALL SELECT 'x') AS q`],
  ["CTE column renamed", (e) => `WITH c1(v) AS (SELECT string_agg(route, '') FROM http_requests WHERE ${F}) SELECT ${e} FROM c1`],
];

describe("harmful expressions over an aggregate are refused however the value gets there", () => {
  const cases = OVER_UNBOUNDED.flatMap(([family, expr]) => ROUTES.map(([route, wrap]) => [`${family} (${route})`, wrap(expr)]));
  test.each(cases)("%s", (_name, sql) => refused(sql, "function"));
});

/** Harmful statements of their own shape, by family: [family, statement, reason]. */
const HOSTILE: [string, string, GuardReason][] = [
  // the statements of the hunt, as found
  [
    "uncancellable btrim over two CTE aggregates",
    "WITH a AS (SELECT string_agg(x, '') AS s FROM (SELECT format('%1000s', '') AS x FROM generate_series(1, 100)) q), b AS (SELECT string_agg('x', '') AS s FROM generate_series(1, 100000)) SELECT length(btrim(a.s, b.s || ' ')) FROM a, b",
    "function",
  ],
  [
    "rtrim over the range's own rows",
    `SELECT length(rtrim(string_agg(' ', ''), string_agg('x', '') || ' ')) FROM http_requests WHERE ${F}`,
    "function",
  ],
  // amplifiers through CTEs: each replace multiplies the previous one's output
  [
    "eight CTEs of replace",
    `WITH c1 AS (SELECT replace(route, '/', '//////////') AS s FROM http_requests WHERE ${F}), ${Array.from(
      { length: 7 },
      (_, i) => `c${i + 2} AS (SELECT replace(s, '/', '//////////') AS s FROM c${i + 1})`,
    ).join(", ")} SELECT length(s) FROM c8`,
    "function",
  ],
  [
    "three CTEs of replace by ten",
    "WITH a AS (SELECT replace(name, 'a', 'aaaaaaaaaa') AS s FROM services), b AS (SELECT replace(s, 'a', 'aaaaaaaaaa') AS s FROM a), c AS (SELECT replace(s, 'a', 'aaaaaaaaaa') AS s FROM b), d AS (SELECT replace(s, 'a', 'aaaaaaaaaa') AS s FROM c) SELECT length(s) FROM d",
    "function",
  ],
  [
    "doubling a literal through CTEs",
    `WITH c0 AS (SELECT '${"x".repeat(1000)}' AS s), ${Array.from({ length: 10 }, (_, i) => `c${i + 1} AS (SELECT s || s AS s FROM c${i})`).join(", ")} SELECT length(s) FROM c10`,
    "function",
  ],
  [
    "doubling a row value through CTEs",
    `WITH c0 AS (SELECT route AS s FROM http_requests WHERE ${F}), ${Array.from({ length: 11 }, (_, i) => `c${i + 1} AS (SELECT s || s AS s FROM c${i})`).join(", ")} SELECT length(s) FROM c11`,
    "function",
  ],
  [
    "format reusing a row value 2000 times",
    `SELECT length(format('${"%1$s".repeat(2000)}', route)) FROM http_requests WHERE ${F}`,
    "function",
  ],
  // missing from the old list
  [
    "json_build_object nested through CTEs",
    `WITH a AS (SELECT json_build_object('k', route)::text AS s FROM http_requests WHERE ${F}), b AS (SELECT json_build_object('k', s, 'l', s)::text AS s FROM a), c AS (SELECT json_build_object('k', s, 'l', s)::text AS s FROM b), d AS (SELECT json_build_object('k', s, 'l', s)::text AS s FROM c) SELECT length(s) FROM d`,
    "function",
  ],
  [
    "normalize of normalize",
    `SELECT length(normalize(normalize(normalize(route, NFKC), NFKC), NFKC)) FROM http_requests WHERE ${F}`,
    "function",
  ],
  ["concat_ws with VARIADIC", "SELECT concat_ws(',', VARIADIC ARRAY['a', 'b'])", "function"],
  ["format with VARIADIC", "SELECT format('%s', VARIADIC ARRAY['a'])", "function"],
  [
    "string_agg over format-padded rows",
    `SELECT length(string_agg(format('%1000s', route), '')) FROM http_requests WHERE ${F}`,
    "function",
  ],
  ["array_agg over padded rows", `SELECT cardinality(array_agg(format('%500s', ''))) FROM http_requests WHERE ${F}`, "function"],
  [
    "json_agg over repeated rows",
    `SELECT length(json_agg(format('${"%1$s".repeat(40)}', route))::text) FROM http_requests WHERE ${F}`,
    "function",
  ],
  ["string_agg as a running window", `SELECT length(string_agg(route, '') OVER (ORDER BY ts)) FROM http_requests WHERE ${F}`, "function"],
  // big numbers
  ["numeric power", "SELECT 10::numeric ^ 65000", "function"],
  ["power()", "SELECT power(10::numeric, 65000)", "function"],
  ["exp of a large numeric", "SELECT exp(150000::numeric)", "function"],
  ["exponent from a column", `SELECT 10::numeric ^ status FROM http_requests WHERE ${F}`, "function"],
  ["huge numeric literal", "SELECT 1e65000 - 1", "function"],
  ["huge numeric literal, tiny", "SELECT 1e-65000 * 2", "function"],
  ["huge numeric in a string", "SELECT '1e65000'::numeric * 2", "function"],
  ["huge numeric array in a string", "SELECT '{1,1e65000}'::numeric[]", "function"],
  ["a 60-digit literal", `SELECT ${"9".repeat(60)} * 2`, "function"],
  [
    "powers through CTEs",
    "WITH a AS (SELECT 10::numeric ^ 64 AS v), b AS (SELECT v ^ 64 AS v FROM a), c AS (SELECT v ^ 64 AS v FROM b) SELECT v * v FROM c",
    "function",
  ],
  // rows and temp files
  [
    "millennium start of a series",
    "SELECT count(*) FROM generate_series(date_trunc('millennium', $__timeFrom()), $__timeTo(), interval '1 second')",
    "function",
  ],
  [
    "decade start of a series",
    "SELECT count(*) FROM generate_series(date_trunc('decade', $__timeFrom()::timestamptz), $__timeTo(), $__interval)",
    "function",
  ],
  ["fractional numeric step", "SELECT count(*) FROM generate_series(0, 1, 0.000000000000001)", "function"],
  ["numeric series past the cap", "SELECT count(*) FROM generate_series(1, 4000000000)", "function"],
  [
    "time series with a computed step",
    "SELECT count(*) FROM generate_series($__timeFrom(), $__timeTo(), $__timeTo() - $__timeFrom())",
    "function",
  ],
  [
    "time series with a column step",
    "SELECT count(*) FROM services, generate_series($__timeFrom(), $__timeTo(), (name || ' seconds')::interval)",
    "function",
  ],
  [
    "time series from a literal",
    "SELECT count(*) FROM generate_series('2000-01-01'::timestamptz, $__timeTo(), interval '1 day')",
    "function",
  ],
  [
    "DISTINCT over aggregates",
    `SELECT DISTINCT v FROM (SELECT string_agg(route, '') AS v FROM http_requests WHERE ${F} GROUP BY service) q`,
    "function",
  ],
  [
    "DISTINCT ON an aggregate",
    `SELECT DISTINCT ON (v) v FROM (SELECT string_agg(route, '') AS v FROM http_requests WHERE ${F} GROUP BY service) q`,
    "function",
  ],
  ["ORDER BY an aggregate", `SELECT string_agg(route, '') AS v FROM http_requests WHERE ${F} GROUP BY service ORDER BY v`, "function"],
  ["ORDER BY position", `SELECT string_agg(route, '') FROM http_requests WHERE ${F} GROUP BY service ORDER BY 1`, "function"],
  [
    "GROUP BY an aggregate",
    `SELECT v, count(*) FROM (SELECT string_agg(route, '') AS v FROM http_requests WHERE ${F} GROUP BY service) q GROUP BY v`,
    "function",
  ],
  ["UNION (distinct) of aggregates", `SELECT string_agg(route, '') FROM http_requests WHERE ${F} UNION SELECT 'x'`, "function"],
  ["window partition by an aggregate", `SELECT row_number() OVER (PARTITION BY v) FROM (${AGG} GROUP BY service) q`, "function"],
  [
    "string_agg ordered by an aggregate",
    `SELECT string_agg(service, ',' ORDER BY v) FROM (SELECT service, string_agg(route, '') AS v FROM http_requests WHERE ${F} GROUP BY service) q`,
    "function",
  ],
  [
    "ARRAY() of aggregates",
    `SELECT cardinality(ARRAY(SELECT string_agg(route, '') FROM http_requests WHERE ${F} GROUP BY service))`,
    "function",
  ],
  // the time bound: one offset, under a cap
  [
    "two ranges before the start",
    "SELECT count(*) FROM http_requests WHERE ts >= $__timeFrom() - ($__timeTo() - $__timeFrom()) - ($__timeTo() - $__timeFrom())",
    "time",
  ],
  ["forty ranges", `SELECT count(*) FROM http_requests WHERE ts >= $__timeFrom()${" - ($__timeTo() - $__timeFrom())".repeat(40)}`, "time"],
  ["a chain of intervals", `SELECT count(*) FROM http_requests WHERE ts >= $__timeFrom()${" - $__interval".repeat(50)}`, "time"],
  ["two intervals", "SELECT count(*) FROM http_requests WHERE ts > $__timeFrom() - $__interval - $__interval", "time"],
  ["a literal offset over a day", "SELECT count(*) FROM http_requests WHERE ts >= $__timeFrom() - interval '2 days'", "time"],
  ["a literal offset of a week", "SELECT count(*) FROM http_requests WHERE ts >= $__timeFrom() - '1 week'::interval", "time"],
  ["a truncation to the month", "SELECT count(*) FROM http_requests WHERE ts >= date_trunc('month', $__timeFrom())", "time"],
  ["a truncation to the millennium", "SELECT count(*) FROM http_requests WHERE ts >= date_trunc('millennium', $__timeFrom())", "time"],
  [
    "truncation then two offsets",
    "SELECT count(*) FROM http_requests WHERE ts >= date_trunc('day', $__timeFrom()) - interval '1 day' - interval '1 day'",
    "time",
  ],
  [
    "offset inside a truncation chain",
    "SELECT count(*) FROM http_requests WHERE ts >= date_trunc('day', date_trunc('day', $__timeFrom()) - interval '1 day')",
    "time",
  ],
  [
    "date_bin by a long literal",
    "SELECT count(*) FROM http_requests WHERE ts >= date_bin(interval '30 days', $__timeFrom(), timestamptz 'epoch')",
    "time",
  ],
  ["interval with a field modifier", "SELECT count(*) FROM http_requests WHERE ts >= $__timeFrom() - interval '1' year", "time"],
  [
    "a series column that is not bounded",
    "SELECT count(*) FROM generate_series(1, 3) g(t), LATERAL (SELECT count(*) FROM http_requests WHERE ts >= to_timestamp(g.t)) x",
    "time",
  ],
  // undeclared functions
  ["an added function without a declaration", "SELECT made_up_fn(1)", "function"],
];

describe("harmful statements by family", () => {
  test.each(HOSTILE)("%s", (_family, sql, reason) => refused(sql, reason));

  test("the refusals name the function", () => {
    for (const [sql, name] of [
      [`SELECT length(rtrim(string_agg(' ', ''), string_agg('x', '') || ' ')) FROM http_requests WHERE ${F}`, "rtrim"],
      [`WITH a AS (${AGG}) SELECT strpos(v, v) FROM a`, "strpos"],
      ["SELECT 10::numeric ^ 65000", "^"],
      [`WITH a AS (${AGG}) SELECT normalize(v, NFKC) FROM a`, "normalize"],
    ]) {
      const v = guard.check(sql, DEMO_CATALOG);
      expect(v.ok).toBe(false);
      if (!v.ok) expect(v.message).toContain(name);
    }
  });

  test("an added name with no declaration is refused as such", () => {
    const g = createGuard({ extraFunctions: ["made_up_fn"], cacheSize: 0 });
    const v = g.check("SELECT made_up_fn(1)", DEMO_CATALOG);
    expect(v).toMatchObject({ ok: false, reason: "function", message: expect.stringContaining("no size declaration") });
  });
});

describe("time series: rows checked against the range when the statement runs", () => {
  const hour = 3600_000;
  const run = (sql: string, rangeMs: number): string | null => {
    const v = guard.check(sql, DEMO_CATALOG);
    if (!v.ok) throw new Error(`${v.reason}: ${v.message}`);
    const from = Date.UTC(2026, 0, 1);
    return seriesRowsProblem(v.series, from, from + rangeMs, intervalFor(from, from + rangeMs, 1000));
  };

  test.each([
    ["a 1 µs step over 6 h", "SELECT count(*) FROM generate_series($__timeFrom(), $__timeTo(), interval '1 microsecond')", 6 * hour],
    ["a 1 s step over a week", "SELECT count(*) FROM generate_series($__timeFrom(), $__timeTo(), '1 second')", 168 * hour],
    ["a 1 minute step over a year", "SELECT count(*) FROM generate_series($__timeFrom(), $__timeTo(), interval '1 minute')", 8766 * hour],
    [
      "a year of truncation at 1 s",
      "SELECT count(*) FROM generate_series(date_trunc('year', $__timeFrom()), $__timeTo(), interval '1 second')",
      hour,
    ],
  ])("%s is refused", (_name, sql, range) => {
    expect(run(sql, range)).toMatch(/rows/);
  });

  test.each([
    ["$__interval over any range", "SELECT t FROM generate_series($__timeFrom(), $__timeTo(), $__interval) t"],
    [
      "$__interval from a binned start",
      "SELECT t FROM generate_series(date_bin($__interval, $__timeFrom(), timestamptz 'epoch'), $__timeTo(), $__interval) t",
    ],
    [
      "$__interval from one range before",
      "SELECT t FROM generate_series($__timeFrom() - ($__timeTo() - $__timeFrom()), $__timeTo(), $__interval) t",
    ],
  ])("%s stays within the documented maximum for ranges from a minute to ten years", (_name, sql) => {
    for (const range of [60_000, hour, 24 * hour, 90 * 24 * hour, 3650 * 24 * hour]) expect(run(sql, range)).toBeNull();
  });
});

/** Realistic panels the old rules refused: the last ones of the realistic corpus, which expansion.pg.test.ts runs. */
const FORMERLY_REFUSED = REALISTIC_PANEL_SQL.slice(-11);

describe("realistic panels the old rules refused are accepted", () => {
  test("they are the gap fill, day bound, lag, format, replace, big series, date, array_to_string, corr, jsonb_object_agg and LATERAL panels", () => {
    expect(FORMERLY_REFUSED[0]).toContain("date_bin($__interval, $__timeFrom()");
    expect(FORMERLY_REFUSED[10]).toContain("CROSS JOIN LATERAL");
  });

  test.each(FORMERLY_REFUSED.map((sql) => [sql.replace(/\s+/g, " ").slice(0, 100), sql]))("%s", (_name, sql) => accepted(sql));

  test("TimescaleDB's locf, interpolate, first and last, beside time_bucket_gapfill", () => {
    accepted(
      `SELECT time_bucket_gapfill('1 minute', ts) AS t, locf(avg(latency_ms)), interpolate(avg(latency_ms)), first(status, ts), last(status, ts)
       FROM http_requests WHERE ${F} GROUP BY 1`,
    );
  });

  test.each([
    "SELECT json_build_object('service', service, 'routes', json_agg(route)) FROM http_requests WHERE $__timeFilter(ts) GROUP BY service",
    "SELECT coalesce(string_agg(route, ', ' ORDER BY route), '') FROM http_requests WHERE $__timeFilter(ts)",
    "SELECT length(string_agg(route, '')) AS n FROM http_requests WHERE $__timeFilter(ts) GROUP BY service ORDER BY n",
    "SELECT count(*) AS n FROM http_requests WHERE $__timeFilter(ts) GROUP BY service ORDER BY n DESC",
    "SELECT replace(replace(route, '/api/', '/'), '/v1/', '/') FROM http_requests WHERE $__timeFilter(ts)",
    "SELECT 10::numeric ^ 6, power(latency_ms, 2), sqrt(latency_ms), round(avg(latency_ms)::numeric, 2) FROM http_requests WHERE $__timeFilter(ts) GROUP BY latency_ms",
    "SELECT rtrim(route, '/'), btrim(service), strpos(route, '/api'), split_part(route, '/', 2) FROM http_requests WHERE $__timeFilter(ts)",
    "SELECT regexp_replace(route, '/[0-9]+', '/:id', 'g') AS r, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1",
    "SELECT count(*) FROM http_requests WHERE ts >= date_bin($__interval, $__timeFrom(), timestamptz 'epoch')",
    "SELECT count(*) FROM http_requests WHERE ts >= $__timeFrom() - $__interval AND ts < $__timeTo() + $__interval",
    "SELECT count(*) FROM http_requests WHERE ts BETWEEN date_trunc('hour', $__timeFrom()) AND $__timeTo()",
  ])("%s", (sql) => accepted(sql));
});

describe("carrying a value through a CTE, a sub-select or a LATERAL never turns a refusal into an acceptance", () => {
  type Expr = { sql: string };
  const leaf = fc.constantFrom<Expr>({ sql: "H" }, { sql: "H" }, { sql: "'ab'" }, { sql: "route" }, { sql: "1" });
  const { expr } = fc.letrec<{ expr: Expr }>((tie) => ({
    expr: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leaf,
      fc
        .tuple(
          fc.constantFrom(
            "replace(#, 'a', 'bbb')",
            "replace(#, 'a', #)",
            "rtrim(#, #)",
            "btrim(#)",
            "# || #",
            "upper(#)",
            "format('%s-%s', #, #)",
            "format('%1$s%1$s', #)",
            "json_build_object('k', #)::text",
            "normalize(#, NFKC)",
            "strpos(#, #)::text",
            "lpad(#, 10)",
            "concat(#, #)",
            "coalesce(#, #)",
            "substr(#, 1, 5)",
            "split_part(#, #, 1)",
            "string_agg(#, ',')",
            "length(#)::text",
            "regexp_replace(#, 'a', 'xx', 'g')",
          ),
          tie("expr"),
          tie("expr"),
        )
        .map(([tpl, a, b]) => {
          let i = 0;
          return { sql: tpl.replace(/#/g, () => (i++ === 0 ? a.sql : b.sql)) };
        }),
    ),
  }));
  /** The inner value: an aggregate of the range's rows, or a row value. */
  const inner = fc.constantFrom("string_agg(route, '')", "route", "format('%s=%s', route, service)", "max(route)");

  test("wrapped refusals stay refusals", () => {
    fc.assert(
      fc.property(expr, inner, fc.integer({ min: 0, max: 3 }), (outer, value, how) => {
        const direct = `SELECT ${outer.sql.replaceAll("H", `(${value})`)} AS out FROM http_requests WHERE ${F}`;
        const body = `SELECT ${value} AS h FROM http_requests WHERE ${F}`;
        const use = outer.sql.replaceAll("H", "q.h");
        const wrapped = [
          `WITH q AS (${body}) SELECT ${use} AS out FROM q`,
          `WITH p AS (${body}), q AS (SELECT p.h AS h FROM p) SELECT ${use} AS out FROM q`,
          `SELECT ${use} AS out FROM (${body}) AS q`,
          `SELECT ${use} AS out FROM services s CROSS JOIN LATERAL (${body} AND service = s.name) AS q`,
        ][how];
        const d = guard.check(direct, DEMO_CATALOG);
        const w = guard.check(wrapped, DEMO_CATALOG);
        if (!d.ok && d.reason === "function") {
          if (w.ok) throw new Error(`direct refused (${d.message}) but wrapped accepted:\n${wrapped}`);
          expect(w.reason).toBe("function");
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe("declared names", () => {
  // The analysis names a declared function or operator in its messages as it is, without safeName.
  test("every declared function and operator name is one safeName leaves as it is", () => {
    const names = [...Object.keys(FUNCTION_DECLARATIONS), ...Object.keys(OPERATOR_DECLARATIONS)];
    expect(names.filter((n) => safeName(n) !== n)).toEqual([]);
    expect(names.length).toBeGreaterThan(50);
  });
});
