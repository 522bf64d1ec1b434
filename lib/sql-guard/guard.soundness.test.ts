// Families of statements that a hostile editor (or a steered model) writes to get an unbounded, stateful or
// uncancellable statement past the guard, each with the reason it must be refused for; and the benign
// neighbours of each family, which must stay accepted.
import { beforeAll, describe, expect, test } from "vitest";
import type { GuardReason } from "./verdict.ts";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { type Guard, createGuard, loadGuardParser } from "./index.ts";

let guard: Guard;
beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard({ cacheSize: 0 });
});

const F = "$__timeFilter(ts)";

const HOSTILE: [string, string, GuardReason][] = [
  // 1. the time bound must bound
  ["filter under OR true", `SELECT * FROM http_requests WHERE ${F} OR true`, "time"],
  ["filter under OR with another column", `SELECT * FROM http_requests WHERE ${F} OR status = 500`, "time"],
  ["filter under NOT", `SELECT * FROM http_requests WHERE NOT NOT ${F}`, "time"],
  ["filter inside CASE", `SELECT * FROM http_requests WHERE CASE WHEN ${F} THEN true ELSE true END`, "time"],
  ["filter inside COALESCE", `SELECT * FROM http_requests WHERE coalesce(${F}, true)`, "time"],
  ["filter compared IS NOT NULL", `SELECT * FROM http_requests WHERE ${F} IS NOT NULL`, "time"],
  ["filter compared = false", `SELECT * FROM http_requests WHERE ${F} = false`, "time"],
  ["filter IS DISTINCT FROM", `SELECT * FROM http_requests WHERE ${F} IS DISTINCT FROM true`, "time"],
  ["filter in a function", `SELECT * FROM http_requests WHERE greatest(${F}, true)`, "time"],
  [
    "filter in an unread CTE",
    `WITH a AS (SELECT * FROM http_requests WHERE ${F}), b AS (SELECT * FROM http_requests) SELECT * FROM b`,
    "time",
  ],
  [
    "filter in a CTE, table read again outside",
    `WITH a AS (SELECT 1 FROM http_requests WHERE ${F}) SELECT * FROM http_requests, a`,
    "time",
  ],
  ["filter on one side of a join", `SELECT * FROM http_requests r JOIN host_metrics h ON true WHERE $__timeFilter(r.ts)`, "time"],
  [
    "filter on one side, other side in LATERAL",
    `SELECT * FROM http_requests r, LATERAL (SELECT * FROM host_metrics) h WHERE $__timeFilter(r.ts)`,
    "time",
  ],
  [
    "outer filter does not bound a sub-select",
    `SELECT * FROM http_requests r WHERE $__timeFilter(r.ts) AND EXISTS (SELECT 1 FROM http_requests q WHERE q.ts = r.ts)`,
    "time",
  ],
  ["filter on a column that is not the time column", "SELECT * FROM host_metrics WHERE $__timeFilter(mem_bytes)", "time"],
  [
    "filter on another table's time column",
    "SELECT * FROM http_requests r, host_metrics h WHERE $__timeFilter(h.time) AND $__timeFilter(h.time)",
    "time",
  ],
  ["filter on an expression of the time column", "SELECT * FROM http_requests WHERE $__timeFilter(ts + interval '1 hour')", "time"],
  ["loose bound: 100 years before the range", "SELECT * FROM http_requests WHERE ts > $__timeFrom() - interval '100 years'", "time"],
  ["loose bound: a literal", "SELECT * FROM http_requests WHERE ts > '2000-01-01'", "time"],
  ["upper bound only", "SELECT * FROM http_requests WHERE ts <= $__timeTo()", "time"],
  ["bound the wrong way", "SELECT * FROM http_requests WHERE ts < $__timeFrom()", "time"],
  ["BETWEEN SYMMETRIC", "SELECT * FROM http_requests WHERE ts BETWEEN SYMMETRIC $__timeFrom() AND '-infinity'", "time"],
  ["NOT BETWEEN", "SELECT * FROM http_requests WHERE ts NOT BETWEEN $__timeFrom() AND $__timeTo()", "time"],
  ["bound on the preserved side of a LEFT JOIN's ON", "SELECT * FROM http_requests r LEFT JOIN services s ON $__timeFilter(r.ts)", "time"],
  ["bound on one side of a FULL JOIN's ON", "SELECT * FROM services s FULL JOIN http_requests r ON $__timeFilter(r.ts)", "time"],
  ["bound cast to date (widens to a day)", "SELECT * FROM http_requests WHERE ts >= $__timeFrom()::date", "time"],
  ["set-operation branch without a bound", `SELECT ts FROM http_requests WHERE ${F} UNION ALL SELECT time FROM host_metrics`, "time"],
  ["through a sub-select in FROM", "SELECT * FROM (SELECT * FROM host_metrics) h WHERE $__timeFilter(h.time)", "time"],
  ["ambiguous unqualified time column", "SELECT 1 FROM http_requests a, http_requests b WHERE $__timeFilter(ts)", "time"],
  // ... system columns and columns outside the catalog
  ["system column ctid", `SELECT ctid FROM http_requests WHERE ${F}`, "catalog"],
  ["qualified xmin", "SELECT s.xmin FROM services s", "catalog"],
  ["tableoid in WHERE", "SELECT name FROM services WHERE tableoid > 0", "catalog"],
  ["cmax through (t).", "SELECT (s).cmax FROM services s", "catalog"],
  ["column not in the catalog", "SELECT password FROM services", "catalog"],
  [
    "system column beside an item of unknown columns",
    "SELECT ctid FROM ROWS FROM (generate_series(1, 2), generate_series(1, 2)), services",
    "catalog",
  ],
  [
    "qualified field of an item of unknown columns",
    "SELECT r.to_json FROM ROWS FROM (generate_series(1, 2), generate_series(1, 2)) r",
    "function",
  ],
  ["qualified column not in a sub-select", "SELECT q.nope FROM (SELECT 1 AS a) q", "function"],

  // 2. no function outside the allowlist, by any syntax
  ["(0.5).pg_sleep", "SELECT (0.5).pg_sleep", "function"],
  ["('server_version').current_setting", "SELECT ('server_version').current_setting", "function"],
  ["(42).pg_advisory_lock", "SELECT (42).pg_advisory_lock", "function"],
  ["(pid).pg_terminate_backend", "SELECT (x.pid).pg_terminate_backend FROM (SELECT 1 AS pid) x", "function"],
  ["('pg_authid').pg_relation_size", "SELECT ('pg_authid').pg_relation_size", "function"],
  ["quoted field name", 'SELECT (0.5)."pg_sleep"', "function"],
  ["U& field name", 'SELECT (0.5).U&"pg\\005fsleep"', "function"],
  ["field selection in macro arguments", "SELECT $__timeGroup((0.5).pg_sleep, '1m')", "function"],
  ["field selection in WHERE", "SELECT name FROM services WHERE (1).pg_sleep IS NULL", "function"],
  ["field selection in GROUP BY", "SELECT count(*) FROM services GROUP BY (1).pg_sleep", "function"],
  ["field selection in ORDER BY", "SELECT name FROM services ORDER BY ('x').pg_sleep", "function"],
  ["field selection in LIMIT", "SELECT name FROM services LIMIT (1).pg_backend_pid", "function"],
  ["field selection on a column value", "SELECT (name).pg_sleep FROM services", "function"],
  ["field selection after a subscript", "SELECT (ARRAY[1])[1].pg_sleep", "function"],
  ["field selection on a ROW", "SELECT (ROW(1)).pg_sleep", "function"],
  // ... operators
  ["array overlap &&", "SELECT ARRAY[1] && ARRAY[2]", "function"],
  ["array contains @>", "SELECT ARRAY[1] @> ARRAY[2]", "function"],
  ["jsonb contains @>", "SELECT '[{}]'::jsonb @> '[{}]'::jsonb", "function"],
  ["contained by <@", "SELECT ARRAY[1] <@ ARRAY[2]", "function"],
  ["distance <->", "SELECT 1 <-> 2", "function"],
  ["text search @@", "SELECT 'a' @@ 'b'", "function"],
  ["jsonb key exists ?", "SELECT '{}'::jsonb ? 'a'", "function"],
  ["bitwise shift", "SELECT 1 << 2", "function"],
  ["OPERATOR(pg_catalog.&&)", "SELECT ARRAY[1] OPERATOR(pg_catalog.&&) ARRAY[2]", "function"],
  ["OPERATOR(pg_catalog.@>) in ANY", "SELECT 1 WHERE ARRAY[1] OPERATOR(pg_catalog.@>) ANY (SELECT ARRAY[1])", "function"],
  ["ORDER BY USING a disallowed operator", "SELECT name FROM services ORDER BY name USING ~<~", "function"],
  ["disallowed operator in a JOIN condition", "SELECT 1 FROM services a JOIN services b ON ARRAY[a.name] && ARRAY[b.name]", "function"],

  // 3. casts only to allowed types
  ["array spelling of regclass", "SELECT '{pg_authid}'::_regclass", "catalog"],
  ["regclass[]", "SELECT '{pg_authid}'::regclass[]", "catalog"],
  ["role names through _regrole", "SELECT ARRAY[10]::oid[]::_regrole::text", "function"],
  ["_regrole alone", "SELECT '{10}'::_regrole", "catalog"],
  ["_xml", "SELECT '{\"<a/>\"}'::_xml", "function"],
  ["xml[]", "SELECT '{\"<a/>\"}'::xml[]", "function"],
  ["system row type", "SELECT '(1)'::pg_aggregate", "catalog"],
  ["qualified system row type", "SELECT NULL::pg_catalog.pg_authid", "catalog"],
  ["information_schema type", "SELECT 'x'::information_schema.sql_identifier", "catalog"],
  ["xid cast in an allowed function", "SELECT age('3'::xid)", "function"],
  ["oid cast", "SELECT 1::oid", "function"],
  ["geometric type", "SELECT '((0,0),(1,1))'::path", "function"],
  ["tsvector", "SELECT 'a b'::tsvector", "function"],
  ["bytea", "SELECT 'x'::bytea", "function"],
  ["typed literal of a disallowed type", "SELECT point '(1,1)'", "function"],
  ["CAST to a disallowed type", "SELECT CAST('1' AS money)", "function"],
  ["a type of another schema", "SELECT 1::public.int4", "function"],
  ["padding type modifier", "SELECT 'x'::char(10485760)", "function"],
  ["varchar modifier", "SELECT 'x'::varchar(100000)", "function"],
  ["numeric modifier", "SELECT 1::numeric(100000, 2)", "function"],
  ["column definition list type", "SELECT * FROM ROWS FROM (generate_series(1, 2)) AS t(x xml)", "function"],

  // 4. no statement that outgrows its timeout
  ["format width", "SELECT length(format('%999999999s', ''))", "function"],
  ["format width from an argument", "SELECT format('%*s', 1000000000, '')", "function"],
  ["format positional width from an argument", "SELECT format('%*1$s', 1000000000)", "function"],
  ["format with a computed format", "SELECT format('%' || '9999999' || 's', '')", "function"],
  ["format width just over the cap", "SELECT format('%1001s', 'x')", "function"],
  // eight nested replace calls turn ten characters into 10^9
  ["nested replace", `SELECT ${"replace(".repeat(8)}'aaaaaaaaaa'${", 'a', 'aaaaaaaaaa')".repeat(8)}`, "function"],
  ["nested regexp_replace", `SELECT ${"regexp_replace(".repeat(8)}'aa'${", 'a', 'aaaa', 'g')".repeat(8)}`, "function"],
  ["amplifier inside an aggregate", "SELECT string_agg(replace(name, 'a', 'aaaaaaaaaaaaaaaaaaaa'), ',') FROM services", "function"],
  ["amplifier through a sub-select", "SELECT replace((SELECT string_agg(name, ',') FROM services), 'a', 'aaaa')", "function"],
  ["huge numeric generate_series", "SELECT count(*) FROM generate_series(1, 1000000000)", "function"],
  ["generate_series with a computed bound", "SELECT count(*) FROM generate_series(1, (SELECT 10))", "function"],
  ["generate_series over a literal time span", "SELECT * FROM generate_series('2000-01-01'::timestamptz, now(), '1 second')", "function"],
  [
    "generate_series from the range start to a literal",
    "SELECT * FROM generate_series($__timeFrom()::timestamptz, 'infinity'::timestamptz, interval '1 second')",
    "function",
  ],
  ["string_agg over a huge series", "SELECT string_agg('x', '') FROM generate_series(1, 100000000)", "function"],
  ["recursive doubling", "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT length(s) FROM r", "keyword"],
];

