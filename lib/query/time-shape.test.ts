import { beforeAll, describe, expect, test } from "vitest";
import { loadGuardParser } from "../sql-guard/index.ts";
import { intervalMs, shapeOf } from "./time-shape.ts";

beforeAll(() => loadGuardParser());

describe("shapeOf", () => {
  test.each([
    [
      "$__timeGroup with $__interval",
      "SELECT date_bin($1::interval, ts, timestamptz 'epoch') AS time, host, avg(v) FROM s WHERE (ts BETWEEN $2 AND $3) GROUP BY 1, 2",
      ["interval", "from", "to"],
      { position: 1, step: { param: 1 }, originMs: 0 },
    ],
    [
      "a fixed date_bin",
      "SELECT host, date_bin(interval '1 minute', ts, timestamptz 'epoch') AS t, avg(v) FROM s GROUP BY 1, 2",
      [],
      { position: 2, step: { ms: 60_000 }, originMs: 0 },
    ],
    [
      "time_bucket",
      "SELECT time_bucket('5 minutes', ts) AS t, max(v) FROM s GROUP BY 1",
      [],
      { position: 1, step: { ms: 300_000 }, originMs: Date.UTC(2000, 0, 3) },
    ],
    [
      "date_trunc",
      "SELECT date_trunc('hour', ts) AS t, count(*) FROM s GROUP BY 1",
      [],
      { position: 1, step: { ms: 3_600_000 }, originMs: 0 },
    ],
    [
      "raw points ordered by the filtered column",
      "SELECT ts, v FROM s WHERE (ts BETWEEN $1 AND $2) ORDER BY ts",
      ["from", "to"],
      { position: 1, step: null },
    ],
    ["a * before the bucket", "SELECT *, date_trunc('minute', ts) FROM s", [], { position: null, step: { ms: 60_000 } }],
  ] as const)("%s", (_name, sql, params, expected) => {
    expect(shapeOf(sql, params)).toMatchObject({ ...expected, timeKeyed: true });
  });

  test.each([
    ["ordered by a value", "SELECT ts, v FROM s WHERE (ts BETWEEN $1 AND $2) ORDER BY v", ["from", "to"]],
    ["ordered by time descending", "SELECT ts, v FROM s WHERE (ts BETWEEN $1 AND $2) ORDER BY ts DESC", ["from", "to"]],
    ["no time at all", "SELECT host, count(*) FROM s GROUP BY 1", []],
    ["a month bucket (no fixed width)", "SELECT date_trunc('month', ts), count(*) FROM s GROUP BY 1", []],
    ["a union", "SELECT date_trunc('hour', ts) FROM s UNION ALL SELECT date_trunc('hour', ts) FROM s", []],
  ] as const)("%s has no shape", (_name, sql, params) => {
    expect(shapeOf(sql, params)).toBeNull();
  });
});

test.each([
  ["1 minute", 60_000],
  ["5 minutes", 300_000],
  ["1 hour 30 minutes", 5_400_000],
  ["00:05:00", 300_000],
  ["2 days", 172_800_000],
  ["1 month", null],
  ["soon", null],
  ["", null],
])("intervalMs(%j)", (text, ms) => {
  expect(intervalMs(text)).toBe(ms);
});
