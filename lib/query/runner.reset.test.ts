import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startupOptions } from "./pools.ts";
import { ReadOnlyPortal } from "./portal.ts";
import type { MetricsFixture } from "./testing/metrics-db.ts";
import { type RunnerFixture, createRunnerFixture } from "./testing/runner-fixture.ts";
import type { Guard } from "../sql-guard/verdict.ts";
import { fixedMessages } from "./wire.ts";

// A connection returned to a source's pool holds nothing from the statement it ran. Statements go through the
// runner's unguarded `execute` (as if the guard had let them through) on a real server, with one connection
// per pool, so the backend pid tells a reset connection from a replaced one.

let db: RunnerFixture;
let fx: MetricsFixture;
const clients: pg.Client[] = [];

beforeAll(async () => {
  db = await createRunnerFixture({
    database: "reset",
    setup: async (m) => {
      await m.admin("CREATE TABLE samples (ts timestamptz NOT NULL, value double precision NOT NULL)");
      await m.admin("REVOKE ALL ON SCHEMA public FROM PUBLIC");
    },
    role: "pb_reset_reader",
    grants: ["GRANT USAGE ON SCHEMA public TO %I", "GRANT SELECT ON samples TO %I"],
  });
  fx = db.fx;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => {})));
  await db?.close();
});

const passGuard: Guard = { check: (sql) => ({ ok: true, sql, params: [] }) };

function setup() {
  const runner = db.runner({ env: { QUERY_TIMEOUT_SECONDS: "1" }, guard: passGuard, poolMax: 1 });
  const source = fx.source();
  const one = async (sql: string) => (await runner.execute({ source, sql })).rows[0] ?? [];
  const pid = async () => (await one("SELECT pg_backend_pid()"))[0] as number;
  return { runner, source, one, pid };
}

const RUNNER_STATEMENTS = ["pb_ro_begin", "pb_ro_rollback", "pb_ro_timeout_1000", "pb_ro_unlock", "pb_ro_work_mem_4096"];

describe("a pooled source connection carries nothing forward", () => {
  test("a session advisory lock taken by a statement is released before the client is checked out again", async () => {
    const { runner, source, one, pid } = setup();
    const before = await pid();
    // The locks are really taken (session level, so the ROLLBACK alone would keep them).
    const held = await one(
      "SELECT pg_advisory_lock(42), pg_advisory_lock_shared(43), " +
        "(SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())",
    );
    expect(held[2]).toBe(2);
    const locks = await fx.admin("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", [before]);
    expect(locks.rows[0].n).toBe(0);
    // Another session can take the exclusive lock at once.
    expect((await fx.admin("SELECT pg_try_advisory_xact_lock(42) AS ok")).rows[0].ok).toBe(true);
    // The same connection was reset and reused, not replaced.
    expect(await pid()).toBe(before);
    expect(runner.poolStats(source.id)).toMatchObject({ totalCount: 1, idleCount: 1 });
  });

  test("settings from set_config(…, false) are gone and the startup values pinned by the pool survive the reset", async () => {
    const { one, pid } = setup();
    const before = await pid();
    const changed = await one(
      "SELECT set_config('work_mem', '1MB', false), set_config('search_path', 'pg_temp, public', false), " +
        "set_config('TimeZone', 'Pacific/Auckland', false), set_config('standard_conforming_strings', 'off', false)",
    );
    expect(changed).toEqual(["1MB", "pg_temp, public", "Pacific/Auckland", "off"]);
    const serverDefault = (await fx.admin("SELECT boot_val FROM pg_settings WHERE name = 'work_mem'")).rows[0].boot_val;
    const after = await one(
      "SELECT current_setting('work_mem'), current_setting('search_path'), current_setting('TimeZone'), " +
        "current_setting('DateStyle'), current_setting('standard_conforming_strings'), current_setting('client_encoding'), " +
        "current_setting('default_transaction_read_only'), current_setting('statement_timeout'), " +
        "current_setting('idle_in_transaction_session_timeout'), pg_backend_pid()",
    );
    expect(after).toEqual([`${Number(serverDefault) / 1024}MB`, "public", "UTC", "ISO, MDY", "on", "UTF8", "on", "1s", "2s", before]);
  });

  test("a statement other than a SELECT costs its connection: a PREPAREd statement never reaches the next one", async () => {
    const { runner, source, pid } = setup();
    const before = await pid();
    const prepared = await runner.execute({ source, sql: "PREPARE leak AS SELECT 1" });
    expect(prepared.rows).toEqual([]);
    const left = await runner.execute({ source, sql: "SELECT name, from_sql, pg_backend_pid() FROM pg_prepared_statements ORDER BY name" });
    expect(left.rows.map((r) => [r[0], r[1]])).toEqual(RUNNER_STATEMENTS.map((n) => [n, false]));
    expect(left.rows[0]?.[2]).not.toBe(before);
  });

  test.each([
    ["LISTEN", "LISTEN pb_channel", "(SELECT count(*)::int FROM pg_listening_channels())"],
    ["a holdable cursor", "DECLARE held CURSOR WITH HOLD FOR SELECT 1", "(SELECT count(*)::int FROM pg_cursors WHERE name <> '')"],
    ["SET", "SET work_mem = '1MB'", "(SELECT (current_setting('work_mem') = '1MB')::int)"],
  ])("%s does not outlive its statement, and its connection is replaced", async (_name, sql, count) => {
    const { one, pid } = setup();
    const before = await pid();
    await one(sql);
    const [left, after] = await one(`SELECT ${count}, pg_backend_pid()`);
    expect(left).toBe(0);
    expect(after).not.toBe(before);
  });

  test.each([
    ["a statement that ended the transaction itself (its connection is replaced)", "COMMIT", false],
    ["a read cut at MAX_QUERY_ROWS (its connection is reused)", "SELECT pg_advisory_lock(5) FROM generate_series(1, 500)", true],
  ])("the reset also follows %s", async (_name, sql, reused) => {
    const { runner, source, pid } = setup();
    const before = await pid();
    await runner.execute({ source, sql: "SELECT pg_advisory_lock(5)" });
    const r = await runner.execute({ source, sql, maxRows: 100 });
    expect(r.truncated).toBe(sql.includes("generate_series"));
    const locks = await fx.admin("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", [before]);
    expect(locks.rows[0].n).toBe(0);
    expect((await pid()) === before).toBe(reused);
  });
});

