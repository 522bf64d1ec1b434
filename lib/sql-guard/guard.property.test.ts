import fc from "fast-check";
import { parseSync, scanSync } from "libpg-query";
import { beforeAll, describe, expect, test } from "vitest";
import { GUARD_REASONS } from "./verdict.ts";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { type Guard, type GuardVerdict, createGuard, loadGuardParser } from "./index.ts";
import { codeDollars } from "./macros.ts";

let guard: Guard;
beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard({ cacheSize: 0 });
});

/** Fragments that exercise every lexer state and every check. */
const PIECES = [
  "SELECT ",
  "select ",
  " FROM ",
  " WHERE ",
  " http_requests",
  " services",
  " pg_authid",
  " pg_catalog.",
  "count(*)",
  "pg_sleep(1)",
  "now()",
  " ts",
  "1",
  "x",
  " AS ",
  ",",
  "(",
  ")",
  ";",
  " ",
  "\n",
  "\t",
  "'",
  "''",
  '"',
  '""',
  "$",
  "$$",
  "$a$",
  "$1",
  "$__timeFrom()",
  "$__timeTo()",
  "$__interval",
  "$__timeFilter(ts)",
  "$__timeGroup(ts, '5m')",
  "$__nope",
  "E'",
  "e",
  "U&'",
  'U&"',
  "\\",
  "\\'",
  "--",
  "/*",
  "*/",
  "-",
  "/",
  "*",
  "a$b",
  "_",
  "::",
  "::regclass",
  " UNION ",
  " INSERT INTO services VALUES (1)",
  " DELETE FROM services",
  " FOR UPDATE",
  " INTO t",
  "WITH w AS (",
  " LATERAL ",
  " JOIN ",
  " ON true",
  "é",
  "\u0000",
];
const sqlSoup = fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }).map((a) => a.join(""));
/** Mostly valid panel SQL with macros in every position, literals that look like macros included. */
const panelSql = fc
  .tuple(
    fc.array(
      fc.constantFrom(
        "count(*)",
        "avg(latency_ms)",
        "$__timeGroup(ts, '5m')",
        "$__timeGroup(ts, $__interval)",
        "$__timeTo()",
        "$__timeFrom()",
        "'lit $__timeFrom() --'",
        "$q$ $__interval $q$",
        "1",
        '"$__timeTo()"',
        "E'\\' $__interval'",
        "date_bin($__interval, ts, $__timeFrom())",
        "(SELECT max(ts) FROM http_requests WHERE $__timeFilter(ts))",
      ),
      { minLength: 1, maxLength: 5 },
    ),
    fc.array(fc.constantFrom("$__timeFilter(ts)", "ts > $__timeFrom()", "ts < $__timeTo()", "status > 1", "service = '$__x'"), {
      minLength: 1,
      maxLength: 4,
    }),
  )
  .map(([exprs, conds]) => `SELECT ${exprs.join(", ")} FROM http_requests WHERE ${conds.join(" AND ")}`);
const anyUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 200 });

function assertWellFormed(v: GuardVerdict): void {
  if (v.ok) {
    expect(typeof v.sql).toBe("string");
    expect(Array.isArray(v.params)).toBe(true);
  } else {
    expect(GUARD_REASONS).toContain(v.reason);
    expect(typeof v.message).toBe("string");
  }
}

