import { describe, expect, test } from "vitest";
import { applyPanelDelta, type Cell, type PanelDeltaFrame, type QueryResult } from "../../lib/live/frames.ts";
import { mergeDelta, mergeResult } from "../lib/panel-window.ts";
import { RollingWindow } from "../lib/rolling-window.ts";
import { createIdleSettler, everyPanelReported, PanelData } from "./panel-data.ts";

const columns = [
  { name: "time", type: "timestamptz" },
  { name: "host", type: "text" },
  { name: "v", type: "float8" },
];
const result = (rows: Cell[][]): QueryResult => ({ columns, rows, truncated: false, elapsedMs: 1, stepMs: 10 });
const rowsAt = (t: number): Cell[][] => [
  [t, "a", t],
  [t, "b", -t],
];
const snapshot = result([...rowsAt(0), ...rowsAt(10), ...rowsAt(20)]);
const windowOf = (w: RollingWindow) => w.keys().map((k) => [k, [...w.get(k)]] as const);

describe("a live panel's data", () => {
  test("the first full result waits until the window is read; then it is the window merging gives", () => {
    const d = new PanelData(100, true);
    d.apply({ panelId: "p", at: 20, result: snapshot }, [0, 100]);
    expect(d.unsettled).toBe(true);
    const want = new RollingWindow(100);
    mergeResult(want, snapshot, [0, 100]);
    expect(windowOf(d.window)).toEqual(windowOf(want));
    expect(d.unsettled).toBe(false);
  });

  test("a tick on a waiting window merges the waiting result first, then the tick; a second full result too", () => {
    const d = new PanelData(100, true);
    d.apply({ panelId: "p", at: 20, result: snapshot }, [0, 100]);
    const delta: PanelDeltaFrame = { panelId: "p", at: 30, rangeStart: 10, bucketColumn: 0, buckets: [30], rows: rowsAt(30), elapsedMs: 1 };
    const next = applyPanelDelta(snapshot, delta);
    d.apply({ panelId: "p", at: 30, result: next }, [10, 110], delta);
    expect(d.unsettled).toBe(false);
    const want = new RollingWindow(100);
    mergeResult(want, snapshot, [0, 100]);
    mergeDelta(want, next, delta, [10, 110]);
    expect(windowOf(d.window)).toEqual(windowOf(want));
    const later = result(rowsAt(40));
    d.apply({ panelId: "p", at: 40, result: later }, [10, 110]);
    mergeResult(want, later, [10, 110]);
    expect(windowOf(d.window)).toEqual(windowOf(want));
    expect(d.last).toEqual({ panelId: "p", at: 40, result: later });
  });

  test("panels without a window (table, bar) only keep the last update; clear forgets everything", () => {
    const table = new PanelData(100, false);
    table.apply({ panelId: "t", at: 20, result: snapshot }, null);
    expect(table.unsettled).toBe(false);
    expect(table.window.size).toBe(0);
    const d = new PanelData(100, true);
    d.apply({ panelId: "p", at: 20, result: snapshot }, null);
    d.clear();
    expect(d.unsettled).toBe(false);
    expect(d.last).toBeNull();
    expect(d.window.size).toBe(0);
  });

  test("the idle settler merges one waiting window per idle callback until none is left", () => {
    const panels = [new PanelData(100, true), new PanelData(100, true), new PanelData(100, true)];
    panels[0]!.apply({ panelId: "a", at: 20, result: snapshot }, null);
    panels[2]!.apply({ panelId: "c", at: 20, result: snapshot }, null);
    const callbacks: (() => void)[] = [];
    const settle = createIdleSettler(
      () => panels,
      (f) => callbacks.push(f),
    );
    settle();
    settle();
    expect(callbacks).toHaveLength(1);
    callbacks.shift()!();
    expect(panels.map((p) => p.unsettled)).toEqual([false, false, true]);
    callbacks.shift()!();
    expect(panels.map((p) => p.unsettled)).toEqual([false, false, false]);
    callbacks.shift()!();
    expect(callbacks).toHaveLength(0);
    settle();
    expect(callbacks).toHaveLength(1);
  });
});

describe("everyPanelReported: when a paused view stops reading", () => {
  const reported = (id: string) => {
    const d = new PanelData(10, false);
    d.apply({ panelId: id, at: 1, error: { code: "function", message: "refused" } }, null);
    return d;
  };
  const waiting = () => new PanelData(10, true);
  test.each([
    ["no panel", [], [], true],
    [
      "every panel has a result or an error",
      [
        ["a", reported("a")],
        ["b", reported("b")],
      ],
      [],
      true,
    ],
    [
      "a new view's empty snapshot",
      [
        ["a", waiting()],
        ["b", waiting()],
      ],
      [],
      false,
    ],
    [
      "the first frame of a tick written in two parts",
      [
        ["a", reported("a")],
        ["b", waiting()],
      ],
      [],
      false,
    ],
    [
      "a snapshot whose other panels are taken in after its first frame",
      [
        ["a", reported("a")],
        ["b", waiting()],
      ],
      ["b"],
      true,
    ],
    [
      "a snapshot without one of the panels",
      [
        ["a", reported("a")],
        ["b", waiting()],
        ["c", waiting()],
      ],
      ["b"],
      false,
    ],
  ] as [string, [string, PanelData][], string[], boolean][])("%s", (_, panels, arriving, expected) => {
    expect(everyPanelReported(panels, new Set(arriving))).toBe(expected);
  });
});
