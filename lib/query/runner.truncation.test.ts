import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Catalog } from "../catalog/types.ts";
import type { QueryRunner } from "./runner.ts";
import type { MetricsFixture } from "./testing/metrics-db.ts";
import { type RunnerFixture, createRunnerFixture } from "./testing/runner-fixture.ts";

// What a result says it is, on a real PostgreSQL: 24 h of per-minute samples for 4 hosts (5,760 rows), with a
// 10-minute hole at 12:00, against MAX_QUERY_ROWS 5000 and MAX_WINDOW_POINTS 720.

let db: RunnerFixture;
let fx: MetricsFixture;
let runner: QueryRunner;

const catalog: Catalog = {
  tables: [
    {
      schema: "public",
      name: "samples",
      timeColumn: "ts",
      columns: [
        { name: "ts", type: "timestamp with time zone" },
        { name: "host", type: "text" },
        { name: "value", type: "double precision" },
      ],
    },
  ],
};

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;
const HOLE = T0 + 12 * 3_600_000;
/** The wall clock of the runner: 30 s into the range's last minute. */
const WALL = T0 + DAY - 60_000 + 30_000;
const range = { fromMs: T0, toMs: WALL };

beforeAll(async () => {
  db = await createRunnerFixture({
    database: "metrics",
    setup: async (m) => {
      await m.admin(`
        CREATE TABLE samples (ts timestamptz NOT NULL, host text NOT NULL, value double precision NOT NULL);
        INSERT INTO samples
          SELECT timestamptz '2026-01-01T00:00:00Z' + make_interval(mins => g), 'web-' || h, g
          FROM generate_series(0, 1439) g, generate_series(0, 3) h
          WHERE NOT (g >= 720 AND g < 730);
      `);
    },
    role: "pb_trunc",
    grants: ["GRANT USAGE ON SCHEMA public TO %I", "GRANT SELECT ON samples TO %I"],
  });
  fx = db.fx;
  runner = db.runner({ env: { QUERY_TIMEOUT_SECONDS: "5" }, wallNow: () => WALL });
});

afterAll(async () => {
  await db?.close();
});

describe("MAX_QUERY_ROWS keeps the newest rows of a time-keyed statement", () => {
  test("1-minute buckets per host over 24 h: 5,000 newest rows kept, in time order, and the frame says so", async () => {
    const r = await runner.run({
      source: fx.source({ catalog }),
      sql: `SELECT $__timeGroup(ts, '1m') AS time, host, avg(value) AS v FROM samples
            WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1, 2`,
      range,
    });
    expect(r.rows).toHaveLength(5000);
    expect(r.truncated).toBe(true);
    expect(r.truncation).toMatchObject({ limit: "MAX_QUERY_ROWS", kept: 5000, end: "newest" });
    expect(r.truncation?.message).toContain("newest 5,000");
    // The newest bucket is the last row; rows ascend by time.
    const times = r.rows.map((row) => row[0] as number);
    expect(Math.max(...times)).toBe(T0 + DAY - 60_000);
    expect(times.at(-1)).toBe(T0 + DAY - 60_000);
    expect(times.every((t, i) => i === 0 || t >= times[i - 1])).toBe(true);
    // 5,720 rows in the range (10 missing minutes x 4 hosts): the oldest 720, the first 180 minutes, are cut.
    expect(times[0]).toBe(T0 + 180 * 60_000);
    expect(r.rows.filter((row) => row[0] === times[0])).toHaveLength(4);
  });

  test("raw points ordered by their filtered time column are cut at the oldest end too", async () => {
    const r = await runner.run({
      source: fx.source({ catalog }),
      sql: "SELECT ts, host, value FROM samples WHERE $__timeFilter(ts) ORDER BY ts",
      range,
    });
    expect(r.truncation).toMatchObject({ limit: "MAX_QUERY_ROWS", kept: 5000, end: "newest" });
    expect(r.rows.at(-1)?.[0]).toBe(T0 + DAY - 60_000);
  });

  test("a statement with no time order keeps its first rows and says which end", async () => {
    const r = await runner.run({
      source: fx.source({ catalog }),
      sql: "SELECT host, value FROM samples WHERE $__timeFilter(ts) ORDER BY value DESC, host",
      range,
    });
    expect(r.truncation).toMatchObject({ limit: "MAX_QUERY_ROWS", kept: 5000, end: "first" });
    expect(r.rows[0]).toEqual(["web-0", 1439]);
  });

  test("a result under the cap is not marked", async () => {
    const r = await runner.run({
      source: fx.source({ catalog }),
      sql: "SELECT $__timeGroup(ts, '1h') AS time, avg(value) FROM samples WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
      range,
    });
    expect(r.truncated).toBe(false);
    expect(r.truncation).toBeUndefined();
    expect(r.rows).toHaveLength(24);
    expect(r.rows[0][0]).toBe(T0);
  });
});

describe("bucket step, partial bucket and points per series", () => {
  test("a fixed 1-minute bucket over 24 h: the step, the still-filling minute and the points warning", async () => {
    const r = await runner.run({
      source: fx.source({ catalog }),
      sql: "SELECT $__timeGroup(ts, '1m') AS time, avg(value) AS v FROM samples WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
      range: { fromMs: T0, toMs: T0 + DAY - 60_000 + 30_000 },
    });
    expect(r.stepMs).toBe(60_000);
    expect(r.partialFrom).toBe(T0 + DAY - 60_000);
    expect(r.pointsWarning).toMatchObject({ pointsPerSeries: 1440, kept: 720, stepMs: 60_000 });
    expect(r.pointsWarning?.message).toContain("1,440 points per series over");
    expect(r.pointsWarning?.message).toContain("720 are kept");
    // The hole: the step tells the browser that ten buckets are missing.
    const times = r.rows.map((row) => row[0] as number);
    const gaps = times.filter((t, i) => i > 0 && t - times[i - 1] > (r.stepMs ?? 0));
    expect(gaps).toEqual([HOLE + 10 * 60_000]);
  });

  test("$__interval: the step is the interval bound for the range; no warning", async () => {
    const r = await runner.run({
      source: fx.source({ catalog }),
      sql: "SELECT $__timeGroup(ts, $__interval) AS time, avg(value) AS v FROM samples WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
      range,
    });
    expect(r.stepMs).toBe(2 * 60_000);
    expect(r.pointsWarning).toBeUndefined();
    expect(r.partialFrom).toBe(T0 + DAY - 2 * 60_000);
  });

  test.each([
    ["date_bin", "date_bin(interval '5 minutes', ts, timestamptz 'epoch')", 300_000],
    ["date_trunc", "date_trunc('hour', ts)", 3_600_000],
  ])("%s written by hand gives its step", async (_name, expr, step) => {
    const r = await runner.run({
      source: fx.source({ catalog }),
      sql: `SELECT ${expr} AS time, max(value) FROM samples WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
      range,
    });
    expect(r.stepMs).toBe(step);
    expect(r.partialFrom).toBe(Math.floor(WALL / step) * step);
  });

  test("a range that ended in the past has no partial bucket", async () => {
    const r = await runner.run({
      source: fx.source({ catalog }),
      sql: "SELECT $__timeGroup(ts, '1h') AS time, avg(value) FROM samples WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
      range: { fromMs: T0, toMs: T0 + 6 * 3_600_000 },
    });
    expect(r.stepMs).toBe(3_600_000);
    expect(r.partialFrom).toBeUndefined();
  });
});
