import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Catalog } from "../catalog/types.ts";
import { rejection } from "../testing/rejection.ts";
import type { QueryRunner } from "./runner.ts";
import type { MetricsFixture } from "./testing/metrics-db.ts";
import { type RunnerFixture, createRunnerFixture } from "./testing/runner-fixture.ts";

let db: RunnerFixture;
let fx: MetricsFixture;
let runner: QueryRunner;
let registry: Registry;
let readerRole: string;

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
    { schema: "public", name: "hosts", timeColumn: null, columns: [{ name: "host", type: "text" }] },
  ],
};

const T0 = Date.UTC(2026, 0, 1);
const range = { fromMs: T0, toMs: T0 + 60 * 60_000 };

beforeAll(async () => {
  db = await createRunnerFixture({
    database: "metrics",
    setup: async (m) => {
      await m.admin(`
        CREATE TABLE samples (ts timestamptz NOT NULL, host text NOT NULL, value double precision NOT NULL);
        INSERT INTO samples SELECT timestamptz '2026-01-01T00:00:00Z' + make_interval(mins => g), 'web-' || (g % 3), g
          FROM generate_series(0, 299) g;
        CREATE TABLE hosts (host text);
        INSERT INTO hosts VALUES ('web-0'), ('web-1'), ('web-2');
        CREATE TABLE secret_stuff (x text);
        REVOKE ALL ON SCHEMA public FROM PUBLIC;
      `);
    },
    role: "pb_guarded",
    grants: ["GRANT USAGE ON SCHEMA public TO %I", "GRANT SELECT ON samples, hosts TO %I"],
  });
  fx = db.fx;
  readerRole = db.reader;
  registry = new Registry();
  runner = db.runner({ env: { QUERY_TIMEOUT_SECONDS: "2" }, registry });
});

afterAll(async () => {
  await db?.close();
});

describe("guarded queries on a real guard", () => {
  test("$__timeFilter binds the range; timestamps come back as epoch ms", async () => {
    const source = fx.source({ catalog });
    const r = await runner.run({
      source,
      sql: "SELECT ts, value FROM samples WHERE $__timeFilter(ts) ORDER BY ts",
      range,
    });
    expect(r.rows).toHaveLength(61);
    expect(r.rows[0]).toEqual([T0, 0]);
    expect(r.rows[60]).toEqual([T0 + 60 * 60_000, 60]);
    expect(r.columns).toEqual([
      { name: "ts", type: "timestamptz" },
      { name: "value", type: "float8" },
    ]);
  });

  test("$__timeGroup with $__interval buckets by the interval for the range", async () => {
    const source = fx.source({ catalog });
    const r = await runner.run({
      source,
      sql: `SELECT $__timeGroup(ts, $__interval) AS t, count(*) AS n FROM samples
             WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1`,
      range: { fromMs: T0, toMs: T0 + 299 * 60_000 },
    });
    // 300 minutes at MAX_WINDOW_POINTS 720 → 1 minute steps: one row per minute.
    expect(r.rows).toHaveLength(300);
    expect(r.rows[0]).toEqual([T0, 1]);
  });

  test("a table without a time column needs no time filter; $__timeFrom() works as a bound", async () => {
    const source = fx.source({ catalog });
    const hosts = await runner.run({ source, sql: "SELECT host FROM hosts ORDER BY host", range });
    expect(hosts.rows).toEqual([["web-0"], ["web-1"], ["web-2"]]);
    const r = await runner.run({
      source,
      sql: "SELECT count(*) AS n FROM samples WHERE ts >= $__timeFrom() AND ts < $__timeTo()",
      range,
    });
    expect(r.rows).toEqual([[60]]);
  });

  test.each([
    ["empty", " ; ", "empty"],
    ["comment", "SELECT 1 -- hi", "comment"],
    ["structure", "SELECT $1", "structure"],
    ["keyword", "DELETE FROM samples", "keyword"],
    ["function", "SELECT pg_sleep(10)", "function"],
    ["catalog", "SELECT * FROM secret_stuff", "catalog"],
    ["system catalog", "SELECT * FROM pg_catalog.pg_authid", "catalog"],
    ["time", "SELECT count(*) FROM samples", "time"],
  ])("%s: refused by the guard, counted, and the database never touched", async (_name, sql, reason) => {
    const source = fx.source({ catalog });
    const err = await rejection(runner.run({ source, sql, range }));
    expect(err.code).toBe("guard_rejected");
    expect(err.status).toBe(422);
    expect(err.extra).toEqual({ reason });
    expect(runner.poolStats(source.id)).toBeNull();
    expect(await registry.metrics()).toMatch(new RegExp(`svc_sql_validation_rejections_total\\{reason="${reason}"\\} [1-9]`));
  });

  test("an accepted statement is checked again once the catalog changes, and on another source", async () => {
    const sql = "SELECT count(*)::int FROM samples WHERE $__timeFilter(ts)";
    const source = fx.source({ catalog, catalogRefreshedAt: new Date(T0) });
    expect((await runner.run({ source, sql, range })).rows).toEqual([[61]]);
    expect((await runner.run({ source, sql, range })).rows).toEqual([[61]]);
    // The same source after a refresh that no longer lists the table: the earlier acceptance does not carry over.
    const hostsOnly: Catalog = { tables: catalog.tables.filter((t) => t.name === "hosts") };
    const refreshed = { ...source, catalog: hostsOnly, catalogRefreshedAt: new Date(T0 + 1) };
    expect((await rejection(runner.run({ source: refreshed, sql, range }))).extra).toEqual({ reason: "catalog" });
    // Another source whose catalog lacks the table, then the first one again with its current catalog.
    const other = fx.source({ catalog: hostsOnly, catalogRefreshedAt: new Date(T0) });
    expect((await rejection(runner.run({ source: other, sql, range }))).extra).toEqual({ reason: "catalog" });
    expect((await runner.run({ source, sql, range })).rows).toEqual([[61]]);
  });

  test("a time series is checked against the range before it runs: refused with time when too many rows", async () => {
    const source = fx.source({ catalog });
    const sql = "SELECT count(*)::int FROM generate_series($__timeFrom(), $__timeTo(), interval '1 second') t";
    expect((await runner.run({ source, sql, range })).rows).toEqual([[3601]]);
    const week = { fromMs: T0, toMs: T0 + 7 * 86_400_000 };
    const err = await rejection(runner.run({ source, sql, range: week }));
    expect(err.extra).toEqual({ reason: "time" });
    expect(err.message).toContain("generate_series");
    // With $__interval the same week stays within the cap.
    const byInterval = "SELECT count(*)::int FROM generate_series($__timeFrom(), $__timeTo(), $__interval) t";
    expect((await runner.run({ source, sql: byInterval, range: week })).rows[0][0]).toBeLessThanOrEqual(721);
  });

  test("every statement runs with the runner's work_mem, whatever the role's default", async () => {
    await fx.admin(`ALTER ROLE ${readerRole} SET work_mem = '512MB'`);
    const source = fx.source({ catalog });
    const r = await runner.execute({ source, sql: "SELECT current_setting('work_mem')" });
    expect(r.rows).toEqual([["4MB"]]);
  });

  test("a never-refreshed catalog refuses a statement that reaches the catalog check", async () => {
    const source = fx.source({ catalog: null, catalogRefreshedAt: null });
    const err = await rejection(runner.run({ source, sql: "SELECT 1", range }));
    expect(err.extra).toEqual({ reason: "catalog" });
  });
});
