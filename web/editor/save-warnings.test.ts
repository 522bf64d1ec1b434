import { describe, expect, test } from "vitest";
import { createSaveWarnings, type PanelPointsWarning, savedWarningsText, warningsOf } from "./save-warnings.ts";

const w = (panelId: string, pointsPerSeries = 1440): PanelPointsWarning => ({
  panelId,
  pointsPerSeries,
  kept: 720,
  rangeMs: 86_400_000,
  stepMs: 60_000,
  message: `${pointsPerSeries} points per series over 24 h; 720 are kept. Use $__interval or a coarser bucket.`,
});

describe("warningsOf a save's answer", () => {
  test.each([
    ["no warnings field (an older server)", { id: "d", version: 2 }, []],
    ["an empty list", { warnings: [] }, []],
    ["not a list", { warnings: "many" }, []],
    ["null", null, []],
    [
      "entries without panelId or message are left out",
      { warnings: [w("a"), { panelId: 3, message: "x" }, { panelId: "b" }, null] },
      [w("a")],
    ],
  ])("%s", (_name, answer, expected) => {
    expect(warningsOf(answer)).toEqual(expected);
  });
});

describe("the warnings shown next to panels", () => {
  test("a save's warnings show per panel; dismiss hides one; the next save replaces them all", () => {
    const s = createSaveWarnings();
    s.saved([w("cpu"), w("mem", 2880)]);
    expect(s.of("cpu")?.pointsPerSeries).toBe(1440);
    expect(s.of("mem")?.pointsPerSeries).toBe(2880);
    expect(s.of("disk")).toBeUndefined();
    s.dismiss("cpu");
    expect(s.of("cpu")).toBeUndefined();
    expect(s.shown(["cpu", "mem"]).map((x) => x.panelId)).toEqual(["mem"]);
    s.saved([]);
    expect(s.shown(["cpu", "mem"])).toEqual([]);
  });

  test("a warning of a panel removed from the spec is not counted as shown, in the spec's panel order", () => {
    const s = createSaveWarnings();
    s.saved([w("b"), w("gone"), w("a")]);
    expect(s.shown(["a", "b"]).map((x) => x.panelId)).toEqual(["a", "b"]);
  });

  test("the save notice names how many panels warn", () => {
    expect(savedWarningsText(0)).toBe("");
    expect(savedWarningsText(1)).toMatch(/^ One panel .*warning on it\.$/);
    expect(savedWarningsText(3)).toMatch(/^ 3 panels /);
  });
});