describe("the guard never throws and always answers ok or one of the seven reasons", () => {
  test("any code points", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (s) => assertWellFormed(guard.check(s, DEMO_CATALOG))),
      { numRuns: 1500 },
    );
  });

  test("any UTF-16 code units, unpaired surrogates included", () => {
    fc.assert(
      fc.property(anyUnits, (s) => assertWellFormed(guard.check(s, DEMO_CATALOG))),
      { numRuns: 1500 },
    );
  });

  test("SQL-shaped input, with and without a catalog", () => {
    fc.assert(
      fc.property(sqlSoup, fc.boolean(), (s, withCatalog) => assertWellFormed(guard.check(s, withCatalog ? DEMO_CATALOG : null))),
      { numRuns: 3000 },
    );
  });

  test("non-string input from untyped callers", () => {
    for (const bad of [undefined, null, 42, {}, []]) {
      expect(guard.check(bad as unknown as string, DEMO_CATALOG)).toMatchObject({ ok: false, reason: "structure" });
    }
  });

  test("an accepted statement binds every $n it uses and parses as one statement", () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(sqlSoup, panelSql), (s) => {
        const v = guard.check(s, DEMO_CATALOG);
        if (!v.ok) return;
        accepted++;
        const tree = parseSync(v.sql);
        expect(tree.stmts).toHaveLength(1);
        const used = new Set([...JSON.stringify(tree).matchAll(/"ParamRef":\{"number":(\d+)/g)].map((m) => Number(m[1])));
        expect([...used].sort()).toEqual(v.params.map((_, i) => i + 1));
      }),
      { numRuns: 3000 },
    );
    expect(accepted).toBeGreaterThan(500);
  });

  test("a cached guard answers exactly like an uncached one", () => {
    const cached = createGuard({ cacheSize: 50 });
    fc.assert(
      fc.property(sqlSoup, (s) => {
        const a = cached.check(s, DEMO_CATALOG, "v1");
        expect(cached.check(s, DEMO_CATALOG, "v1")).toEqual(a);
        expect(guard.check(s, DEMO_CATALOG)).toEqual(a);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("no statement with a write keyword as a statement passes", () => {
  const ident = fc.constantFrom("services", "http_requests", "t", '"Services"', "public.services", "pg_temp.x");
  const write = fc.oneof(
    ident.map((t) => `INSERT INTO ${t} VALUES (1)`),
    ident.map((t) => `INSERT INTO ${t} SELECT * FROM services`),
    ident.map((t) => `UPDATE ${t} SET a = 1`),
    ident.map((t) => `DELETE FROM ${t}`),
    ident.map((t) => `MERGE INTO ${t} s USING services x ON true WHEN MATCHED THEN DELETE`),
    ident.map((t) => `TRUNCATE ${t}`),
    ident.map((t) => `DROP TABLE ${t}`),
    ident.map((t) => `ALTER TABLE ${t} RENAME TO y`),
    ident.map((t) => `CREATE TABLE ${t} (a int)`),
    ident.map((t) => `COPY ${t} FROM '/tmp/x'`),
    ident.map((t) => `GRANT SELECT ON ${t} TO public`),
    ident.map((t) => `LOCK TABLE ${t}`),
    fc.constant("SET statement_timeout = 0"),
    fc.constant("CALL p()"),
    fc.constant("DO $$ BEGIN END $$"),
    fc.constant("VACUUM"),
    ident.map((t) => `SELECT * INTO ${t} FROM services`),
    ident.map((t) => `SELECT * FROM services FOR UPDATE OF ${t}`),
  );
  const randomCase = (s: string, flips: boolean[]) =>
    [...s].map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c.toLowerCase())).join("");
  const space = fc.constantFrom(" ", "\n", "\t", "  ", "\r\n");
  const statement = fc
    .tuple(
      write,
      fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
      fc.constantFrom("", ";", ";;", " ; "),
      fc.constantFrom("", ";", " ;\n"),
      space,
      fc.integer({ min: 0, max: 4 }),
    )
    .map(([w, flips, lead, trail, sp, shape]) => {
      const body = randomCase(w, flips).replace(/ /g, sp);
      switch (shape) {
        case 0:
          return `${lead}${body}${trail}`;
        case 1: // data-modifying CTE
          return `WITH w AS (${body} RETURNING *) SELECT * FROM w${trail}`;
        case 2: // after a harmless statement
          return `SELECT 1;${sp}${body}`;
        case 3: // nested CTE
          return `WITH a AS (WITH b AS (${body} RETURNING 1) SELECT * FROM b) SELECT * FROM a`;
        default: // in a sub-select
          return `SELECT * FROM (WITH d AS (${body} RETURNING *) SELECT * FROM d) s`;
      }
    });

  test("generated write statements are all refused", () => {
    fc.assert(
      fc.property(statement, (sql) => {
        const v = guard.check(sql, DEMO_CATALOG);
        expect(v.ok).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("the macro lexer agrees with libpg-query's scanner", () => {
  test("on every code-level $ and on comments", () => {
    const asciiSoup = fc
      .array(fc.constantFrom(...PIECES.filter((p) => /^[\x01-\x7f]*$/.test(p))), { maxLength: 40 })
      .map((a) => a.join(""));
    let compared = 0;
    fc.assert(
      fc.property(asciiSoup, (s) => {
        let tokens: { start: number; text: string; tokenName: string }[];
        try {
          tokens = scanSync(s).tokens;
        } catch {
          return; // the scanner refuses the text (unterminated literal): nothing to compare
        }
        const mine = codeDollars(s);
        if (mine === null) return;
        compared++;
        const theirs = tokens.filter((t) => t.text.startsWith("$") && t.tokenName !== "SCONST").map((t) => t.start);
        expect(mine.dollars).toEqual(theirs);
        expect(mine.hasComment).toBe(tokens.some((t) => t.tokenName === "SQL_COMMENT" || t.tokenName === "C_COMMENT"));
      }),
      { numRuns: 4000 },
    );
    expect(compared).toBeGreaterThan(500);
  });
});

describe("a time bound only counts where it bounds", () => {
  const table = fc.constantFrom(
    { from: "http_requests", col: "ts" },
    { from: "http_requests r", col: "r.ts" },
    { from: "host_metrics", col: "time" },
    { from: "host_metrics AS h", col: "h.time" },
    { from: "metrics.deploys d", col: "d.at" },
  );
  const filter = (col: string) =>
    fc.constantFrom(
      `$__timeFilter(${col})`,
      `${col} >= $__timeFrom()`,
      `${col} > $__timeFrom() - $__interval`,
      `${col} BETWEEN $__timeFrom() AND $__timeTo()`,
      `$__timeFrom() <= ${col}`,
    );
  const anything = fc.constantFrom("true", "false", "1 = 1", "NULL", "(SELECT true)", "status = 500", "now() IS NOT NULL");
  /** Ways to write the filter so that it no longer restricts the scan. */
  const wrap = (f: string) =>
    fc.oneof(
      anything.map((x) => `(${f}) OR ${x}`),
      anything.map((x) => `${x} OR (${f})`),
      fc.constant(`NOT (${f})`),
      fc.constant(`NOT NOT (${f})`),
      fc.constant(`(${f}) IS NOT NULL`),
      fc.constant(`(${f}) IS NULL`),
      fc.constant(`(${f}) IS TRUE`),
      fc.constantFrom("true", "false", "NULL").map((b) => `(${f}) = ${b}`),
      fc.constant(`(${f}) <> false`),
      fc.constant(`coalesce(${f}, true)`),
      fc.constant(`greatest(${f}, true)`),
      fc.constant(`nullif(${f}, false) IS NULL`),
      fc.constant(`CASE WHEN ${f} THEN true ELSE true END`),
      fc.constant(`(${f})::text = 'true'`),
      fc.constant(`EXISTS (SELECT 1 WHERE ${f})`),
    );
  const statement = table.chain(({ from, col }) =>
    filter(col).chain((f) =>
      fc
        .tuple(wrap(f), fc.array(anything, { maxLength: 2 }))
        .map(([w, extra]) => `SELECT count(*) FROM ${from} WHERE ${[w, ...extra.map((x) => `(${x})`)].join(" AND ")}`),
    ),
  );

  test("wrapping a required filter in OR, NOT, IS, a comparison, CASE or a function never makes it pass", () => {
    fc.assert(
      fc.property(statement, (sql) => {
        const v = guard.check(sql, DEMO_CATALOG);
        expect(v.ok, sql).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  test("the same filters AND-ed at the top are accepted", () => {
    const plain = table.chain(({ from, col }) =>
      fc
        .tuple(filter(col), fc.array(anything, { maxLength: 2 }))
        .map(([f, extra]) => `SELECT count(*) FROM ${from} WHERE ${[f, ...extra.map((x) => `(${x})`)].join(" AND ")}`),
    );
    fc.assert(
      fc.property(
        plain.filter((sql) => !sql.includes("status") || sql.includes("http_requests")),
        (sql) => {
          const v = guard.check(sql, DEMO_CATALOG);
          expect(v, sql).toMatchObject({ ok: true });
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("field selection", () => {
  const COLUMNS = ["name", "team", "tier"];
  const word = fc.oneof(
    fc.constantFrom(...COLUMNS, "pg_sleep", "to_json", "row_to_json", "count", "current_setting", "ctid", "xmin", "Name"),
    fc.stringMatching(/^[a-z_][a-z0-9_]{0,20}$/),
  );
  /** [expression, the columns of its row when it is a whole-row reference of a FROM item] */
  const base = fc.constantFrom<[string, string[]]>(
    ["s", COLUMNS],
    ["s.*", COLUMNS],
    ["t", ["x"]],
    ["1", []],
    ["'x'", []],
    ["s.name", []],
    ["ROW(1, 2)", []],
    ["(SELECT s FROM services s LIMIT 1)", []],
    ["ARRAY[s.name]", []],
    ["lower(s.name)", []],
  );

  test("(e).name is accepted only for a column of e's row", () => {
    fc.assert(
      fc.property(base, fc.oneof(word, fc.constant("x")), ([e, columns], name) => {
        const quoted = `"${name.replace(/"/g, '""')}"`;
        const v = guard.check(`SELECT (${e}).${quoted} FROM services s, (SELECT 1 AS x) t`, DEMO_CATALOG);
        const column = columns.includes(name);
        if (v.ok) expect(column, `(${e}).${quoted}`).toBe(true);
        else if (column) throw new Error(`(${e}).${quoted} refused: ${v.message}`);
      }),
      { numRuns: 2000 },
    );
  });
});
