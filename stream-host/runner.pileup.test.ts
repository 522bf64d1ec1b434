// No pile-up behind a statement the source cannot cancel: the runner's watchdog closes its connection, but the
// statement (and the source's query slot its caller holds) ends only once the server confirms its backend
// ended. A real server and a statement that does not check for cancellation, through the runner's unguarded
// execute path (the guard refuses it); it ends on its own after a few seconds of CPU.
import { afterAll, beforeAll, expect, test } from "vitest";
import { createKeyedLimiter } from "./limiter.ts";
import type { Guard } from "../lib/sql-guard/verdict.ts";
import { rejection } from "../lib/testing/rejection.ts";
import type { AppError } from "../lib/http/errors.ts";
import { type RunnerFixture, createRunnerFixture } from "../lib/query/testing/runner-fixture.ts";

let db: RunnerFixture;

beforeAll(async () => {
  db = await createRunnerFixture({ database: "pileup", role: "pb_pileup", grants: [] });
});

afterAll(async () => {
  await db?.close();
});

const passGuard: Guard = { check: (sql) => ({ ok: true, sql, params: [] }) };

/** Resolves once `cond` holds, checking every 20 ms (an event this test cannot otherwise await). */
async function until(cond: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await cond())) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * rtrim with a characters argument compares every character of the string with every character of the set and
 * never checks for cancellation: 120,000 × 20,000 comparisons, seconds of CPU past a 1 s statement_timeout.
 */
const UNCANCELLABLE = "SELECT length(rtrim(repeat(' ', 120000), repeat('x', 20000) || ' '))";

test("an uncancellable statement holds its source's slot until its backend ends; the next tick is source_busy", async () => {
  const runner = db.runner({ env: { QUERY_TIMEOUT_SECONDS: "1" }, guard: passGuard, poolMax: 2, stallGraceMs: 100, endedPollMs: 50 });
  const fx = db.fx;
  const source = fx.source();
  // The stream host's per-source slots, one per source here: what a poller's panel takes before it runs.
  const slots = createKeyedLimiter(1);
  const pid = (await runner.execute({ source, sql: "SELECT pg_backend_pid()" })).rows[0]?.[0] as number;
  const active = async () =>
    (await fx.admin("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", [pid])).rows[0].n === 1;
  try {
    const release = slots.tryAcquire(source.id);
    expect(release).not.toBeNull();
    let settled = false;
    // Told through the request's listener, as the stream host's poller listens.
    const notices: AppError[] = [];
    const pending = rejection(runner.execute({ source, sql: UNCANCELLABLE, onHeld: (n) => notices.push(n) })).finally(() => {
      settled = true;
      release?.();
    });
    await until(active);
    // The watchdog has fired once the runner gave the statement's connection up (none is checked out).
    await until(() => (runner.poolStats(source.id)?.idleCount ?? 0) === (runner.poolStats(source.id)?.totalCount ?? 0));
    // The backend still burns CPU: the statement has not ended, the slot is held, the next tick finds none.
    expect(await active()).toBe(true);
    expect(settled).toBe(false);
    expect(runner.inFlight()).toBe(1);
    expect(slots.tryAcquire(source.id)).toBeNull();
    // The caller heard why, once, while the statement is still held.
    await until(() => notices.length > 0);
    expect(settled).toBe(false);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ code: "query_timeout", extra: { reason: "query_held" } });
    expect(notices[0].detail).toMatch(/outlived QUERY_TIMEOUT_SECONDS \(1 s\) and the source has not confirmed that it ended/);
    const err = await pending;
    expect(notices).toHaveLength(1);
    expect(err.code).toBe("query_timeout");
    expect(err.detail).toMatch(/kept running it, ignoring the cancel, for \d+ s more; its query slot was held/);
    // Only now, with the backend gone, is the slot free again.
    expect((await fx.admin("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1", [pid])).rows[0].n).toBe(0);
    const next = slots.tryAcquire(source.id);
    expect(next).not.toBeNull();
    next?.();
    expect((await runner.execute({ source, sql: "SELECT 1" })).rows).toEqual([[1]]);
  } finally {
    // Never leave the backend running on the shared server.
    await fx.admin("SELECT pg_terminate_backend($1)", [pid]).catch(() => {});
    await runner.closeAll();
  }
}, 120_000);
