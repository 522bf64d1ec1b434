// The per-server connection budget under random sequences of takes, idles, busies and closes by several workspaces
// and sources (fast-check), checked against a model of the connections the test holds: the cap and each workspace's
// share always hold, a refusal happens only when no idle connection could be handed over, a running connection is
// never closed, and the connection closed for a newcomer is of the busiest workspace, then the busiest source.
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { type ConnectionLease, type SlotHolder, createConnectionBudget, workspaceShare } from "./pools.ts";

const SEED = 20261127;

type Op =
  | { kind: "acquire"; server: number; workspace: number; source: number; thenIdle: boolean }
  | { kind: "open"; i: number }
  | { kind: "idle"; i: number; idle: boolean }
  | { kind: "close"; i: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      server: fc.integer({ min: 0, max: 1 }),
      workspace: fc.integer({ min: 0, max: 2 }),
      source: fc.integer({ min: 0, max: 2 }),
      // A statement ran on the new connection and it went back to its pool (the common case).
      thenIdle: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("open" as const), i: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("idle" as const), i: fc.nat(), idle: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("close" as const), i: fc.nat() }) },
);

/** One connection the test holds: its slot, whether it is open (bound), idle in its pool, or closed. */
interface Conn {
  key: string;
  holder: SlotHolder;
  lease: ConnectionLease;
  open: boolean;
  idle: boolean;
  closed: boolean;
  /** Set when the budget closed it for another source. */
  reclaimed: boolean;
}

describe("connection budget under random use", () => {
  test("cap, share, refusals only when nothing idle can be handed over, running connections never closed, busiest first", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(op, { minLength: 30, maxLength: 120 }),
        (max, percent, ops) => {
          const budget = createConnectionBudget(max, percent);
          const share = workspaceShare(max, percent);
          const conns: Conn[] = [];
          const live = () => conns.filter((c) => !c.closed);
          const liveOn = (key: string) => live().filter((c) => c.key === key);
          const openConn = (c: Conn, idle: boolean) => {
            c.open = true;
            c.idle = idle;
            c.lease.bind(() => {
              // The budget's question to the pool: close this connection if it sits idle.
              if (c.closed || !c.idle) return false;
              c.reclaimed = true;
              return true;
            });
          };
          const pick = (i: number) => {
            const l = live();
            return l.length === 0 ? undefined : l[i % l.length];
          };

          for (const o of ops) {
            if (o.kind === "acquire") {
              const key = `server-${o.server}`;
              const holder = { workspaceId: `ws-${o.workspace}`, sourceId: `src-${o.workspace}-${o.source}` };
              const before = liveOn(key);
              const own = before.filter((c) => c.holder.workspaceId === holder.workspaceId);
              const idleOthers = before.filter((c) => c.open && c.idle && c.holder.sourceId !== holder.sourceId);
              const idleOwnOthers = idleOthers.filter((c) => c.holder.workspaceId === holder.workspaceId);
              const granted = budget.acquire(key, holder);
              const reclaimed = conns.filter((c) => c.reclaimed && !c.closed);
              if (typeof granted === "string") {
                expect(reclaimed).toEqual([]);
                if (granted === "workspace") {
                  expect(own.length).toBeGreaterThanOrEqual(share);
                  expect(idleOwnOthers).toEqual([]);
                } else {
                  expect(own.length).toBeLessThan(share);
                  expect(before.length).toBeGreaterThanOrEqual(max);
                  expect(idleOthers).toEqual([]);
                }
              } else {
                // At most one connection was closed to make room, and only when room was needed.
                expect(reclaimed.length).toBeLessThanOrEqual(1);
                const needed = own.length >= share || before.length >= max;
                expect(reclaimed.length).toBe(needed ? 1 : 0);
                const victim = reclaimed[0];
                if (victim) {
                  expect(victim.idle && victim.open).toBe(true);
                  expect(victim.key).toBe(key);
                  expect(victim.holder.sourceId).not.toBe(holder.sourceId);
                  // Past its share a workspace only takes from itself.
                  if (own.length >= share) expect(victim.holder.workspaceId).toBe(holder.workspaceId);
                  // No idle candidate was busier than the victim (its workspace's slots, then its source's).
                  const candidates = own.length >= share ? idleOwnOthers : idleOthers;
                  const weight = (c: Conn) => [
                    before.filter((x) => x.holder.workspaceId === c.holder.workspaceId).length,
                    before.filter((x) => x.holder.sourceId === c.holder.sourceId).length,
                  ];
                  const [vw, vs] = weight(victim);
                  for (const c of candidates) {
                    const [w, s] = weight(c);
                    expect(w > vw || (w === vw && s > vs)).toBe(false);
                  }
                  victim.closed = true;
                }
                const conn: Conn = { key, holder, lease: granted, open: false, idle: false, closed: false, reclaimed: false };
                conns.push(conn);
                if (o.thenIdle) openConn(conn, true);
              }
            } else if (o.kind === "open") {
              const c = pick(o.i);
              if (c && !c.open) openConn(c, false);
            } else if (o.kind === "idle") {
              const c = pick(o.i);
              if (c?.open) c.idle = o.idle;
            } else {
              const c = pick(o.i);
              if (c) {
                c.closed = true;
                c.lease.release();
                c.lease.release();
              }
            }
            for (const key of ["server-0", "server-1"]) {
              expect(budget.held(key)).toBe(liveOn(key).length);
              expect(budget.held(key)).toBeLessThanOrEqual(max);
              for (let w = 0; w < 3; w++) {
                const n = liveOn(key).filter((c) => c.holder.workspaceId === `ws-${w}`).length;
                expect(budget.held(key, `ws-${w}`)).toBe(n);
                expect(n).toBeLessThanOrEqual(share);
              }
            }
          }
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });

  test("the connection that takes the server's only slot from an idle one is counted (found by the property above)", () => {
    const budget = createConnectionBudget(1);
    const first = budget.acquire("s", { workspaceId: "A", sourceId: "a" });
    if (typeof first === "string") throw new Error(first);
    first.bind(() => true);
    expect(typeof budget.acquire("s", { workspaceId: "B", sourceId: "b" })).toBe("object");
    expect(budget.held("s")).toBe(1);
    // The cap is still 1: a third source finds the second one running (not bound as idle) and is refused.
    expect(budget.acquire("s", { workspaceId: "C", sourceId: "c" })).toBe("host");
  });

  test("a workspace's share is at least one slot, and below the whole cap whenever the cap is above one", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 100 }), (max, percent) => {
        const share = workspaceShare(max, percent);
        expect(share).toBeGreaterThanOrEqual(1);
        if (max > 1) expect(share).toBeLessThan(max);
        else expect(share).toBe(max);
        expect(share).toBeLessThanOrEqual(Math.max(1, Math.floor((max * percent) / 100)));
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });
});
