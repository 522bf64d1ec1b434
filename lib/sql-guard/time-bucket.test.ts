import { beforeAll, describe, expect, test } from "vitest";
import { loadGuardParser, parseTree } from "./index.ts";
import { bucketStart, nameParts, timeBucketOf } from "./time-bucket.ts";
import type { MacroParam } from "./verdict.ts";

beforeAll(() => loadGuardParser());

/** The first select-list expression of `SELECT <expr> FROM t`, as the parser gives it. */
function expr(sql: string): unknown {
  const tree = parseTree(`SELECT ${sql} FROM t`) as {
    stmts: { stmt: { SelectStmt: { targetList: { ResTarget: { val: unknown } }[] } } }[];
  };
  return tree.stmts[0].stmt.SelectStmt.targetList[0].ResTarget.val;
}

const column = (node: unknown) => nameParts((node as { ColumnRef?: { fields?: unknown } }).ColumnRef?.fields).join(".");

describe("timeBucketOf", () => {
  test.each([
    // [expression, params, step, originMs, exact]
    ["pg_catalog.date_bin($1::interval, ts, timestamptz 'epoch')", ["interval"], { param: 1 }, 0, true],
    ["date_bin('5 minutes', ts, timestamptz 'epoch')", [], { ms: 300_000 }, 0, true],
    ["date_bin(interval '1 minute', ts, '2000-01-01 00:00:00+00')", [], { ms: 60_000 }, Date.UTC(2000, 0, 1), true],
    ["date_bin('1 minute'::text::interval, ts, timestamptz 'epoch')", [], { ms: 60_000 }, 0, true],
    ["date_bin('1 minute', ts, timestamptz '2000-01-01 00:00:00+05:30')", [], { ms: 60_000 }, Date.UTC(1999, 11, 31, 18, 30), false],
    ["date_bin('1.5 seconds', ts, timestamptz 'epoch')", [], { ms: 1_500 }, 0, true],
    ["date_bin('0.5 ms', ts, timestamptz 'epoch')", [], { ms: 0.5 }, 0, false],
    ["date_bin('14 days', ts, timestamptz 'epoch')", [], { ms: 14 * 86_400_000 }, 0, false],
    ["time_bucket('5 minutes', ts)", [], { ms: 300_000 }, Date.UTC(2000, 0, 3), true],
    ["time_bucket($1, ts)", ["interval"], { param: 1 }, Date.UTC(2000, 0, 3), true],
    ["time_bucket('5 minutes', ts, 'Europe/Paris')", [], { ms: 300_000 }, Date.UTC(2000, 0, 3), false],
    ["date_trunc('second', ts)", [], { ms: 1_000 }, 0, true],
    ["date_trunc('MINUTE', ts)", [], { ms: 60_000 }, 0, true],
    ["pg_catalog.date_trunc('minute', ts)", [], { ms: 60_000 }, 0, true],
    ["date_trunc('hour', ts)", [], { ms: 3_600_000 }, 0, false],
    ["date_trunc('day', ts)", [], { ms: 86_400_000 }, 0, false],
    ["date_trunc('week', ts)", [], { ms: 604_800_000 }, Date.UTC(1970, 0, 5), false],
  ] as [string, MacroParam[], unknown, number, boolean][])("%s", (sql, params, step, originMs, exact) => {
    const b = timeBucketOf(expr(sql), params);
    expect(b).toMatchObject({ step, originMs, exact });
    expect(column(b?.column)).toBe("ts");
  });

  test.each([
    ["not a bucket", "lower(ts)", []],
    ["a month (no fixed width)", "date_trunc('month', ts)", []],
    ["a month step", "date_bin('1 month', ts, timestamptz 'epoch')", []],
    ["a step that is a variable, not $__interval", "date_bin($1, ts, timestamptz 'epoch')", [{ variable: "v", array: false }]],
    ["an origin that is no instant", "date_bin('1 minute', ts, 'soon')", []],
    ["a schema other than pg_catalog", "public.date_bin('1 minute', ts, timestamptz 'epoch')", []],
    ["a qualified time_bucket", "public.time_bucket('1 minute', ts)", []],
    ["a window call", "date_trunc('minute', ts) OVER ()", []],
    ["date_bin without an origin", "date_bin('1 minute', ts)", []],
  ] as [string, string, MacroParam[]][])("no bucket: %s", (_name, sql, params) => {
    expect(timeBucketOf(expr(sql), params)).toBeNull();
  });
});

test.each([
  [125_000, 60_000, 0, 120_000],
  [-1, 60_000, 0, -60_000],
  [Date.UTC(2000, 0, 3, 0, 7), 300_000, Date.UTC(2000, 0, 3), Date.UTC(2000, 0, 3, 0, 5)],
])("bucketStart(%d, %d, %d) = %d", (t, step, origin, start) => {
  expect(bucketStart(t, step, origin)).toBe(start);
});
