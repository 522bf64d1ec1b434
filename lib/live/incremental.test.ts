import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { createGuard, loadGuardParser } from "../sql-guard/index.ts";
import { intervalFor } from "../sql-guard/interval.ts";
import type { MacroParam } from "../sql-guard/verdict.ts";
import { createDatabase } from "../testing/pg.ts";
import type { Cell } from "./frames.ts";
import { applyPanelDelta } from "./frames.ts";
import { bucketStart, planIncremental, rowsOfBuckets, splice, tickWindows } from "./incremental.ts";

let parse: (sql: string) => unknown;
const guard = createGuard({ cacheSize: 0 });

beforeAll(async () => {
  await loadGuardParser();
  const mod = await import("libpg-query");
  await mod.loadModule();
  parse = mod.parseSync;
});

function expanded(sql: string): { sql: string; params: MacroParam[] } {
  const v = guard.check(sql, DEMO_CATALOG);
  if (!v.ok) throw new Error(`guard refused ${sql}: ${v.message}`);
  return { sql: v.sql, params: v.params };
}

function plan(sql: string) {
  const e = expanded(sql);
  return planIncremental(e.sql, e.params, DEMO_CATALOG, parse);
}

describe("which statements tick incrementally", () => {
  it.each([
    [
      "$__timeGroup with a literal step",
      `SELECT $__timeGroup(ts, '1m') AS time, service, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1`,
      0,
    ],
    [
      "$__timeGroup with $__interval",
      `SELECT $__timeGroup(time, $__interval) AS t, host, avg(cpu) FROM host_metrics WHERE $__timeFilter(time) GROUP BY 1, 2 ORDER BY 1`,
      0,
    ],
    [
      "date_bin by hand, grouped by expression",
      `SELECT service, date_bin('5 minutes', ts, timestamptz 'epoch') AS b, max(latency_ms) FROM http_requests WHERE $__timeFilter(ts) GROUP BY date_bin('5 minutes', ts, timestamptz 'epoch'), service`,
      1,
    ],
    [
      "date_trunc to the minute, grouped by alias",
      `SELECT date_trunc('minute', ts) AS minute, count(*) FROM http_requests WHERE $__timeFilter(ts) AND status >= 500 GROUP BY minute ORDER BY minute DESC`,
      0,
    ],
    [
      "lower and upper bound by hand",
      `SELECT $__timeGroup(ts, '1m') AS time, count(*) FROM http_requests WHERE ts >= $__timeFrom() AND ts < $__timeTo() GROUP BY 1`,
      0,
    ],
    [
      "a filtered aggregate and HAVING",
      `SELECT $__timeGroup(ts, '1m') AS time, count(*) FILTER (WHERE status >= 500) AS errors FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 HAVING count(*) > 0 ORDER BY 1`,
      0,
    ],
    [
      "percentile within the bucket",
      `SELECT $__timeGroup(ts, $__interval) AS time, percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95 FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
      0,
    ],
  ])("ticks incrementally: %s", (_name, sql, column) => {
    const p = plan(sql);
    expect(p).toMatchObject({ ok: true, bucketColumn: column });
  });

  it.each([
    [
      "a window function",
      `SELECT $__timeGroup(ts, '1m') AS time, count(*) - lag(count(*)) OVER (ORDER BY 1) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1`,
    ],
    ["LIMIT", `SELECT $__timeGroup(ts, '1m') AS time, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1 LIMIT 10`],
    [
      "ORDER BY a value",
      `SELECT $__timeGroup(ts, '1m') AS time, count(*) AS n FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY n DESC`,
    ],
    ["an aggregate over the whole range", `SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)`],
    ["grouped by something else than a bucket", `SELECT route, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY route`],
    [
      "a CTE reading the range",
      `WITH m AS (SELECT $__timeGroup(ts, '1m') AS t, count(*) AS n FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1) SELECT t, n FROM m`,
    ],
    [
      "a sub-query",
      `SELECT $__timeGroup(ts, '1m') AS time, count(*) FROM http_requests WHERE $__timeFilter(ts) AND service IN (SELECT name FROM services) GROUP BY 1`,
    ],
    ["DISTINCT", `SELECT DISTINCT $__timeGroup(ts, '1m') AS time, service FROM http_requests WHERE $__timeFilter(ts)`],
    [
      "a set operation",
      `SELECT $__timeGroup(ts, '1m') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 UNION ALL SELECT $__timeGroup(time, '1m'), count(*) FROM host_metrics WHERE $__timeFilter(time) GROUP BY 1`,
    ],
    [
      "a join",
      `SELECT $__timeGroup(r.ts, '1m') AS t, count(*) FROM http_requests r JOIN services s ON s.name = r.service WHERE $__timeFilter(r.ts) GROUP BY 1`,
    ],
    [
      "the range start used again",
      `SELECT $__timeGroup(ts, '1m') AS t, count(*), min(ts) - $__timeFrom() FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1`,
    ],
    [
      "date_trunc to the hour (zone-dependent)",
      `SELECT date_trunc('hour', ts) AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1`,
    ],
    [
      "a bucket over another column",
      `SELECT date_bin('1 minute', ts - interval '30 seconds', timestamptz 'epoch') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1`,
    ],
    [
      "grouping sets",
      `SELECT $__timeGroup(ts, '1m') AS t, service, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY ROLLUP (1, 2)`,
    ],
    [
      "no time filter (a plain lower bound widened)",
      `SELECT $__timeGroup(ts, '1m') AS t, count(*) FROM http_requests WHERE ts >= $__timeFrom() - interval '1 minute' GROUP BY 1`,
    ],
    ["rows, not buckets", `SELECT ts, latency_ms FROM http_requests WHERE $__timeFilter(ts) ORDER BY ts`],
  ])("runs the full query: %s", (_name, sql) => {
    expect(plan(sql).ok).toBe(false);
  });
});

describe("windows and splicing", () => {
  it("re-reads the cut first bucket and the buckets that may still change", () => {
    const w = tickWindows({ fromMs: 90_000, toMs: 600_500 }, 595_000, 60_000, 0, 10_000);
    expect(w).toEqual({
      first: { fromMs: 90_000, toMs: 120_000, bucket: 60_000 },
      newest: { fromMs: 540_000, toMs: 600_500, fromBucket: 540_000 },
    });
  });

  it("runs the full query when the windows would meet", () => {
    expect(tickWindows({ fromMs: 0, toMs: 100_000 }, 100_000, 60_000, 0, 10_000)).toBeNull();
  });

  it("splices, drops what slid out and lists the changed buckets", () => {
    const last: Cell[][] = [
      [0, "a", 1],
      [60_000, "a", 2],
      [120_000, "a", 3],
      [180_000, "a", 4],
    ];
    const w = tickWindows({ fromMs: 70_000, toMs: 200_000 }, 190_000, 60_000, 0, 0);
    if (!w) throw new Error("expected windows");
    const { rows, changed } = splice(
      last,
      [[60_000, "a", 1]],
      [
        [180_000, "a", 5],
        [180_000, "b", 1],
      ],
      w,
      0,
    );
    expect(rows).toEqual([
      [60_000, "a", 1],
      [120_000, "a", 3],
      [180_000, "a", 5],
      [180_000, "b", 1],
    ]);
    expect(changed).toEqual([60_000, 180_000]);
    const held = applyPanelDelta(
      { columns: [], rows: last, truncated: false, elapsedMs: 0 },
      { rangeStart: w.first.bucket, bucketColumn: 0, buckets: changed, rows: rowsOfBuckets(rows, changed, 0), elapsedMs: 1 },
    );
    expect(held.rows).toEqual(rows);
  });
});

describe("incremental ticks equal full re-queries (real PostgreSQL)", () => {
  let client: pg.Client;
  const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

  beforeAll(async () => {
    const db = await createDatabase("incr");
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query("SET TIME ZONE 'Asia/Kolkata'");
    await client.query(
      "CREATE TABLE http_requests (ts timestamptz NOT NULL, service text NOT NULL, route text NOT NULL, status integer NOT NULL, latency_ms double precision NOT NULL)",
    );
  });
  afterAll(async () => {
    await client?.end();
  });

  async function query(
    sql: string,
    params: readonly MacroParam[],
    range: { fromMs: number; toMs: number },
    window = range,
  ): Promise<Cell[][]> {
    const values = params.map((p) =>
      p === "from"
        ? new Date(window.fromMs).toISOString()
        : p === "to"
          ? new Date(window.toMs).toISOString()
          : intervalFor(range.fromMs, range.toMs, 720),
    );
    const r = await client.query({ text: sql, values, rowMode: "array" });
    return r.rows.map((row: unknown[]) => row.map((c) => (c instanceof Date ? c.getTime() : (c as Cell))));
  }

  const canonical = (rows: readonly Cell[][]) => rows.map((r) => JSON.stringify(r)).sort();

  const statements = [
    `SELECT $__timeGroup(ts, '10s') AS time, service, count(*) AS n, sum(latency_ms) AS total FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1`,
    `SELECT $__timeGroup(ts, '1m') AS time, max(latency_ms) AS worst FROM http_requests WHERE $__timeFilter(ts) AND status >= 500 GROUP BY 1 ORDER BY 1`,
    `SELECT date_trunc('minute', ts) AS minute, service, count(*) FROM http_requests WHERE ts >= $__timeFrom() AND ts <= $__timeTo() GROUP BY 1, 2`,
    `SELECT $__timeGroup(ts, $__interval) AS time, count(*) AS n FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
  ];

  it("at every tick, the spliced result and the browser's merged copy equal the full query", async () => {
    let incrementalTicks = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...statements),
        fc.integer({ min: 2, max: 20 }).map((m) => m * 60_000),
        fc.array(
          fc.record({
            advanceMs: fc.integer({ min: 1_000, max: 45_000 }),
            inserts: fc.array(
              fc.record({
                agoMs: fc.integer({ min: 0, max: 9_000 }),
                service: fc.constantFrom("api", "web"),
                status: fc.constantFrom(200, 500),
                latency: fc.integer({ min: 1, max: 900 }),
              }),
              { maxLength: 8 },
            ),
          }),
          { minLength: 3, maxLength: 10 },
        ),
        async (sql, rangeMs, ticks) => {
          await client.query("TRUNCATE http_requests");
          // History before the first tick, so the first bucket and the middle hold rows.
          await client.query(
            "INSERT INTO http_requests SELECT to_timestamp(($1::float8 - g * 7000) / 1000), CASE WHEN g % 2 = 0 THEN 'api' ELSE 'web' END, '/', CASE WHEN g % 5 = 0 THEN 500 ELSE 200 END, g % 97 FROM generate_series(0, $2::int) g",
            [T0, Math.ceil(rangeMs / 7000) + 20],
          );
          const e = expanded(sql);
          const p = planIncremental(e.sql, e.params, DEMO_CATALOG, parse);
          if (!p.ok) throw new Error(p.reason);
          const lateMs = 10_000;
          let now = T0;
          let last = await query(e.sql, e.params, { fromMs: now - rangeMs, toMs: now });
          let held = last;
          let lastTo = now;
          let lastStepMs = p.step.kind === "fixed" ? p.step.stepMs : intervalMsFor({ fromMs: now - rangeMs, toMs: now });
          for (const tick of ticks) {
            now += tick.advanceMs;
            for (const ins of tick.inserts) {
              await client.query("INSERT INTO http_requests VALUES (to_timestamp($1::float8 / 1000), $2, '/', $3, $4)", [
                Math.max(now - ins.agoMs, lastTo - lateMs + 1),
                ins.service,
                ins.status,
                ins.latency,
              ]);
            }
            const range = { fromMs: now - rangeMs, toMs: now };
            const full = await query(e.sql, e.params, range);
            const stepMs = p.step.kind === "fixed" ? p.step.stepMs : intervalMsFor(range);
            // $__interval can change with the range's alignment: a new step is a full query.
            const w = stepMs === lastStepMs ? tickWindows(range, lastTo, stepMs, p.step.originMs, lateMs) : null;
            lastStepMs = stepMs;
            if (w === null) {
              last = full;
              held = full;
            } else {
              const first = await query(e.sql, e.params, range, w.first);
              const newest = await query(e.sql, e.params, range, w.newest);
              const { rows, changed } = splice(last, first, newest, w, p.bucketColumn);
              expect(canonical(rows)).toEqual(canonical(full));
              held = applyPanelDelta(
                { columns: [], rows: held, truncated: false, elapsedMs: 0 },
                {
                  rangeStart: w.first.bucket,
                  bucketColumn: p.bucketColumn,
                  buckets: changed,
                  rows: rowsOfBuckets(rows, changed, p.bucketColumn),
                  elapsedMs: 1,
                },
              ).rows;
              expect(canonical(held)).toEqual(canonical(full));
              last = rows;
              incrementalTicks++;
            }
            lastTo = now;
          }
        },
      ),
      { numRuns: 25 },
    );
    // The property held on incremental ticks, not only on full re-queries.
    expect(incrementalTicks).toBeGreaterThan(25);
  });

  function intervalMsFor(range: { fromMs: number; toMs: number }): number {
    const text = intervalFor(range.fromMs, range.toMs, 720);
    const [n, unit] = text.split(" ");
    const per: Record<string, number> = {
      second: 1_000,
      seconds: 1_000,
      minute: 60_000,
      minutes: 60_000,
      hour: 3_600_000,
      hours: 3_600_000,
      day: 86_400_000,
      days: 86_400_000,
    };
    return Number(n) * per[unit];
  }

  it("bucket starts follow date_bin's", async () => {
    for (const t of [T0 + 1, T0 + 59_999, T0 - 1]) {
      const r = await client.query(
        "SELECT extract(epoch FROM date_bin('1 minute', to_timestamp($1::float8 / 1000), timestamptz 'epoch')) * 1000 AS b",
        [t],
      );
      expect(Number(r.rows[0].b)).toBe(bucketStart(t, 60_000, 0));
    }
  });
});