describe("hostile families", () => {
  test.each(HOSTILE)("%s → %s", (_family, sql, reason) => {
    const verdict = guard.check(sql, DEMO_CATALOG);
    expect(verdict).toMatchObject({ ok: false, reason });
  });

  test("messages name the table and alias, the function or the operator", () => {
    const time = guard.check("SELECT * FROM http_requests r JOIN host_metrics h ON true WHERE $__timeFilter(r.ts)", DEMO_CATALOG);
    expect(time).toMatchObject({ reason: "time" });
    if (!time.ok) expect(time.message).toContain("host_metrics AS h");
    const field = guard.check("SELECT (0.5).pg_sleep", DEMO_CATALOG);
    if (!field.ok) expect(field.message).toContain("pg_sleep");
    const op = guard.check("SELECT ARRAY[1] && ARRAY[2]", DEMO_CATALOG);
    if (!op.ok) expect(op.message).toContain("&&");
    const cast = guard.check("SELECT '{pg_authid}'::_regclass", DEMO_CATALOG);
    if (!cast.ok) expect(cast.message).toContain("_regclass");
  });
});

describe("allowlisted functions only over value types", () => {
  const catalog = {
    tables: [
      {
        schema: "public",
        name: "jobs",
        timeColumn: null,
        columns: [
          { name: "id", type: "integer" },
          { name: "xact", type: "xid" },
          { name: "loc", type: "oid" },
          { name: "tags", type: "text[]" },
          { name: "state", type: "job_state" },
        ],
      },
    ],
  };

  test.each([
    ["SELECT age(xact) FROM jobs", "function"],
    ["SELECT max(j.loc) FROM jobs j", "function"],
  ])("%s → %s", (sql, reason) => {
    expect(guard.check(sql, catalog)).toMatchObject({ ok: false, reason });
  });

  test.each([
    "SELECT xact, loc, length(xact::text) FROM jobs WHERE xact = '5'",
    "SELECT count(xact), max(id), array_length(tags, 1), count(state) FROM jobs",
  ])("%s is fine", (sql) => {
    expect(guard.check(sql, catalog)).toMatchObject({ ok: true });
  });
});

