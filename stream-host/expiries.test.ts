import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { createManualTimers } from "../lib/lifecycle/manual-timers.ts";
import { createExpiries } from "./expiries.ts";

function setup() {
  const clock = createManualTimers();
  const due: { item: string; at: number; now: number }[] = [];
  const expiries = createExpiries<string>({
    timers: clock.timers,
    now: clock.now,
    onDue: (item, at) => due.push({ item, at, now: clock.now() }),
  });
  return { clock, due, expiries };
}

describe("expiries on one timer", () => {
  test("items come due at their instant, in order, on a single pending timer", () => {
    const { clock, due, expiries } = setup();
    const t0 = clock.now();
    expiries.add("b", t0 + 2000);
    expiries.add("a", t0 + 1000);
    expiries.add("a2", t0 + 1000);
    expiries.add("c", t0 + 3000);
    expect(clock.pendingDelays()).toEqual([1000]);
    expect(expiries.size).toBe(4);

    clock.advance(999);
    expect(due).toEqual([]);
    clock.advance(1);
    expect(due.map((d) => d.item)).toEqual(["a", "a2"]);
    expect(due.every((d) => d.at === t0 + 1000 && d.now === t0 + 1000)).toBe(true);
    expect(clock.pendingDelays()).toEqual([1000]);

    clock.advance(2000);
    expect(due.map((d) => d.item)).toEqual(["a", "a2", "b", "c"]);
    expect(expiries.size).toBe(0);
    expect(clock.pendingDelays()).toEqual([]);
  });

  test("a removed item never comes due; removing the last leaves no timer; an earlier instant re-arms the timer", () => {
    const { clock, due, expiries } = setup();
    const t0 = clock.now();
    expiries.add("x", t0 + 5000);
    expiries.add("y", t0 + 5000);
    expiries.remove("x", t0 + 5000);
    expiries.remove("x", t0 + 5000);
    expiries.remove("nobody", t0 + 1);
    expect(expiries.size).toBe(1);
    expiries.add("early", t0 + 10);
    expect(clock.pendingDelays()).toEqual([10]);
    expiries.remove("early", t0 + 10);
    expect(clock.pendingDelays()).toEqual([5000]);
    expiries.remove("y", t0 + 5000);
    expect(clock.pendingDelays()).toEqual([]);
    clock.advance(10_000);
    expect(due).toEqual([]);
  });

  test("an instant beyond setTimeout's longest delay is re-armed until it comes", () => {
    const { clock, due, expiries } = setup();
    const far = clock.now() + 3 * 2_147_483_647;
    expiries.add("far", far);
    expect(clock.pendingDelays()).toEqual([2_147_483_647]);
    clock.advance(2 * 2_147_483_647);
    expect(due).toEqual([]);
    clock.advance(2_147_483_647);
    expect(due).toEqual([{ item: "far", at: far, now: far }]);
  });

  test("an item removed by another's onDue in the same instant is not handed over twice", () => {
    const clock = createManualTimers();
    const seen: string[] = [];
    const at = clock.now() + 100;
    const expiries = createExpiries<string>({
      timers: clock.timers,
      now: clock.now,
      onDue: (item) => {
        seen.push(item);
        expiries.remove(item === "p" ? "q" : "p", at);
      },
    });
    expiries.add("p", at);
    expiries.add("q", at);
    clock.advance(100);
    expect(seen.sort()).toEqual(["p", "q"]);
    expect(expiries.size).toBe(0);
  });

  test("property: whatever the adds and removes, each remaining item comes due once, not before its instant, and no timer is left", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("add" as const), item: fc.integer({ min: 0, max: 20 }), at: fc.integer({ min: 0, max: 50 }) }),
      fc.record({ kind: fc.constant("remove" as const), item: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 20 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const clock = createManualTimers(0);
        const scheduled = new Map<number, number>();
        const fired: { item: number; at: number; now: number }[] = [];
        const expected: { item: number; at: number }[] = [];
        const expiries = createExpiries<number>({
          timers: clock.timers,
          now: clock.now,
          onDue: (item, at) => fired.push({ item, at, now: clock.now() }),
        });
        const settle = () => {
          for (const [item, at] of [...scheduled]) {
            if (at <= clock.now()) {
              expected.push({ item, at });
              scheduled.delete(item);
            }
          }
        };
        for (const o of ops) {
          if (o.kind === "add") {
            if (scheduled.has(o.item)) continue;
            const at = clock.now() + 1 + o.at;
            scheduled.set(o.item, at);
            expiries.add(o.item, at);
          } else if (o.kind === "remove") {
            const at = scheduled.get(o.item);
            if (at === undefined) continue;
            scheduled.delete(o.item);
            expiries.remove(o.item, at);
          } else {
            clock.advance(o.ms);
            settle();
          }
          expect(expiries.size).toBe(scheduled.size);
        }
        clock.advance(100);
        settle();
        const key = (x: { item: number; at: number }) => `${x.at}:${x.item}`;
        expect(fired.map(key).sort()).toEqual(expected.map(key).sort());
        for (const f of fired) expect(f.now).toBeGreaterThanOrEqual(f.at);
        expect(clock.pendingDelays()).toEqual([]);
      }),
    );
  });
});
