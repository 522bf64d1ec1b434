import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AppError } from "../http/errors.ts";
import { createManualTimers } from "../lifecycle/manual-timers.ts";
import { systemTimers } from "../lifecycle/timers.ts";
import { createLogger } from "../log/logger.ts";
import { listenerClientFactory } from "../store/listen.ts";
import { createTestConfigStore } from "../testing/pg.ts";
import {
  type Revocation,
  SESSION_REVOKED_CHANNEL,
  createRevocationSet,
  listenForRevocations,
  loadRevocations,
  parseRevocation,
  recordRevocation,
  withRevocations,
} from "./revocations.ts";
import { createSessionTokens } from "./session.ts";

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const log = createLogger({ silent: true });
const session = (sessionId: string, sub: string, issuedAt: number, expiresAt = issuedAt + HOUR) => ({
  sessionId,
  issuedAt,
  expiresAt,
  user: { sub },
});

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(() => store.close());

/** Polls `cond` (a LISTEN round trip through a real PostgreSQL needs real time). */
async function until(cond: () => boolean, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("the in-memory revocation set", () => {
  test("a session revocation matches that session id only", () => {
    const set = createRevocationSet({ now: () => T0, loaded: true });
    set.add({ kind: "session", sessionId: "s1", sub: "alice", expiresAt: T0 + HOUR });
    expect(set.isRevoked(session("s1", "alice", T0 - 1000))).toBe(true);
    expect(set.isRevoked(session("s2", "alice", T0 - 1000))).toBe(false);
  });

  test("a user revocation matches every session of that sub issued at or before revokedBefore, and no later one", () => {
    const set = createRevocationSet({ now: () => T0, loaded: true });
    set.add({ kind: "user", sub: "alice", revokedBefore: T0, expiresAt: T0 + HOUR });
    expect(set.isRevoked(session("a", "alice", T0 - 60_000))).toBe(true);
    expect(set.isRevoked(session("b", "alice", T0))).toBe(true);
    expect(set.isRevoked(session("c", "alice", T0 + 1000))).toBe(false);
    expect(set.isRevoked(session("d", "bob", T0 - 60_000))).toBe(false);
  });

  test("an older user revocation never narrows a newer one (notifications may arrive out of order)", () => {
    const set = createRevocationSet({ now: () => T0, loaded: true });
    set.add({ kind: "user", sub: "alice", revokedBefore: T0, expiresAt: T0 + HOUR });
    set.add({ kind: "user", sub: "alice", revokedBefore: T0 - 10_000, expiresAt: T0 + HOUR - 10_000 });
    expect(set.isRevoked(session("a", "alice", T0 - 5000))).toBe(true);
  });

  test("expired entries are not kept: they are dropped on the next add once a minute has passed", () => {
    const clock = { t: T0 };
    const set = createRevocationSet({ now: () => clock.t, loaded: true });
    set.add(
      { kind: "session", sessionId: "old", sub: "a", expiresAt: T0 + 1000 },
      { kind: "user", sub: "b", revokedBefore: T0, expiresAt: T0 + 1000 },
    );
    set.add({ kind: "session", sessionId: "gone-already", sub: "a", expiresAt: T0 - 1 });
    expect(set.size).toBe(2);
    clock.t = T0 + 61_000;
    set.add({ kind: "session", sessionId: "new", sub: "a", expiresAt: clock.t + HOUR });
    expect(set.size).toBe(1);
  });

  test("size counts only live entries: an entry stops counting once it expires, with no add in between", () => {
    const clock = { t: T0 };
    const set = createRevocationSet({ now: () => clock.t, loaded: true });
    set.add(
      { kind: "workspace", sub: "a", workspaceId: "ws_1", revokedBefore: T0, expiresAt: T0 + 1000 },
      { kind: "user", sub: "b", revokedBefore: T0, expiresAt: T0 + 5000 },
    );
    expect(set.size).toBe(2);
    clock.t = T0 + 1000;
    expect(set.size).toBe(1);
    clock.t = T0 + 5000;
    expect(set.size).toBe(0);
  });

  test("onChange runs after every add and after the first load", () => {
    const set = createRevocationSet({ now: () => T0 });
    let changes = 0;
    set.onChange(() => changes++);
    set.add({ kind: "session", sessionId: "s", sub: "a", expiresAt: T0 + HOUR });
    set.markLoaded();
    set.markLoaded();
    expect(changes).toBe(2);
    expect(set.loaded).toBe(true);
  });

  test("property: a session is revoked exactly when its id was revoked or its sub was revoked at or after it was issued", () => {
    const id = fc.constantFrom("s1", "s2", "s3");
    const sub = fc.constantFrom("alice", "bob");
    const revocation = fc.oneof(
      fc.record({ kind: fc.constant("session" as const), sessionId: id, sub, expiresAt: fc.constant(T0 + HOUR) }),
      fc.record({
        kind: fc.constant("user" as const),
        sub,
        revokedBefore: fc.integer({ min: T0 - HOUR, max: T0 }),
        expiresAt: fc.constant(T0 + 2 * HOUR),
      }),
    );
    fc.assert(
      fc.property(
        fc.array(revocation, { maxLength: 8 }),
        id,
        sub,
        fc.integer({ min: T0 - 2 * HOUR, max: T0 }),
        (rs, sid, who, issuedAt) => {
          const set = createRevocationSet({ now: () => T0, loaded: true });
          set.add(...(rs as Revocation[]));
          const expected = rs.some((r) => (r.kind === "session" ? r.sessionId === sid : r.sub === who && issuedAt <= r.revokedBefore));
          expect(set.isRevoked(session(sid, who, issuedAt))).toBe(expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("notification payloads", () => {
  test.each([
    ["not JSON", "{{"],
    ["an unknown kind", JSON.stringify({ kind: "all", expiresAt: 1 })],
    ["a session revocation without an id", JSON.stringify({ kind: "session", sub: "a", expiresAt: 1 })],
    ["a user revocation without revokedBefore", JSON.stringify({ kind: "user", sub: "a", expiresAt: 1 })],
    ["an oversized sub", JSON.stringify({ kind: "user", sub: "x".repeat(513), revokedBefore: 1, expiresAt: 2 })],
    ["a number", "42"],
  ])("%s is not a revocation", (_name, payload) => {
    expect(parseRevocation(payload)).toBeNull();
  });

  test("both kinds round-trip", () => {
    const rs: Revocation[] = [
      { kind: "session", sessionId: "s1", sub: "a", expiresAt: T0 },
      { kind: "user", sub: "a", revokedBefore: T0, expiresAt: T0 + HOUR },
    ];
    for (const r of rs) expect(parseRevocation(JSON.stringify(r))).toEqual(r);
  });
});

describe("the config store", () => {
  test("recorded revocations load back until they expire; expired rows are swept by the next write", async () => {
    const now = Date.now();
    const sub = `sweep-${now}`;
    await recordRevocation(store.pool, { kind: "session", sessionId: `${sub}-short`, sub, expiresAt: now + 1000 }, now);
    await recordRevocation(store.pool, { kind: "user", sub, revokedBefore: now, expiresAt: now + 1000 }, now);
    const loaded = (await loadRevocations(store.pool, now)).filter((r) => r.sub === sub);
    expect(loaded).toEqual(
      expect.arrayContaining([
        { kind: "session", sessionId: `${sub}-short`, sub, expiresAt: now + 1000 },
        { kind: "user", sub, revokedBefore: now, expiresAt: now + 1000 },
      ]),
    );
    // Two seconds later (by the writer's clock) both rows have expired: not loaded, and gone after one more write of each kind.
    const later = now + 2000;
    expect((await loadRevocations(store.pool, later)).filter((r) => r.sub === sub)).toEqual([]);
    await recordRevocation(store.pool, { kind: "session", sessionId: `${sub}-next`, sub: "other", expiresAt: later + HOUR }, later);
    await recordRevocation(store.pool, { kind: "user", sub: `${sub}-other`, revokedBefore: later, expiresAt: later + HOUR }, later);
    const rows = await store.pool.query(
      "SELECT session_id AS id FROM session_revocations WHERE session_id = $1 UNION ALL SELECT sub FROM user_session_revocations WHERE sub = $2",
      [`${sub}-short`, sub],
    );
    expect(rows.rows).toEqual([]);
  });

  test("a second user revocation of the same sub keeps the later revokedBefore", async () => {
    const now = Date.now();
    const sub = `twice-${now}`;
    await recordRevocation(store.pool, { kind: "user", sub, revokedBefore: now, expiresAt: now + HOUR }, now);
    await recordRevocation(store.pool, { kind: "user", sub, revokedBefore: now - 5000, expiresAt: now + HOUR - 5000 }, now);
    const mine = (await loadRevocations(store.pool, now)).filter((r) => r.sub === sub);
    expect(mine).toEqual([{ kind: "user", sub, revokedBefore: now, expiresAt: now + HOUR }]);
  });

  test("a revocation is announced on its channel with the revocation as the payload", async () => {
    const client = listenerClientFactory(store.url)();
    await client.connect();
    try {
      const got: string[] = [];
      client.on("notification", (m) => got.push(`${m.channel} ${m.payload}`));
      await client.query(`LISTEN ${SESSION_REVOKED_CHANNEL}`);
      const r: Revocation = { kind: "session", sessionId: `announce-${Date.now()}`, sub: "a", expiresAt: Date.now() + HOUR };
      await recordRevocation(store.pool, r, Date.now());
      await until(() => got.length > 0, "notification");
      expect(got).toEqual([`${SESSION_REVOKED_CHANNEL} ${JSON.stringify(r)}`]);
    } finally {
      await client.end();
    }
  });
});

describe("listenForRevocations", () => {
  test("loads what exists at start, then mirrors new revocations from any writer", async () => {
    const before: Revocation = { kind: "session", sessionId: `before-${Date.now()}`, sub: "a", expiresAt: Date.now() + HOUR };
    await recordRevocation(store.pool, before, Date.now());
    const set = createRevocationSet();
    const listener = listenForRevocations({ set, pool: store.pool, connect: listenerClientFactory(store.url), log });
    try {
      expect(set.loaded).toBe(false);
      await listener.start();
      await listener.ready;
      expect(set.loaded).toBe(true);
      expect(set.isRevoked(session(before.sessionId, "a", Date.now()))).toBe(true);

      const sub = `later-${Date.now()}`;
      await recordRevocation(store.pool, { kind: "user", sub, revokedBefore: Date.now(), expiresAt: Date.now() + HOUR }, Date.now());
      await until(() => set.isRevoked(session("x", sub, Date.now() - 1000)), "user revocation mirrored");
    } finally {
      await listener.close();
    }
  });

  test("after a lost connection it reconnects and reloads, so a revocation made meanwhile is not missed", async () => {
    const set = createRevocationSet();
    const appName = `revocation-test-${Date.now()}`;
    const connect = () => new pg.Client({ connectionString: store.url, application_name: appName });
    const listener = listenForRevocations({ set, pool: store.pool, connect, timers: systemTimers, log });
    try {
      await listener.start();
      await listener.ready;
      const killed = await store.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [
        appName,
      ]);
      expect(killed.rowCount).toBe(1);
      await until(() => !listener.connected, "listener notices the lost connection");
      const missed: Revocation = { kind: "session", sessionId: `missed-${Date.now()}`, sub: "a", expiresAt: Date.now() + HOUR };
      await recordRevocation(store.pool, missed, Date.now());
      await until(() => listener.connected, "listener reconnected");
      expect(set.isRevoked(session(missed.sessionId, "a", Date.now()))).toBe(true);
    } finally {
      await listener.close();
    }
  });
});

describe("withRevocations", () => {
  const SECRET = "revocation-test-secret-0123456789abcdef";

  test("a revoked session verifies as null; others are untouched", async () => {
    const tokens = createSessionTokens({ secret: SECRET, ttlSeconds: 600 });
    const set = createRevocationSet({ loaded: true });
    const guarded = withRevocations(tokens, set);
    const a = await tokens.mint({ sub: "a", groups: [] });
    const b = await tokens.mint({ sub: "a", groups: [] });
    const sa = (await tokens.verifySession(a))!;
    set.add({ kind: "session", sessionId: sa.sessionId, sub: "a", expiresAt: sa.expiresAt });
    expect(await guarded.verifySession(a)).toBeNull();
    expect(await guarded.verify(a)).toBeNull();
    expect(await guarded.verify(b)).toEqual({ sub: "a", groups: [] });
  });

  test("before the first load a valid token waits for it; if the load does not come in time it is a 503, never unchecked", async () => {
    const clock = createManualTimers(T0);
    /** Resolves once the check is waiting (its timeout is armed): token verification itself is asynchronous. */
    const armed = async () => {
      while (clock.pending === 0) await new Promise((r) => setImmediate(r));
    };
    const tokens = createSessionTokens({ secret: SECRET, ttlSeconds: 600, now: clock.now });
    const token = await tokens.mint({ sub: "a", groups: [] });
    const sid = (await tokens.verifySession(token))!.sessionId;

    const set = createRevocationSet({ now: clock.now });
    const guarded = withRevocations(tokens, set, { timers: clock.timers, waitMs: 1000 });
    expect(await guarded.verify("garbage")).toBeNull();
    const waiting = guarded.verifySession(token);
    await armed();
    clock.advance(999);
    // The load arrives in time, carrying this very session's revocation.
    set.add({ kind: "session", sessionId: sid, sub: "a", expiresAt: T0 + 600_000 });
    set.markLoaded();
    expect(await waiting).toBeNull();

    const never = withRevocations(tokens, createRevocationSet({ now: clock.now }), { timers: clock.timers, waitMs: 1000 });
    const refused = never.verifySession(token);
    await armed();
    clock.advance(1000);
    const err = await refused.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: "config_store_unavailable", status: 503, headers: { "retry-after": "5" } });
  });
});
