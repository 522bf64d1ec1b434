import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { searchAtOrAfter } from "../../lib/live/frames.ts";
import { firstAtOrAfter, firstPointAtOrAfter } from "./bisect.ts";

// Long enough for the gallop from either end to run several steps before it bisects; duplicates included.
const sorted = fc.array(fc.integer({ min: -300, max: 300 }), { maxLength: 600 }).map((xs) => xs.sort((a, b) => a - b));

describe("searches over ascending times", () => {
  test("firstAtOrAfter is the first index at or after x from `from` on, as a linear scan finds it", () => {
    fc.assert(
      fc.property(sorted, fc.integer({ min: -310, max: 310 }), fc.nat(610), (xs, x, from0) => {
        const from = Math.min(from0, xs.length);
        let expected = from;
        while (expected < xs.length && xs[expected]! < x) expected++;
        expect(firstAtOrAfter(xs, x, from)).toBe(expected);
      }),
    );
  });

  test("firstPointAtOrAfter searches the points' times", () => {
    fc.assert(
      fc.property(sorted, fc.integer({ min: -310, max: 310 }), (ts, t) => {
        const points = ts.map((x) => [x, x * 2] as const);
        const expected = ts.findIndex((x) => x >= t);
        expect(firstPointAtOrAfter(points, t)).toBe(expected === -1 ? ts.length : expected);
      }),
    );
    expect(firstPointAtOrAfter([], 5)).toBe(0);
  });

  test("an answer a few entries from either end takes a few probes (a bisection of 100,000 takes 17); any other at most 8 more than a bisection", () => {
    const n = 100_000;
    const probes = (t: number) => {
      let count = 0;
      const at = searchAtOrAfter(
        n,
        (i) => {
          count++;
          return i;
        },
        t,
      );
      expect(at).toBe(Math.min(Math.max(Math.ceil(t), 0), n));
      return count;
    };
    for (const t of [0, 1, 3, n - 1, n - 3, n]) expect(probes(t)).toBeLessThanOrEqual(8);
    const bisection = Math.ceil(Math.log2(n + 1));
    fc.assert(fc.property(fc.integer({ min: -5, max: n + 5 }), (t) => probes(t) <= bisection + 8));
  });

  test("a NaN time is found where a bisection finds it: at `from`", () => {
    const xs = Array.from({ length: 16 }, (_, i) => i);
    expect(firstAtOrAfter(xs, Number.NaN)).toBe(0);
    expect(firstAtOrAfter(xs, Number.NaN, 5)).toBe(5);
  });
});