describe("benign neighbours stay accepted", () => {
  test.each([
    "SELECT count(*) FROM http_requests r JOIN host_metrics h ON h.host = r.service WHERE $__timeFilter(r.ts) AND $__timeFilter(h.time)",
    "SELECT count(*) FROM http_requests r JOIN host_metrics h ON $__timeFilter(h.time) WHERE $__timeFilter(r.ts)",
    "SELECT count(*) FROM services s LEFT JOIN http_requests r ON r.service = s.name AND $__timeFilter(r.ts)",
    `WITH recent AS (SELECT * FROM http_requests WHERE ${F}) SELECT service, count(*) FROM recent GROUP BY 1`,
    `SELECT n FROM (SELECT count(*) AS n FROM http_requests WHERE ${F}) c`,
    `SELECT * FROM http_requests WHERE ${F} AND (status = 500 OR status = 503)`,
    `SELECT * FROM http_requests WHERE (${F}) AND NOT (route LIKE '/health%')`,
    `SELECT (h).ts, (h.*).status, h.route FROM http_requests h WHERE $__timeFilter(h.ts)`,
    "SELECT * FROM http_requests WHERE ts >= $__timeFrom()",
    "SELECT * FROM http_requests WHERE ts > $__timeFrom() - $__interval AND ts < $__timeTo()",
    "SELECT * FROM http_requests WHERE ts >= $__timeFrom() - ($__timeTo() - $__timeFrom())",
    "SELECT * FROM http_requests WHERE $__timeFrom() <= ts",
    "SELECT * FROM http_requests WHERE ts >= $__timeFrom()::timestamptz",
    `SELECT service, row_number() OVER (PARTITION BY service ORDER BY ts) FROM http_requests WHERE ${F}`,
    `SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY latency_ms) FROM http_requests WHERE ${F}`,
    `SELECT time_bucket('5 minutes', ts) AS t, count(*) FROM http_requests WHERE ${F} GROUP BY 1`,
    `SELECT ts::timestamptz, latency_ms::numeric(10, 2), status::text, status::int8, latency_ms::float8 FROM http_requests WHERE ${F}`,
    `SELECT route FROM http_requests WHERE ${F} AND route LIKE '/api\\_v1%' ESCAPE '\\'`,
    "SELECT 'C:\\' AS path, E'tab\\t' AS tab",
    `SELECT ts AS t, count(*) AS n FROM http_requests WHERE ${F} GROUP BY t ORDER BY n DESC`,
    `SELECT format('%s: %10s', service, route), replace(route, '/', ' / ') FROM http_requests WHERE ${F}`,
    "SELECT g FROM generate_series(1, 100) g",
    "SELECT g FROM generate_series(-5, 5, 1) AS g",
    "SELECT t FROM generate_series($__timeFrom()::timestamptz, $__timeTo()::timestamptz, $__interval) AS t",
    "SELECT t FROM generate_series(date_trunc('hour', $__timeFrom()::timestamptz), $__timeTo()::timestamptz, interval '1 hour') AS t",
    `SELECT '{"a":1}'::jsonb -> 'a', '{"a":{"b":2}}'::jsonb #>> '{a,b}', ARRAY[1, 2] || 3, 'a' || 'b'`,
    `SELECT service FROM http_requests WHERE ${F} AND status IN (500, 503) AND service ~* '^api' AND route NOT ILIKE '%health%'`,
    `SELECT service FROM http_requests WHERE ${F} AND status = ANY (ARRAY[500, 503]) AND latency_ms IS DISTINCT FROM 0`,
    "SELECT interval '1' hour, timestamptz 'epoch', date '2024-01-01', '1 day'::interval, 'a'::varchar(10), 1::numeric(12, 3)",
    "SELECT name FROM services ORDER BY name USING <",
    "SELECT '{1,2}'::int4[], '{a}'::_text, CAST('x' AS text[])",
    "SELECT s.name FROM services s WHERE s.name IN (SELECT name FROM services WHERE tier = 'critical')",
    "SELECT x.n FROM (VALUES (1), (2)) AS x(n)",
    "SELECT column1 FROM (VALUES (1)) v",
  ])("%s", (sql) => {
    const v = guard.check(sql, DEMO_CATALOG);
    if (!v.ok) throw new Error(`${v.reason}: ${v.message}`);
  });
});