describe("the reset on the wire", () => {
  /** A connection like the pools' (same startup options) on which state is set up outside the pipeline. */
  async function connection(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: fx.url, options: startupOptions(1000) });
    client.on("error", () => {});
    await client.connect();
    clients.push(client);
    return client;
  }

  /** Runs `sql` through the runner's pipeline (at most 10 rows) on `client`. */
  async function pipeline(client: pg.Client, sql: string, prepared = new WeakSet<object>()) {
    const portal = new ReadOnlyPortal({
      text: sql,
      values: [],
      paramTypes: [],
      maxRows: 10,
      maxBytes: 65_536,
      fixed: fixedMessages(1000),
      abort: () => void client.end(),
      prepared,
    });
    client.query(portal as unknown as pg.Submittable);
    return { portal, result: await portal.done };
  }

  test("a session advisory lock on the connection is released in the same message; its row is not the statement's", async () => {
    const client = await connection();
    await client.query("SELECT pg_advisory_lock(7), pg_advisory_lock_shared(8)");
    const prepared = new WeakSet<object>();
    // The release's own row never joins the statement's rows.
    expect((await pipeline(client, "SELECT 1", prepared)).result.rows).toEqual([[1]]);
    const r = await client.query(`
      SELECT (SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks,
             (SELECT array_agg(name ORDER BY name) FROM pg_prepared_statements) AS statements`);
    expect(r.rows[0]).toEqual({ locks: 0, statements: RUNNER_STATEMENTS });
    // The next statement finds the named statements it expects (the Parse is not repeated).
    expect((await pipeline(client, "SELECT 1", prepared)).result.rows).toEqual([[1]]);
  });

  test.each([
    ["SELECT 1", true],
    ["VALUES (1)", true],
    ["TABLE pg_am", true],
    ["SELECT generate_series(1, 50)", true],
    ["SHOW work_mem", false],
    ["EXPLAIN SELECT 1", false],
    ["PREPARE mine AS SELECT 1", false],
    ["LISTEN pb_wire", false],
    ["COMMIT", false],
  ])("%s: reusable %s (only a SELECT's connection goes back to its pool)", async (sql, reusable) => {
    const { portal, result } = await pipeline(await connection(), sql);
    expect(portal.reusable).toBe(reusable);
    expect(result.truncated).toBe(sql.includes("generate_series"));
  });
});
