import { describe, expect, test } from "vitest";
import { linear, niceTicks, timeTicks, valueDomain } from "./scale.ts";

describe("scales", () => {
  test("nice ticks cover the data with round steps", () => {
    expect(niceTicks(3, 57, 5)).toEqual([0, 20, 40, 60]);
    expect(niceTicks(0, 1, 4)).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(niceTicks(5, 5, 4).length).toBeGreaterThan(1);
    expect(niceTicks(Number.NaN, 1)).toEqual([]);
  });

  test("value domain includes zero for non-negative data", () => {
    expect(valueDomain([3, 57])).toEqual([0, 60]);
    expect(valueDomain([-5, -1])).toEqual([-6, 0]);
    expect(valueDomain([])).toEqual([0, 1]);
  });

  test("time ticks fall on round steps inside the range", () => {
    const from = Date.UTC(2026, 0, 1, 10, 7);
    const to = from + 3_600_000;
    const ticks = timeTicks(from, to, 6);
    expect(ticks.every((t) => t >= from && t <= to && t % 600_000 === 0)).toBe(false); // 15 min step
    expect(ticks.every((t) => t % 900_000 === 0)).toBe(true);
    expect(ticks.length).toBe(4);
    expect(timeTicks(5, 5)).toEqual([]);
  });

  test("linear maps domain to range", () => {
    const f = linear([0, 10], [100, 0]);
    expect(f(0)).toBe(100);
    expect(f(5)).toBe(50);
    expect(linear([1, 1], [0, 10])(1)).toBe(0);
  });
});
