import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Config, parseConfig } from "../config/parse.ts";
import type { AppError } from "../http/errors.ts";
import { createMetrics } from "../metrics/metrics.ts";
import { createSecretResolver } from "../secrets/resolver.ts";
import { createDatabase } from "../testing/pg.ts";
import { rejection } from "../testing/rejection.ts";
import { type QueryRunner, type ReadStats, createQueryRunner } from "./runner.ts";
import { type MetricsFixture, createMetricsFixture, createSecretsDir } from "./testing/metrics-db.ts";
import type { Guard } from "../sql-guard/verdict.ts";

let fx: MetricsFixture;
let secrets: Awaited<ReturnType<typeof createSecretsDir>>;
let reader: string;
let writer: string;
const runners: QueryRunner[] = [];

beforeAll(async () => {
  fx = await createMetricsFixture((await createDatabase("metrics")).url);
  secrets = await createSecretsDir();
  await fx.admin(`
    CREATE TABLE samples (ts timestamptz NOT NULL, host text NOT NULL, value double precision NOT NULL);
    INSERT INTO samples SELECT timestamptz '2026-01-01T00:00:00Z' + make_interval(mins => g), 'web-' || (g % 3), g
      FROM generate_series(1, 300) g;
    CREATE SEQUENCE counter;
    REVOKE ALL ON SCHEMA public FROM PUBLIC;
  `);
  reader = await fx.createRole("pb_reader", "reader-pw-1", ["GRANT USAGE ON SCHEMA public TO %I", "GRANT SELECT ON samples TO %I"]);
  // A role that COULD write: proves it is the transaction, not a missing privilege, that refuses writes.
  writer = await fx.createRole("pb_writer", "writer-pw", [
    "GRANT USAGE, CREATE ON SCHEMA public TO %I",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON samples TO %I",
    "GRANT USAGE, UPDATE ON SEQUENCE counter TO %I",
  ]);
  await secrets.set("METRICS_USERNAME", reader);
  await secrets.set("METRICS_PASSWORD", "reader-pw-1");
  await secrets.set("WRITER_USERNAME", writer);
  await secrets.set("WRITER_PASSWORD", "writer-pw");
});

afterAll(async () => {
  await Promise.all(runners.map((r) => r.closeAll()));
  await fx.close();
  await secrets.remove();
});

function testConfig(extra: Record<string, string> = {}): Config {
  return parseConfig({
    DATABASE_URL: "postgres://unused@127.0.0.1/unused",
    // The test server listens on loopback, which the host policy refuses unless allowed.
    SOURCE_ALLOWED_HOSTS: "127.0.0.1",
    SOURCE_SECRET_REFS: "METRICS:ws_a;WRITER:ws_a",
    SOURCE_SECRETS_DIR: secrets.dir,
    QUERY_TIMEOUT_SECONDS: "1",
    MAX_QUERY_ROWS: "100",
    MAX_RESULT_BYTES: "65536",
    ...extra,
  }).config;
}

const passGuard: Guard = { check: (sql) => ({ ok: true, sql, params: [] }) };

