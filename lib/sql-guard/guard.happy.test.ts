import { beforeAll, describe, expect, test } from "vitest";
import type { Catalog } from "../catalog/types.ts";
import { DEMO_CATALOG, REALISTIC_PANEL_SQL } from "../catalog/testing/demo-catalog.ts";
import { type Guard, createGuard, guardOptionsFromConfig, intervalFor, loadGuardParser } from "./index.ts";
import { bucketCount } from "./interval.ts";

let guard: Guard;
beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard({ cacheSize: 0 });
});

describe("realistic dashboard queries", () => {
  test("there are at least 30", () => {
    expect(REALISTIC_PANEL_SQL.length).toBeGreaterThanOrEqual(30);
  });

  test.each(REALISTIC_PANEL_SQL.map((sql) => [sql.replace(/\s+/g, " ").slice(0, 90), sql]))("%s", (_name, sql) => {
    const verdict = guard.check(sql, DEMO_CATALOG);
    expect(verdict).toMatchObject({ ok: true });
    if (!verdict.ok) return;
    expect(verdict.sql).not.toContain("$__");
    // Every $n written is bound, none is missing.
    const used = new Set([...verdict.sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    expect([...used].sort()).toEqual(verdict.params.map((_, i) => i + 1));
    expect(new Set(verdict.params).size).toBe(verdict.params.length);
  });
});

describe("macro expansion", () => {
  const ok = (sql: string) => {
    const v = guard.check(sql, DEMO_CATALOG);
    if (!v.ok) throw new Error(`${v.reason}: ${v.message}`);
    return v;
  };

  test("$__timeFilter(col) → (col BETWEEN $1 AND $2)", () => {
    expect(ok("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)")).toEqual({
      ok: true,
      sql: "SELECT count(*) FROM http_requests WHERE (ts BETWEEN $1 AND $2)",
      params: ["from", "to"],
    });
  });

  test("parameters are numbered by first appearance and reused", () => {
    const v = ok(
      "SELECT $__timeGroup(ts, $__interval), $__timeTo() FROM http_requests WHERE ts >= $__timeFrom() AND ts < $__timeTo() AND $__timeFilter(ts)",
    );
    expect(v.params).toEqual(["interval", "to", "from"]);
    expect(v.sql).toBe(
      "SELECT date_bin($1::interval, ts, timestamptz 'epoch'), $2 FROM http_requests WHERE ts >= $3 AND ts < $2 AND (ts BETWEEN $3 AND $2)",
    );
  });

  test.each([
    ["'5m'", "interval '5 minutes'"],
    ["'1m'", "interval '1 minute'"],
    ["'30s'", "interval '30 seconds'"],
    ["'1h'", "interval '1 hour'"],
    ["'2d'", "interval '2 days'"],
    ["'1w'", "interval '1 week'"],
    ["'15 minutes'", "interval '15 minutes'"],
  ])("$__timeGroup step %s → %s", (step, interval) => {
    const v = ok(`SELECT $__timeGroup(ts, ${step}) FROM http_requests WHERE $__timeFilter(ts)`);
    expect(v.sql).toContain(`date_bin(${interval}, ts, timestamptz 'epoch')`);
  });

  test("qualified and quoted columns stay bare, expressions are parenthesised", () => {
    expect(ok('SELECT 1 FROM http_requests r WHERE $__timeFilter(r."ts")').sql).toContain('(r."ts" BETWEEN $1 AND $2)');
    // An expression is not the time column, so it does not bound the read: another conjunct must.
    expect(ok("SELECT 1 FROM http_requests WHERE $__timeFilter(ts + interval '1 hour') AND $__timeFilter(ts)").sql).toContain(
      "((ts + interval '1 hour') BETWEEN $1 AND $2)",
    );
  });

  test("macro text inside literals, quoted identifiers and dollar quotes is left alone", () => {
    const sql = `SELECT '$__timeFrom()' AS a, 1 AS "$__timeTo()", $x$ $__interval $x$ AS c, E'\\' $__interval' AS d FROM http_requests WHERE $__timeFilter(ts)`;
    const v = ok(sql);
    expect(v.params).toEqual(["from", "to"]);
    expect(v.sql).toContain(`'$__timeFrom()' AS a, 1 AS "$__timeTo()", $x$ $__interval $x$ AS c, E'\\' $__interval' AS d`);
  });

  test("whitespace before the argument list is allowed", () => {
    expect(ok("SELECT 1 FROM http_requests WHERE $__timeFilter (ts) AND ts > $__timeFrom ( )").params).toEqual(["from", "to"]);
  });

  test("the returned SQL has no surrounding semicolons", () => {
    expect(ok(" ;SELECT name FROM services ;; \n").sql).toBe("SELECT name FROM services");
  });
});

describe("catalog resolution", () => {
  const catalog: Catalog = {
    tables: [
      { schema: "metrics", name: "samples", timeColumn: null, columns: [] },
      { schema: "public", name: "samples", timeColumn: "t", columns: [] },
      { schema: "metrics", name: "only_here", timeColumn: null, columns: [] },
    ],
  };

  test("unqualified names resolve in public first", () => {
    expect(guard.check("SELECT * FROM samples", catalog)).toMatchObject({ ok: false, reason: "time" });
    expect(guard.check("SELECT * FROM metrics.samples", catalog)).toMatchObject({ ok: true });
  });

  test("and only in public: a table of another schema is written qualified", () => {
    // The source's connection resolves a bare name through the default search_path, not the catalog.
    expect(guard.check("SELECT * FROM metrics.only_here", catalog)).toMatchObject({ ok: true });
    const bare = guard.check("SELECT * FROM only_here", catalog);
    expect(bare).toMatchObject({ ok: false, reason: "catalog" });
    if (!bare.ok) expect(bare.message).toContain("metrics.only_here");
    expect(guard.check("SELECT * FROM public.only_here", catalog)).toMatchObject({ ok: false, reason: "catalog" });
  });

  test("a table added to the same catalog object is seen (no stale index)", () => {
    const c: Catalog = { tables: [] };
    expect(guard.check("SELECT * FROM added", c)).toMatchObject({ reason: "catalog" });
    c.tables.push({ schema: "public", name: "added", timeColumn: null, columns: [] });
    expect(guard.check("SELECT * FROM added", c)).toMatchObject({ ok: true });
  });

  test("an empty catalog refuses every table but not a table-less query", () => {
    expect(guard.check("SELECT * FROM samples", { tables: [] })).toMatchObject({ reason: "catalog" });
    expect(guard.check("SELECT 1", { tables: [] })).toMatchObject({ ok: true });
  });
});

describe("options", () => {
  test("extraFunctions extends the allowlist, also schema-qualified", async () => {
    const g = createGuard({ extraFunctions: ["Percentile_Approx", "timescaledb_experimental.time_bucket_ng"] });
    expect(g.check("SELECT percentile_approx(0.5, 1)", DEMO_CATALOG)).toMatchObject({ ok: true });
    expect(g.check("SELECT timescaledb_experimental.time_bucket_ng('1 day', now())", DEMO_CATALOG)).toMatchObject({
      ok: true,
    });
    expect(g.check("SELECT other.time_bucket_ng('1 day', now())", DEMO_CATALOG)).toMatchObject({ reason: "function" });
    expect(guard.check("SELECT percentile_approx(0.5, 1)", DEMO_CATALOG)).toMatchObject({ reason: "function" });
  });

  test("extraFunctions also opens SQL-syntax functions by their name", () => {
    const g = createGuard({ extraFunctions: ["json_object"] });
    expect(g.check("SELECT json_object('a': 1)", DEMO_CATALOG)).toMatchObject({ ok: true });
  });

  test("extraTypes extends the cast allowlist, never with a type that reads the catalogs", () => {
    const g = createGuard({ extraTypes: ["inet", "regclass"], cacheSize: 0 });
    expect(g.check("SELECT '10.0.0.1'::inet, '{10.0.0.1}'::inet[]", DEMO_CATALOG)).toMatchObject({ ok: true });
    expect(guard.check("SELECT '10.0.0.1'::inet", DEMO_CATALOG)).toMatchObject({ reason: "function" });
    expect(g.check("SELECT 'pg_authid'::regclass", DEMO_CATALOG)).toMatchObject({ reason: "catalog" });
  });

  test("maxLength gives structure", () => {
    const g = createGuard({ maxLength: 20 });
    expect(g.check("SELECT 1", DEMO_CATALOG)).toMatchObject({ ok: true });
    expect(g.check("SELECT 1 + 1 + 1 + 1 + 1", DEMO_CATALOG)).toMatchObject({
      ok: false,
      reason: "structure",
      message: expect.stringContaining("SQL_MAX_LENGTH"),
    });
  });

  test("guardOptionsFromConfig reads the three variables", () => {
    expect(guardOptionsFromConfig({ SQL_GUARD_EXTRA_FUNCTIONS: "a, B c", SQL_GUARD_EXTRA_TYPES: "Inet", SQL_MAX_LENGTH: 99 })).toEqual({
      extraFunctions: ["a", "b", "c"],
      extraTypes: ["inet"],
      maxLength: 99,
    });
  });
});

describe("verdict cache", () => {
  test("a repeat with the same catalog version returns the cached verdict object", () => {
    const g = createGuard({ cacheSize: 10 });
    const sql = "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)";
    const first = g.check(sql, DEMO_CATALOG, "src1:v1");
    expect(g.check(sql, DEMO_CATALOG, "src1:v1")).toBe(first);
    // A new version is a new verdict, computed against the catalog passed now.
    const changed = g.check(sql, { tables: [] }, "src1:v2");
    expect(changed).toMatchObject({ ok: false, reason: "catalog" });
    expect(g.check(sql, DEMO_CATALOG, "src1:v1")).toBe(first);
  });

  test("without a catalog version nothing is cached", () => {
    const g = createGuard({ cacheSize: 10 });
    const sql = "SELECT name FROM services";
    const a = g.check(sql, DEMO_CATALOG);
    expect(g.check(sql, DEMO_CATALOG)).not.toBe(a);
    expect(g.check(sql, { tables: [] })).toMatchObject({ reason: "catalog" });
  });

  test("the cache is bounded: the least recently used verdict is evicted", () => {
    const g = createGuard({ cacheSize: 2 });
    const a = g.check("SELECT 1", DEMO_CATALOG, "v");
    const b = g.check("SELECT 2", DEMO_CATALOG, "v");
    expect(g.check("SELECT 1", DEMO_CATALOG, "v")).toBe(a); // a is now the most recent
    g.check("SELECT 3", DEMO_CATALOG, "v"); // evicts b
    expect(g.check("SELECT 1", DEMO_CATALOG, "v")).toBe(a);
    expect(g.check("SELECT 2", DEMO_CATALOG, "v")).not.toBe(b);
  });

  test("cached verdicts cannot be changed by a caller", () => {
    const g = createGuard();
    const v = g.check("SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)", DEMO_CATALOG, "v");
    expect(Object.isFrozen(v)).toBe(true);
    if (v.ok) expect(Object.isFrozen(v.params)).toBe(true);
  });
});

describe("intervalFor", () => {
  const H = 3_600_000;
  test.each([
    [0, H, 720, "10 seconds"],
    [1_000, H - 1_000, 720, "5 seconds"],
    [0, H, 60, "2 minutes"],
    [0, 6 * H, 720, "1 minute"],
    [0, 24 * H, 720, "5 minutes"],
    [0, 24 * H, 100, "15 minutes"],
    [0, 7 * 24 * H, 720, "15 minutes"],
    [0, 30 * 24 * H, 720, "2 hours"],
    [0, 365 * 24 * H, 720, "1 day"],
    [0, 5 * 365 * 24 * H, 10, "183 days"],
  ])("[%i, %i] with %i points → %s", (from, to, points, expected) => {
    expect(intervalFor(from, to, points)).toBe(expected);
  });

  test("never more buckets than maxPoints, for any range alignment", () => {
    const units: Record<string, number> = {
      second: 1e3,
      seconds: 1e3,
      minute: 6e4,
      minutes: 6e4,
      hour: 36e5,
      hours: 36e5,
      day: 864e5,
      days: 864e5,
    };
    for (let i = 0; i < 2000; i++) {
      const from = 1_700_000_000_000 + ((i * 7919) % 86_400_000);
      const to = from + ((i * 104_729) % (90 * 86_400_000)) + 1;
      const points = 1 + (i % 800);
      const [count, unit] = intervalFor(from, to, points).split(" ");
      expect(bucketCount(from, to, Number(count) * units[unit])).toBeLessThanOrEqual(points);
    }
  });

  test("bad input degrades to a valid step", () => {
    expect(intervalFor(Number.NaN, 0, 0)).toBe("1 second");
    expect(intervalFor(10_000, 0, 720)).toBe("1 second");
    expect(intervalFor(0, 1e9, Number.POSITIVE_INFINITY)).toBe("1 second");
  });
});
