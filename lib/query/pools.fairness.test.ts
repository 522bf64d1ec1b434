// Fair sharing of a server's connection cap: the budget's rules on their own, then the runner against the real
// test server, where idle connections of one workspace are closed for another and running ones are not.
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Config, parseConfig } from "../config/parse.ts";
import { createMetrics } from "../metrics/metrics.ts";
import { createSecretResolver } from "../secrets/resolver.ts";
import type { Guard } from "../sql-guard/verdict.ts";
import type { Source } from "../sources/store.ts";
import { createDatabase } from "../testing/pg.ts";
import { rejection } from "../testing/rejection.ts";
import { type ConnectionLease, createConnectionBudget, workspaceShare } from "./pools.ts";
import { type QueryRunner, createQueryRunner } from "./runner.ts";
import { type MetricsFixture, createMetricsFixture, createSecretsDir } from "./testing/metrics-db.ts";

describe("workspaceShare", () => {
  test.each([
    [1, 50, 1],
    [2, 50, 1],
    [2, 100, 1],
    [6, 50, 3],
    [20, 50, 10],
    [20, 100, 19],
    [20, 1, 1],
  ])("cap %i at %i%% gives %i", (max, percent, share) => {
    expect(workspaceShare(max, percent)).toBe(share);
  });
});

describe("connection budget", () => {
  const lease = (granted: ConnectionLease | string): ConnectionLease => {
    if (typeof granted === "string") throw new Error(`refused: ${granted}`);
    return granted;
  };
  /** A connection the test opens and marks idle or busy; `closed` records a reclaim. */
  function connection() {
    const c = {
      idle: false,
      closed: false,
      closeIfIdle: () => {
        if (!c.idle || c.closed) return false;
        c.closed = true;
        return true;
      },
    };
    return c;
  }

  test("a workspace stops at its share; another workspace still gets the rest of the cap", () => {
    const b = createConnectionBudget(6, 50);
    for (let i = 0; i < 3; i++) lease(b.acquire("s", { sourceId: `b${i}`, workspaceId: "B" }));
    expect(b.acquire("s", { sourceId: "b9", workspaceId: "B" })).toBe("workspace");
    for (let i = 0; i < 3; i++) lease(b.acquire("s", { sourceId: "a", workspaceId: "A" }));
    expect(b.held("s")).toBe(6);
    expect(b.held("s", "B")).toBe(3);
    // Servers are counted apart.
    lease(b.acquire("other", { sourceId: "b9", workspaceId: "B" }));
  });

  test("an idle connection of the busiest workspace, then busiest source, is closed for a newcomer; a running one never", () => {
    const b = createConnectionBudget(4, 75);
    const conns = new Map<string, ReturnType<typeof connection>>();
    const open = (sourceId: string, workspaceId: string, key: string) => {
      const c = connection();
      conns.set(key, c);
      lease(b.acquire("s", { sourceId, workspaceId })).bind(c.closeIfIdle);
      return c;
    };
    open("b1", "B", "b1-1");
    open("b1", "B", "b1-2");
    open("b2", "B", "b2-1");
    open("c1", "C", "c1-1");
    // Full (4), every connection running: refused.
    expect(b.acquire("s", { sourceId: "a1", workspaceId: "A" })).toBe("host");
    for (const c of conns.values()) c.idle = true;
    lease(b.acquire("s", { sourceId: "a1", workspaceId: "A" }));
    // B held the most, and b1 the most within B.
    expect([...conns].filter(([, c]) => c.closed).map(([k]) => k)).toEqual(["b1-1"]);
    expect(b.held("s", "B")).toBe(2);
    expect(b.held("s")).toBe(4);
  });

  test("past its share a workspace may only take an idle connection of its own other sources", () => {
    const b = createConnectionBudget(4, 50);
    const a = connection();
    lease(b.acquire("s", { sourceId: "a1", workspaceId: "A" })).bind(a.closeIfIdle);
    const b1 = connection();
    lease(b.acquire("s", { sourceId: "b1", workspaceId: "B" })).bind(b1.closeIfIdle);
    const b2 = connection();
    lease(b.acquire("s", { sourceId: "b2", workspaceId: "B" })).bind(b2.closeIfIdle);
    a.idle = true;
    // B is at its share (2): A's idle connection is not B's to take, even with a free slot.
    expect(b.acquire("s", { sourceId: "b3", workspaceId: "B" })).toBe("workspace");
    expect(a.closed).toBe(false);
    b1.idle = true;
    lease(b.acquire("s", { sourceId: "b3", workspaceId: "B" }));
    expect(b1.closed).toBe(true);
    expect(b.held("s", "B")).toBe(2);
  });

  test("a source never reclaims its own idle connection, and a released slot is counted once", () => {
    const b = createConnectionBudget(1, 50);
    const c = connection();
    const l = lease(b.acquire("s", { sourceId: "x", workspaceId: "A" }));
    l.bind(c.closeIfIdle);
    c.idle = true;
    expect(b.acquire("s", { sourceId: "x", workspaceId: "A" })).toBe("workspace");
    l.release();
    l.release();
    expect(b.held("s")).toBe(0);
    // A slot released before its connection opened cannot be bound (and so never reclaimed).
    const early = lease(b.acquire("s", { sourceId: "y", workspaceId: "A" }));
    early.release();
    early.bind(() => {
      throw new Error("never called");
    });
    lease(b.acquire("s", { sourceId: "z", workspaceId: "A" }));
  });
});

