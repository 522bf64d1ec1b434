import { describe, expect, test } from "vitest";
import { chatResult, mergeResult } from "./panel-window.ts";
import type { ResultData } from "./result.ts";
import { RollingWindow } from "./rolling-window.ts";

const cols = [
  { name: "time", type: "timestamptz" },
  { name: "host", type: "text" },
  { name: "cpu", type: "float8" },
];
const result = (rows: unknown[][]): ResultData => ({ columns: cols, rows });

describe("live panel windows", () => {
  test("successive overlapping results keep at most MAX_WINDOW_POINTS per series", () => {
    const w = new RollingWindow(720);
    // 30 ticks, each re-running "last hour at 10 s" (360 points per host) one step later.
    for (let tick = 0; tick < 30; tick++) {
      const rows: unknown[][] = [];
      for (let i = 0; i < 360; i++) {
        const t = (tick + i) * 10_000;
        rows.push([t, "a", i], [t, "b", i * 2]);
      }
      mergeResult(w, result(rows), null);
    }
    expect(w.keys().sort()).toEqual(["a", "b"]);
    expect(w.get("a").length).toBe(389); // 30 ticks × 1 new point + 359 overlap, below the cap
    const small = new RollingWindow(50);
    mergeResult(small, result(Array.from({ length: 400 }, (_, i) => [i, "a", i])), null);
    expect(small.get("a").length).toBe(50);
    expect(small.get("a")[0][0]).toBe(350);
  });

  test("points before the range start are dropped; vanished series are removed", () => {
    const w = new RollingWindow(100);
    mergeResult(
      w,
      result([
        [1, "a", 1],
        [5, "a", 5],
        [5, "b", 9],
      ]),
      [0, 10],
    );
    mergeResult(w, result([[6, "a", 6]]), [4, 10]);
    expect(w.keys()).toEqual(["a"]);
    expect(w.get("a")).toEqual([
      [5, 5],
      [6, 6],
    ]);
  });

  test("a result without a time series empties the window", () => {
    const w = new RollingWindow(10);
    mergeResult(w, result([[1, "a", 1]]), null);
    mergeResult(w, { columns: [{ name: "n", type: "int8" }], rows: [[1]] }, null);
    expect(w.size).toBe(0);
  });
});

describe("results sent with a chat question", () => {
  test("newest rows only, flagged as truncated when cut", () => {
    const rows = Array.from({ length: 250 }, (_, i) => [i, "a", i]);
    const r = chatResult("p1", { result: result(rows) }, 100);
    expect(r.rows).toHaveLength(100);
    expect(r.rows![0][0]).toBe(150);
    expect(r.truncated).toBe(true);
    expect(chatResult("p1", { result: result(rows.slice(0, 3)) }).truncated).toBe(false);
  });

  test("errors and missing results", () => {
    expect(chatResult("p1", { error: { message: "boom" } })).toEqual({ panelId: "p1", error: "boom" });
    expect(chatResult("p1", null)).toEqual({ panelId: "p1", error: "no result yet" });
  });
});
