import fc from "fast-check";
import { describe, expect, test } from "vitest";
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
});
