import { describe, expect, test } from "vitest";
import { pointsWarning, spanText } from "./result-notes.ts";

describe("spanText names a range as the range pickers do", () => {
  test.each([
    [86_400_000, "24 h"],
    [36 * 3_600_000, "36 h"],
    [2 * 86_400_000, "2 d"],
    [7 * 86_400_000, "7 d"],
    [6 * 3_600_000, "6 h"],
    [30 * 60_000, "30 min"],
    [90_000, "90 s"],
    [1_500, "1,500 ms"],
  ])("%d ms is %s", (ms, text) => {
    expect(spanText(ms)).toBe(text);
  });
});

describe("pointsWarning", () => {
  test("1-minute buckets over 24 h: 1,440 per series, 720 kept, said with the numbers and the fix", () => {
    expect(pointsWarning({ fromMs: 0, toMs: 86_400_000 }, 60_000, 720)).toEqual({
      pointsPerSeries: 1440,
      kept: 720,
      rangeMs: 86_400_000,
      stepMs: 60_000,
      message: "1,440 points per series over 24 h; 720 are kept (MAX_WINDOW_POINTS). Use $__interval or a coarser bucket.",
    });
  });

  test("no warning at or below the points kept", () => {
    expect(pointsWarning({ fromMs: 0, toMs: 12 * 3_600_000 }, 60_000, 720)).toBeUndefined();
    expect(pointsWarning({ fromMs: 0, toMs: 86_400_000 }, 300_000, 720)).toBeUndefined();
  });
});
