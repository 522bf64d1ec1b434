import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { type Point, RollingWindow } from "./rolling-window.ts";

describe("rolling window", () => {
  test("caps every series at maxPoints, dropping the oldest", () => {
    const w = new RollingWindow(5);
    w.merge(
      "a",
      Array.from({ length: 8 }, (_, i) => [i * 1000, i] as Point),
    );
    w.merge("b", [[0, 1]]);
    expect(w.get("a").map((p) => p[0])).toEqual([3000, 4000, 5000, 6000, 7000]);
    expect(w.get("b")).toEqual([[0, 1]]);
    w.merge("a", [
      [8000, 8],
      [9000, 9],
    ]);
    expect(w.get("a").map((p) => p[1])).toEqual([5, 6, 7, 8, 9]);
  });

  test("an overlapping newer result replaces values at the same time and extends the series", () => {
    const w = new RollingWindow(100);
    w.merge("s", [
      [1, 10],
      [2, 20],
      [3, 30],
    ]);
    w.merge("s", [
      [3, 33],
      [2, 22],
      [4, 40],
    ]);
    expect(w.get("s")).toEqual([
      [1, 10],
      [2, 22],
      [3, 33],
      [4, 40],
    ]);
  });

  test("duplicate times within one result keep the last; non-finite times are dropped; nulls stay as gaps", () => {
    const w = new RollingWindow(10);
    w.merge("s", [
      [5, 1],
      [5, 2],
      [Number.NaN, 3],
      [6, null],
    ]);
    expect(w.get("s")).toEqual([
      [5, 2],
      [6, null],
    ]);
  });

  test("prune drops points before the range start and empty series; retain drops vanished series", () => {
    const w = new RollingWindow(10);
    w.merge("a", [
      [1, 1],
      [5, 5],
      [9, 9],
    ]);
    w.merge("b", [[2, 2]]);
    w.prune(5);
    expect(w.get("a")).toEqual([
      [5, 5],
      [9, 9],
    ]);
    expect(w.keys()).toEqual(["a"]);
    w.merge("c", [[10, 1]]);
    w.retain(new Set(["c"]));
    expect(w.keys()).toEqual(["c"]);
    expect(w.size).toBe(1);
  });

  test("rejects a non-positive cap", () => {
    expect(() => new RollingWindow(0)).toThrow(RangeError);
  });

  // Batches in any order, and batches sorted by time (with repeated times) that often land after the held points
  // (the bulk copy of a new series or a newer tail).
  const point = fc.tuple(fc.integer({ min: 0, max: 500 }), fc.option(fc.integer(), { nil: null }));
  const sortedBatch = fc
    .tuple(
      fc.integer({ min: 0, max: 500 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.option(fc.integer(), { nil: null })), { maxLength: 60 }),
    )
    .map(([start, steps]) => {
      const out: [number, number | null][] = [];
      let t = start;
      for (const [d, v] of steps) {
        t += d;
        out.push([t, v]);
      }
      return out;
    });
  test.each([
    ["any order", fc.array(point, { maxLength: 60 })],
    ["sorted", sortedBatch],
  ])("property: after any sequence of merges (%s), each series is sorted, unique in time and within the cap", (_, batch) => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.array(batch, { maxLength: 20 }), (cap, batches) => {
        const w = new RollingWindow(cap);
        const latest = new Map<number, number | null>();
        for (const batch of batches) {
          w.merge("s", batch as Point[]);
          for (const [t, v] of batch) latest.set(t, v);
        }
        const got = w.get("s");
        expect(got.length).toBeLessThanOrEqual(cap);
        for (let i = 1; i < got.length; i++) expect(got[i][0]).toBeGreaterThan(got[i - 1][0]);
        // What is kept is the newest `cap` times, each with its latest value.
        const times = [...latest.keys()].sort((a, b) => a - b).slice(-cap);
        expect(got.map((p) => p[0])).toEqual(times);
        for (const [t, v] of got) expect(v).toBe(latest.get(t));
      }),
    );
  });

  test("property: takeChangedFrom says from when points changed; before it only a series' start was cut", () => {
    const key = fc.constantFrom("a", "b", "c");
    const points = fc
      .array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.option(fc.integer({ min: -9, max: 9 }), { nil: null })), { maxLength: 6 })
      .map((pts) => pts.map(([t, v]) => [t * 1000, v] as Point));
    const op = fc.oneof(
      fc.record({ kind: fc.constant("merge" as const), key, points }),
      fc.record({ kind: fc.constant("prune" as const), from: fc.integer({ min: 0, max: 60 }) }),
      fc.record({ kind: fc.constant("retain" as const), keys: fc.subarray(["a", "b", "c"]) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(fc.array(op, { maxLength: 4 }), { maxLength: 8 }), (cap, rounds) => {
        const w = new RollingWindow(cap);
        expect(w.takeChangedFrom()).toBe(Number.NEGATIVE_INFINITY);
        for (const ops of rounds) {
          const before = new Map(w.keys().map((k) => [k, [...w.get(k)]]));
          for (const o of ops) {
            if (o.kind === "merge") w.merge(o.key, o.points);
            else if (o.kind === "prune") w.prune(o.from * 1000);
            else w.retain(new Set(o.keys));
          }
          const from = w.takeChangedFrom();
          if (from === Number.NEGATIVE_INFINITY) continue;
          expect(w.keys().sort()).toEqual([...before.keys()].sort());
          for (const k of w.keys()) {
            const now = w.get(k);
            const start = now.length > 0 ? now[0]![0] : Number.POSITIVE_INFINITY;
            expect(now.filter((p) => p[0] < from)).toEqual(before.get(k)!.filter((p) => p[0] < from && p[0] >= start));
          }
        }
      }),
      { numRuns: 1000 },
    );
  });
});