describe("runner: idle connections of one workspace do not starve another", () => {
  let fx: MetricsFixture;
  let secrets: Awaited<ReturnType<typeof createSecretsDir>>;
  let runner: QueryRunner;
  const passGuard: Guard = { check: (sql) => ({ ok: true, sql, params: [] }) };

  beforeAll(async () => {
    fx = await createMetricsFixture((await createDatabase("metrics")).url);
    secrets = await createSecretsDir();
    const reader = await fx.createRole("pb_fair", "fair-pw");
    await secrets.set("METRICS_USERNAME", reader);
    await secrets.set("METRICS_PASSWORD", "fair-pw");
    const config: Config = parseConfig({
      DATABASE_URL: "postgres://app@10.0.0.5:5432/pulseboard",
      SOURCE_ALLOWED_HOSTS: `${fx.host}:${fx.port}`,
      SOURCE_SECRET_REFS: "METRICS:*",
      SOURCE_SECRETS_DIR: secrets.dir,
      SOURCE_HOST_CONNECTIONS_MAX: "6",
      QUERY_TIMEOUT_SECONDS: "30",
    }).config;
    runner = createQueryRunner({
      config,
      metrics: createMetrics(new Registry(), { defaultCollectors: false }),
      guard: passGuard,
      secrets: createSecretResolver({ config, env: {} }),
      idleTimeoutMs: 60_000,
    });
  });

  afterAll(async () => {
    await runner.closeAll();
    await fx.close();
    await secrets.remove();
  });

  const backends = async () =>
    Number(
      (
        await fx.admin(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pulseboard' AND datname = current_database()",
        )
      ).rows[0].n,
    );

  test("workspace B's five sources hold idle connections; A's and C's sources still connect, running ones are kept", async () => {
    const b: Source[] = Array.from({ length: 5 }, () => fx.source({ workspaceId: "ws_b" }));
    for (const s of b) await runner.execute({ source: s, sql: "SELECT 1" });
    // B stops at its share (3 of 6) by closing its own idle connections for its next sources.
    expect(b.reduce((n, s) => n + (runner.poolStats(s.id)?.totalCount ?? 0), 0)).toBe(3);
    const a = fx.source({ workspaceId: "ws_a" });
    const c = fx.source({ workspaceId: "ws_c" });
    // Hold three connections of A and C running (an advisory lock the test holds), filling the cap.
    const lock = await fx.admin("SELECT pg_advisory_lock(4242)");
    expect(lock.rowCount).toBe(1);
    const running = [a, a, c].map((s) => runner.execute({ source: s, sql: "SELECT pg_advisory_lock_shared(4242)" }));
    await expect
      .poll(async () => (await fx.admin("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rows[0].n)
      .toBe(3);
    expect(await backends()).toBe(6);
    // Full: a fourth workspace takes one of B's idle connections.
    const d = fx.source({ workspaceId: "ws_d" });
    await runner.execute({ source: d, sql: "SELECT 1" });
    expect(b.reduce((n, s) => n + (runner.poolStats(s.id)?.totalCount ?? 0), 0)).toBe(2);
    await expect.poll(backends).toBe(6);
    await fx.admin("SELECT pg_advisory_unlock(4242)");
    await Promise.all(running);
  });

  test("a cap held by running statements refuses with host_connection_limit, naming no address", async () => {
    await fx.admin("SELECT pg_advisory_lock(4343)");
    const sources = Array.from({ length: 3 }, (_, i) => fx.source({ workspaceId: `ws_run${i}` }));
    const running = sources.flatMap((s) => [s, s]).map((s) => runner.execute({ source: s, sql: "SELECT pg_advisory_lock_shared(4343)" }));
    await expect
      .poll(async () => (await fx.admin("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rows[0].n)
      .toBe(6);
    const err = await rejection(runner.execute({ source: fx.source({ workspaceId: "ws_late" }), sql: "SELECT 1" }));
    expect(err.code).toBe("source_unavailable");
    expect(err.extra).toEqual({ cause: "host_connection_limit" });
    expect(err.detail).not.toContain(fx.host);
    await fx.admin("SELECT pg_advisory_unlock(4343)");
    await Promise.all(running);
  });
});