/** Resolves once `cond` holds, checking every 20 ms (an event this test cannot otherwise await). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((resolve) => setTimeout(resolve, 20));
}

function setup(
  opts: { config?: Config; guard?: Guard; grants?: () => Config["sourceSecretGrants"]; poolMax?: number; clockStep?: number } = {},
) {
  const config = opts.config ?? testConfig();
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultCollectors: false });
  let t = 0;
  const runner = createQueryRunner({
    config,
    metrics,
    guard: opts.guard ?? passGuard,
    intervalFor: () => "5 minutes",
    secrets: createSecretResolver({ config, env: {}, grants: opts.grants }),
    // Each reading of the clock advances 10 ms (or clockStep): durations are deterministic.
    now: () => (t += opts.clockStep ?? 10),
    poolMax: opts.poolMax ?? 3,
  });
  runners.push(runner);
  return { runner, registry, config };
}

function expectAllReturned(runner: QueryRunner, sourceId: string) {
  const stats = runner.poolStats(sourceId);
  expect(stats).not.toBeNull();
  expect(stats?.idleCount).toBe(stats?.totalCount);
  expect(stats?.waitingCount).toBe(0);
  expect(runner.inFlight()).toBe(0);
}

describe("result shape and value encoding", () => {
  test("rows are arrays; timestamps are epoch ms; int8/numeric are numbers when exact, else strings", async () => {
    const { runner } = setup();
    const source = fx.source();
    const r = await runner.execute({
      source,
      sql: `SELECT timestamptz '2026-01-02 03:04:05.678+02' AS tz, timestamp '2026-01-02 03:04:05' AS ts,
                   date '2026-01-02' AS d, 42::int8 AS small8, 9007199254740993::int8 AS big8,
                   1.50::numeric AS n, 12345678901234567890.5::numeric AS bign, 'NaN'::numeric AS nan,
                   true AS b, NULL::text AS nul, 'q"x'::text AS s, '{"a": [1, 2]}'::jsonb AS j,
                   'Infinity'::float8 AS inf, 2.5::float4 AS f4, 'infinity'::timestamptz AS tinf`,
    });
    expect(r.columns.map((c) => [c.name, c.type])).toEqual([
      ["tz", "timestamptz"],
      ["ts", "timestamp"],
      ["d", "date"],
      ["small8", "int8"],
      ["big8", "int8"],
      ["n", "numeric"],
      ["bign", "numeric"],
      ["nan", "numeric"],
      ["b", "bool"],
      ["nul", "text"],
      ["s", "text"],
      ["j", "jsonb"],
      ["inf", "float8"],
      ["f4", "float4"],
      ["tinf", "timestamptz"],
    ]);
    expect(r.rows).toEqual([
      [
        Date.UTC(2026, 0, 2, 1, 4, 5, 678),
        Date.UTC(2026, 0, 2, 3, 4, 5),
        Date.UTC(2026, 0, 2),
        42,
        "9007199254740993",
        1.5,
        "12345678901234567890.5",
        "NaN",
        true,
        null,
        'q"x',
        { a: [1, 2] },
        "Infinity",
        2.5,
        "infinity",
      ],
    ]);
    expect(r.truncated).toBe(false);
    expect(r.elapsedMs).toBe(10);
  });

  test("elapsedMs is carried to a tenth of a millisecond, not a clock difference's 13 decimals", async () => {
    const { runner } = setup({ clockStep: 13.013929000000644 });
    const r = await runner.execute({ source: fx.source(), sql: "SELECT 1 AS n" });
    expect(r.elapsedMs).toBe(13);
    expect(JSON.stringify(r)).not.toContain("13.0139");
  });

  test("a statement without rows has no columns; parameters are bound with their types", async () => {
    const { runner } = setup();
    const source = fx.source();
    const empty = await runner.execute({ source, sql: "SELECT 1 WHERE false" });
    expect(empty.rows).toEqual([]);
    const r = await runner.execute({
      source,
      sql: "SELECT count(*) FROM samples WHERE ts BETWEEN $1 AND $2",
      values: ["2026-01-01T00:00:00.000Z", "2026-01-01T00:10:00.000Z"],
      paramTypes: [1184, 1184],
    });
    expect(r.rows).toEqual([[10]]);
    const tricky = "é✓ 'quoted' \\ \"dq\" 😀";
    const odd = await runner.execute({
      source,
      sql: "SELECT $1::text IS NULL AS n, $2::text AS s, length($2) AS l, 'ünïcödé ✓' AS lit",
      values: [null, tricky],
    });
    expect(odd.rows).toEqual([[true, tricky, [...tricky].length, "ünïcödé ✓"]]);
  });

  test("a NUL in the statement is refused before it reaches the wire", async () => {
    const { runner } = setup();
    const err = await rejection(runner.execute({ source: fx.source(), sql: "SELECT 1\u0000; DROP TABLE samples" }));
    expect(err.code).toBe("bad_request");
  });
});

describe("read-only holds even with the guard bypassed", () => {
  test.each([
    ["INSERT", "INSERT INTO samples VALUES (now(), 'x', 1)"],
    ["UPDATE", "UPDATE samples SET value = 0"],
    ["DELETE", "DELETE FROM samples"],
    ["DDL", "CREATE TABLE evil (x int)"],
    ["sequence", "SELECT nextval('counter')"],
    ["data-modifying CTE", "WITH d AS (DELETE FROM samples RETURNING 1) SELECT count(*) FROM d"],
    ["SELECT INTO", "SELECT * INTO evil2 FROM samples"],
  ])("%s is refused by the database (25006)", async (_name, sql) => {
    const { runner } = setup();
    const source = fx.source({ secretRef: "WRITER" });
    const err = await rejection(runner.execute({ source, sql }));
    expect(err.code).toBe("query_failed");
    expect(err.extra).toEqual({ sqlstate: "25006" });
    expect((await fx.admin("SELECT count(*)::int AS n FROM samples")).rows[0].n).toBe(300);
    expectAllReturned(runner, source.id);
  });

  test("a session-level SET from one statement does not outlive it (rolled back, and its connection replaced)", async () => {
    const { runner } = setup({ poolMax: 1 });
    const source = fx.source({ secretRef: "WRITER" });
    await runner.execute({ source, sql: "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE" });
    await runner.execute({ source, sql: "SET default_transaction_read_only = off" });
    await runner.execute({ source, sql: "SET statement_timeout = 0" });
    // Not a SELECT: the connection is gone from the pool, and the next statement gets a fresh one.
    expect(runner.poolStats(source.id)).toMatchObject({ totalCount: 0 });
    const err = await rejection(runner.execute({ source, sql: "INSERT INTO samples VALUES (now(), 'x', 1)" }));
    expect(err.extra).toEqual({ sqlstate: "25006" });
    const show = await runner.execute({ source, sql: "SHOW statement_timeout" });
    expect(show.rows).toEqual([["1s"]]);
  });

  test("COMMIT as the statement ends nothing useful: the next write is still refused", async () => {
    const { runner } = setup({ poolMax: 1 });
    const source = fx.source({ secretRef: "WRITER" });
    await runner.execute({ source, sql: "COMMIT" });
    const err = await rejection(runner.execute({ source, sql: "INSERT INTO samples VALUES (now(), 'x', 1)" }));
    expect(err.extra).toEqual({ sqlstate: "25006" });
  });

  test("the fixed statements cannot be replaced: DEALLOCATE fails its own call, PREPARE cannot take the name", async () => {
    const { runner } = setup({ poolMax: 1 });
    const source = fx.source({ secretRef: "WRITER" });
    const dealloc = await rejection(runner.execute({ source, sql: "DEALLOCATE ALL" }));
    expect(dealloc.extra).toEqual({ sqlstate: "26000" });
    expect(runner.poolStats(source.id)?.totalCount).toBe(0);
    const prep = await rejection(runner.execute({ source, sql: "PREPARE pb_ro_begin AS SELECT 1" }));
    expect(prep.extra).toEqual({ sqlstate: "42P05" });
    const err = await rejection(runner.execute({ source, sql: "INSERT INTO samples VALUES (now(), 'x', 1)" }));
    expect(err.extra).toEqual({ sqlstate: "25006" });
    expectAllReturned(runner, source.id);
  });

  test("two statements in one call are refused by the protocol", async () => {
    const { runner } = setup();
    const source = fx.source({ secretRef: "WRITER" });
    const err = await rejection(runner.execute({ source, sql: "SET TRANSACTION READ WRITE; INSERT INTO samples VALUES (now(), 'x', 1)" }));
    expect(err.code).toBe("query_failed");
    expect(err.extra).toEqual({ sqlstate: "42601" });
  });
});

describe("session settings the guard relies on", () => {
  test("literals use standard strings and unqualified names resolve in public, as the guard assumed", async () => {
    const { runner } = setup();
    const source = fx.source();
    const result = await runner.execute({
      source,
      sql: "SELECT current_setting('standard_conforming_strings'), current_setting('search_path'), 'a\\'::text",
    });
    expect(result.rows).toEqual([["on", "public", "a\\"]]);
    expectAllReturned(runner, source.id);
  });
});

describe("timeout", () => {
  test("the database cancels a slow statement; the source stays usable and the client is replaced", async () => {
    const { runner, registry } = setup();
    const source = fx.source();
    const err = await rejection(runner.execute({ source, sql: "SELECT pg_sleep(30)" }));
    expect(err.code).toBe("query_timeout");
    expect(err.detail).toContain("QUERY_TIMEOUT_SECONDS (1 s)");
    expectAllReturned(runner, source.id);
    expect(runner.poolStats(source.id)?.totalCount).toBe(0);
    const again = await runner.execute({ source, sql: "SELECT 1 AS one" });
    expect(again.rows).toEqual([[1]]);
    const text = await registry.metrics();
    expect(text).toMatch(new RegExp(`svc_query_duration_seconds_count\\{source="${source.id}",outcome="error"\\} 1`));
    expect(text).toMatch(new RegExp(`svc_query_duration_seconds_count\\{source="${source.id}",outcome="ok"\\} 1`));
  });
});

describe("a silent source", () => {
  test("a backend that stops answering is cut off after the timeout plus grace; the pool recovers", async () => {
    const config = testConfig();
    const runner = createQueryRunner({
      config,
      metrics: createMetrics(new Registry(), { defaultCollectors: false }),
      guard: passGuard,
      secrets: createSecretResolver({ config, env: {} }),
      poolMax: 1,
      stallGraceMs: 200,
      endedPollMs: 50,
    });
    runners.push(runner);
    const source = fx.source();
    const pid = (await runner.execute({ source, sql: "SELECT pg_backend_pid()" })).rows[0]?.[0] as number;
    // Freeze the backend: it can neither run the statement nor let the server's own timeout answer.
    process.kill(pid, "SIGSTOP");
    let settled = false;
    try {
      const pending = rejection(runner.execute({ source, sql: "SELECT 1" })).finally(() => {
        settled = true;
      });
      // The watchdog closes the connection (nothing checked out any more), but the statement does not end
      // until the server confirms its backend is gone: a frozen backend never goes.
      await until(() => (runner.poolStats(source.id)?.idleCount ?? 0) < (runner.poolStats(source.id)?.totalCount ?? 0));
      await until(() => runner.poolStats(source.id)?.idleCount === runner.poolStats(source.id)?.totalCount);
      expect(settled).toBe(false);
      expect(runner.inFlight()).toBe(1);
      process.kill(pid, "SIGCONT");
      const err = await pending;
      expect(err.code).toBe("query_timeout");
      expect(err.detail).toContain("did not answer");
      expect((await fx.admin("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1", [pid])).rows[0].n).toBe(0);
    } finally {
      // Gone by now unless an assertion failed first.
      try {
        process.kill(pid, "SIGCONT");
      } catch {}
    }
    expectAllReturned(runner, source.id);
    expect((await runner.execute({ source, sql: "SELECT 2" })).rows).toEqual([[2]]);
  });
});

describe("row and byte caps", () => {
  test("more rows than MAX_QUERY_ROWS: the first 100 rows, truncated", async () => {
    const { runner, registry } = setup();
    const source = fx.source();
    const r = await runner.execute({ source, sql: "SELECT g FROM generate_series(1, 250) g" });
    expect(r.rows).toHaveLength(100);
    expect(r.rows[99]).toEqual([100]);
    expect(r.truncated).toBe(true);
    const exact = await runner.execute({ source, sql: "SELECT g FROM generate_series(1, 100) g" });
    expect(exact.truncated).toBe(false);
    expect(await registry.metrics()).toMatch(new RegExp(`svc_query_rows_sum\\{source="${source.id}"\\} 200`));
  });

  test("past MAX_RESULT_BYTES the read stops at once: 400 naming the limit, most rows never read", async () => {
    const { runner, registry } = setup({ config: testConfig({ MAX_QUERY_ROWS: "1000000" }) });
    const source = fx.source();
    const stats: ReadStats = { rowsRead: 0, bytes: 0, wireBytes: 0 };
    // 200,000 rows of ~1 KB: 200 MB if it were read to the end.
    const err = await rejection(runner.execute({ source, sql: "SELECT repeat('x', 1000) FROM generate_series(1, 200000)", stats }));
    expect(err.code).toBe("result_too_large");
    expect(err.status).toBe(400);
    expect(err.detail).toContain("MAX_RESULT_BYTES (65536 bytes)");
    expect(stats.rowsRead).toBeGreaterThan(60);
    expect(stats.rowsRead).toBeLessThanOrEqual(66);
    expect(stats.wireBytes).toBeLessThan(1_000_000);
    expectAllReturned(runner, source.id);
    expect(await registry.metrics()).not.toMatch(new RegExp(`svc_query_rows_count\\{source="${source.id}"\\}`));
    const after = await runner.execute({ source, sql: "SELECT 1" });
    expect(after.rows).toEqual([[1]]);
  });

  test("a single huge value is stopped on the wire before pg buffers it whole", async () => {
    // Building the 50 MB value takes the server a while on a loaded machine: the 1 s timeout would win the race.
    const { runner } = setup({ config: testConfig({ QUERY_TIMEOUT_SECONDS: "30" }) });
    const source = fx.source();
    const stats: ReadStats = { rowsRead: 0, bytes: 0, wireBytes: 0 };
    const err = await rejection(runner.execute({ source, sql: "SELECT repeat('x', 50000000)", stats }));
    expect(err.code).toBe("result_too_large");
    expect(stats.rowsRead).toBe(0);
    expect(stats.wireBytes).toBeLessThan(2_000_000);
    expectAllReturned(runner, source.id);
  });

  test("the byte count is the JSON size of the rows", async () => {
    const { runner } = setup({ config: testConfig({ MAX_RESULT_BYTES: "100000" }) });
    const source = fx.source();
    const stats: ReadStats = { rowsRead: 0, bytes: 0, wireBytes: 0 };
    const r = await runner.execute({
      source,
      sql: `SELECT g, 'a"b\\c' || g AS s, 'é' AS u, g % 2 = 0 AS b, NULL AS n, timestamptz '2026-01-01' + make_interval(secs => g) AS t,
                   (g * 1.5)::numeric AS x FROM generate_series(1, 50) g`,
      stats,
    });
    const json = Buffer.byteLength(JSON.stringify(r.rows));
    // Counted = rows + envelope allowance; never below the real size.
    expect(stats.bytes).toBeGreaterThanOrEqual(json);
    expect(stats.bytes - json).toBeLessThan(400);
  });
});

describe("errors and pool hygiene", () => {
  test("every client returns after a mix of failures and successes", async () => {
    const { runner } = setup({ poolMax: 2 });
    const source = fx.source();
    const sqls = [
      "SELECT 1",
      "SELEC 1",
      "SELECT 1/(g - 50) FROM generate_series(1, 100) g",
      "SELECT * FROM no_such_table",
      "SELECT pg_sleep(30)",
      "SELECT repeat('x', 2000) FROM generate_series(1, 1000)",
      "SELECT g FROM generate_series(1, 10) g",
    ];
    const outcomes = await Promise.allSettled(sqls.map((sql) => runner.execute({ source, sql })));
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "rejected", "rejected", "rejected", "fulfilled"]);
    const codes = outcomes.map((o) => (o.status === "rejected" ? (o.reason as AppError).code : "ok"));
    expect(codes).toEqual(["ok", "query_failed", "query_failed", "query_failed", "query_timeout", "result_too_large", "ok"]);
    expectAllReturned(runner, source.id);
  });

  test("many concurrent statements share a small pool", async () => {
    const { runner } = setup({ poolMax: 2 });
    const source = fx.source();
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => runner.execute({ source, sql: `SELECT ${i} AS i, pg_sleep(0.01)` })),
    );
    expect(results.map((r) => r.rows[0]?.[0])).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(runner.poolStats(source.id)?.totalCount).toBeLessThanOrEqual(2);
    expectAllReturned(runner, source.id);
  });

  test("an unreachable source is source_unavailable with a code, never the host", async () => {
    const { runner } = setup();
    const source = fx.source({ port: 1 });
    const err = await rejection(runner.execute({ source, sql: "SELECT 1" }));
    expect(err.code).toBe("source_unavailable");
    expect(err.extra).toEqual({ cause: "connection_refused" });
    expect(err.detail).not.toContain(fx.host);
  });

  test("a wrong password is auth_failed and does not echo the password or host", async () => {
    await secrets.set("BADPW_USERNAME", reader);
    await secrets.set("BADPW_PASSWORD", "not-the-password");
    const config = testConfig({ SOURCE_SECRET_REFS: "BADPW:ws_a" });
    const { runner } = setup({ config });
    const err = await rejection(runner.execute({ source: fx.source({ secretRef: "BADPW" }), sql: "SELECT 1" }));
    expect(err.code).toBe("source_unavailable");
    expect(err.extra).toEqual({ cause: "auth_failed" });
    expect(JSON.stringify([err.detail, err.extra])).not.toMatch(/not-the-password|127\.0\.0\.1/);
  });

  test("sslmode prefer falls back to plain text on a server without TLS", async () => {
    const { runner } = setup();
    const r = await runner.execute({ source: fx.source({ sslmode: "prefer" }), sql: "SELECT 1" });
    expect(r.rows).toEqual([[1]]);
  });

  test("a secret lookup slower than the connect timeout fails as connect_timeout and never connects late", async () => {
    const config = testConfig();
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const real = createSecretResolver({ config, env: {} });
    const runner = createQueryRunner({
      config,
      metrics: createMetrics(new Registry(), { defaultCollectors: false }),
      guard: passGuard,
      secrets: {
        checkGrant: real.checkGrant,
        resolve: async (ref, ws) => {
          await gate;
          return real.resolve(ref, ws);
        },
      },
      connectTimeoutMs: 50,
    });
    runners.push(runner);
    const source = fx.source();
    const err = await rejection(runner.execute({ source, sql: "SELECT 1" }));
    expect(err.code).toBe("source_unavailable");
    expect(err.extra).toEqual({ cause: "connect_timeout" });
    release();
    await new Promise((r) => setImmediate(r));
    expect(runner.poolStats(source.id)).toMatchObject({ totalCount: 0, idleCount: 0 });
    const before = (await fx.admin("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1", [reader])).rows[0].n;
    // The late lookup finished; nothing connected with it.
    await new Promise((r) => setImmediate(r));
    const after = (await fx.admin("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1", [reader])).rows[0].n;
    expect(after).toBeLessThanOrEqual(before);
  });

  test("missing credentials name the variables", async () => {
    const config = testConfig({ SOURCE_SECRET_REFS: "NOPE:ws_a" });
    const { runner } = setup({ config });
    const err = await rejection(runner.execute({ source: fx.source({ secretRef: "NOPE" }), sql: "SELECT 1" }));
    expect(err.code).toBe("source_credentials_missing");
    expect(err.detail).toContain("NOPE_USERNAME and NOPE_PASSWORD");
  });
});

describe("credentials and grants", () => {
  test("rotated credential files are used by the next new connection, without a restart", async () => {
    const other = await fx.createRole("pb_rotated", "rotated-pw", ["GRANT USAGE ON SCHEMA public TO %I"]);
    await secrets.set("ROT_USERNAME", reader);
    await secrets.set("ROT_PASSWORD", "reader-pw-1");
    const config = testConfig({ SOURCE_SECRET_REFS: "ROT:ws_a" });
    const { runner } = setup({ config, poolMax: 1 });
    const source = fx.source({ secretRef: "ROT" });
    expect((await runner.execute({ source, sql: "SELECT current_user" })).rows).toEqual([[reader]]);

    await secrets.set("ROT_USERNAME", other);
    await secrets.set("ROT_PASSWORD", "rotated-pw");
    // The warm connection keeps its session; a failed statement destroys it, so the next one reconnects.
    expect((await runner.execute({ source, sql: "SELECT current_user" })).rows).toEqual([[reader]]);
    await rejection(runner.execute({ source, sql: "SELEC" }));
    expect((await runner.execute({ source, sql: "SELECT current_user" })).rows).toEqual([[other]]);
  });

  test("a revoked grant is refused before the database is touched, even on a warm pool", async () => {
    let grants: Config["sourceSecretGrants"] = new Map([["METRICS", new Set(["ws_a"])]]);
    const { runner, registry } = setup({ grants: () => grants });
    const source = fx.source();
    await runner.execute({ source, sql: "SELECT 1" });
    grants = new Map();
    const before = runner.poolStats(source.id);
    const err = await rejection(runner.execute({ source, sql: "SELECT 1" }));
    expect(err.code).toBe("grant_missing");
    expect(err.detail).toContain("METRICS");
    expect(runner.poolStats(source.id)).toEqual(before);
    expect(await registry.metrics()).toMatch(new RegExp(`svc_query_duration_seconds_count\\{source="${source.id}",outcome="error"\\} 1`));
  });

  test("a source of another workspace is refused by grant", async () => {
    const { runner } = setup();
    const err = await rejection(runner.execute({ source: fx.source({ workspaceId: "ws_other" }), sql: "SELECT 1" }));
    expect(err.code).toBe("grant_missing");
  });
});

describe("run (guard stage)", () => {
  test("macro parameters are bound as typed values from the range", async () => {
    const guard: Guard = {
      check: () => ({
        ok: true,
        sql: "SELECT count(*) AS n, $3::text AS step FROM samples WHERE ts BETWEEN $1 AND $2",
        params: ["from", "to", "interval"],
      }),
    };
    const { runner } = setup({ guard });
    const r = await runner.run({
      source: fx.source(),
      sql: "ignored by the stub",
      range: { fromMs: Date.UTC(2026, 0, 1, 0, 0), toMs: Date.UTC(2026, 0, 1, 1, 0) },
    });
    expect(r.rows).toEqual([[60, "00:05:00"]]);
  });

  test("a rejection is counted by reason, never touches the database, and carries the reason", async () => {
    const guard: Guard = { check: () => ({ ok: false, reason: "keyword", message: "DELETE is not allowed" }) };
    const { runner, registry } = setup({ guard });
    const source = fx.source();
    const err = await rejection(runner.run({ source, sql: "DELETE FROM samples", range: { fromMs: 0, toMs: 1 } }));
    expect(err.code).toBe("guard_rejected");
    expect(err.extra).toEqual({ reason: "keyword" });
    expect(err.detail).toBe("DELETE is not allowed");
    expect(runner.poolStats(source.id)).toBeNull();
    expect(await registry.metrics()).toMatch(/svc_sql_validation_rejections_total\{reason="keyword"\} 1/);
  });

  test("a never-refreshed catalog refuses with reason catalog", async () => {
    const { runner } = setup();
    const source = fx.source({ catalog: null, catalogRefreshedAt: null });
    const err = await rejection(runner.run({ source, sql: "SELECT 1", range: { fromMs: 0, toMs: 1 } }));
    expect(err.extra).toEqual({ reason: "catalog" });
  });
});

describe("drain", () => {
  test("closeAll waits for a checked-out client, then refuses new statements", async () => {
    const { runner } = setup({ poolMax: 1 });
    const source = fx.source();
    await runner.execute({ source, sql: "SELECT 1" }); // an idle client: the next checkout is immediate
    const slow = runner.execute({ source, sql: "SELECT pg_sleep(0.2), 1 AS done" });
    // Wait until the statement holds the client (no sleep: poll the pool once per macrotask).
    while (runner.poolStats(source.id)?.idleCount !== 0) {
      await new Promise((r) => setImmediate(r));
    }
    expect(runner.inFlight()).toBe(1);
    let closed = false;
    const closing = runner.closeAll().then(() => {
      closed = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    expect((await slow).rows[0]?.[1]).toBe(1);
    await closing;
    expect(runner.inFlight()).toBe(0);
    const err = await rejection(runner.execute({ source, sql: "SELECT 1" }));
    expect(err.extra).toEqual({ cause: "draining" });
  });

  test("a statement still waiting for a client when the drain starts is refused at once", async () => {
    const { runner } = setup({ poolMax: 1 });
    const source = fx.source();
    await runner.execute({ source, sql: "SELECT 1" });
    const slow = runner.execute({ source, sql: "SELECT pg_sleep(0.2), 1 AS done" });
    while (runner.poolStats(source.id)?.idleCount !== 0 || runner.poolStats(source.id)?.totalCount !== 1) {
      await new Promise((r) => setImmediate(r));
    }
    const waiting = runner.execute({ source, sql: "SELECT 2" });
    while (runner.poolStats(source.id)?.waitingCount !== 1) await new Promise((r) => setImmediate(r));
    const closing = runner.closeAll();
    expect((await rejection(waiting)).extra).toEqual({ cause: "draining" });
    expect((await slow).rows[0]?.[1]).toBe(1);
    await closing;
    expect(runner.inFlight()).toBe(0);
  });
});
