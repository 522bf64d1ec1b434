import { describe, expect, test } from "vitest";
import { type PanelUpdate, splitSnapshot } from "../../lib/live/frames.ts";
import { takeSnapshotPanels } from "./snapshot-intake.ts";

const dashboard = { id: "d", version: 1, title: "T", refreshIntervalMs: 5000, time: { from: "now-1h", to: "now" }, panels: [] };
const view = { from: "now-1h", to: "now", refreshMs: 5000, vars: {}, live: true, saved: true };
const update = (panelId: string, rows: unknown[][] = [[1, 2]]): PanelUpdate => ({
  panelId,
  at: 1,
  result: { columns: [{ name: "time", type: "timestamptz" }], rows: rows as never, truncated: false, elapsedMs: 1 },
});
const wire = (panels: PanelUpdate[]) => JSON.stringify({ dashboard, view, panels });

/** Runs takeSnapshotPanels, holding `later` until the test releases it. */
function take(panels: PanelUpdate[], order: string[]) {
  const applied: string[] = [];
  let held: (() => void) | null = null;
  const taken = takeSnapshotPanels(splitSnapshot(wire(panels))!, order, {
    apply: (u) => applied.push(u.panelId),
    later: (fn) => {
      held = fn;
    },
  });
  return { applied, release: () => held?.(), flush: () => taken.flush() };
}

describe("takeSnapshotPanels", () => {
  test("the first laid-out panel at once, the others after its frame, in layout order, then those the layout does not name", () => {
    const t = take([update("a"), update("b"), update("c"), update("d")], ["c", "x", "a", "b"]);
    expect(t.applied).toEqual(["c"]);
    t.release();
    expect(t.applied).toEqual(["c", "a", "b", "d"]);
  });

  test("flush takes the others at once (a frame came before the next paint), once: the later call then does nothing", () => {
    const t = take([update("a"), update("b"), update("c")], ["a", "b", "c"]);
    t.flush();
    expect(t.applied).toEqual(["a", "b", "c"]);
    t.release();
    t.flush();
    expect(t.applied).toEqual(["a", "b", "c"]);
  });

  test("one panel: nothing is left for later", () => {
    const t = take([update("a")], ["a"]);
    expect(t.applied).toEqual(["a"]);
  });

  test("a piece that does not parse: every panel from the whole parse", () => {
    const hostile = [[1, [{ x: 1 }, { panelId: "z", at: 1, error: {} }]]];
    const t = take([update("a"), update("b", hostile), update("c")], ["a", "b", "c"]);
    expect(t.applied).toEqual(["a"]);
    t.release();
    expect(t.applied).toEqual(["a", "a", "b", "c"]);
  });
});
