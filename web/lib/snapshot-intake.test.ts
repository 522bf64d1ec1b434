import { describe, expect, test } from "vitest";
import { type PanelUpdate, splitSnapshot } from "../../lib/live/frames.ts";
import { createEarlySnapshotIntake, MAX_EARLY_READS, takeSnapshotPanels } from "./snapshot-intake.ts";

const dashboard = { id: "d", version: 1, title: "T", refreshIntervalMs: 5000, time: { from: "now-1h", to: "now" }, panels: [] };
const view = { from: "now-1h", to: "now", refreshMs: 5000, vars: {}, live: true, saved: true };
const update = (panelId: string, rows: unknown[][] = [[1, 2]]): PanelUpdate => ({
  panelId,
  at: 1,
  result: { columns: [{ name: "time", type: "timestamptz" }], rows: rows as never, truncated: false, elapsedMs: 1 },
});
const wire = (panels: PanelUpdate[]) => JSON.stringify({ dashboard, view, panels });

/** Runs takeSnapshotPanels, holding `later` until the test releases it. */
function take(panels: PanelUpdate[], order: string[], takenEarly: ReadonlySet<string> = new Set()) {
  const applied: string[] = [];
  let held: (() => void) | null = null;
  const taken = takeSnapshotPanels(
    splitSnapshot(wire(panels))!,
    order,
    {
      apply: (u) => applied.push(u.panelId),
      later: (fn) => {
        held = fn;
      },
    },
    takenEarly,
  );
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

  test("panels taken while the event arrived are not taken again; the others all wait for the next paint", () => {
    const t = take([update("a"), update("b"), update("c")], ["b", "a", "c"], new Set(["b"]));
    expect(t.applied).toEqual([]);
    t.release();
    expect(t.applied).toEqual(["a", "c"]);
  });

  test("a piece that does not parse after an early take: the whole parse, but for the panel taken", () => {
    const hostile = [[1, [{ x: 1 }, { panelId: "z", at: 1, error: {} }]]];
    const t = take([update("a"), update("b", hostile), update("c")], ["a", "b", "c"], new Set(["a"]));
    t.release();
    expect(t.applied).toEqual(["b", "c"]);
  });
});

describe("createEarlySnapshotIntake", () => {
  /** Feeds the intake the event's data cut at each given length, as chunks arrive. */
  function arrive(panels: PanelUpdate[], order: string[], cuts: number[]) {
    const data = wire(panels);
    const heads: unknown[] = [];
    const applied: PanelUpdate[] = [];
    let reads = 0;
    const intake = createEarlySnapshotIntake({ head: (h) => heads.push(h), order: () => order, apply: (u) => applied.push(u) });
    const took: boolean[] = [];
    for (const n of cuts)
      took.push(
        intake.partial("snapshot", () => {
          reads++;
          return data.slice(0, n);
        }),
      );
    return { data, heads, applied, intake, reads: () => reads, took };
  }
  const cutAfter = (data: string, id: string) => data.indexOf(`{"panelId":"${id}"`) + '{"panelId":'.length;

  test("the head once, then the first laid-out panel as soon as a cut follows it; nothing read after that", () => {
    const panels = [update("a", [[1, 1]]), update("b", [[2, 2]]), update("c", [[3, 3]])];
    const data = wire(panels);
    const t = arrive(panels, ["b", "a", "c"], [10, data.indexOf('"panels":[') + 12, cutAfter(data, "b"), cutAfter(data, "c"), data.length]);
    expect(t.heads).toEqual([{ dashboard, view }]);
    expect(t.applied).toEqual([panels[1]]);
    // It says when it took the panel (the stream client then lets the frame that draws it run).
    expect(t.took).toEqual([false, false, false, true, false]);
    expect(t.reads()).toBe(4);
    expect([...t.intake.finish()]).toEqual(["b"]);
    // Ready for the next event.
    expect([...t.intake.finish()]).toEqual([]);
  });

  test("other events, a first panel whose piece does not parse, and a reset take nothing", () => {
    const hostile = [[1, [{ x: 1 }, { panelId: "z", at: 1, error: {} }]]];
    const panels = [update("a", hostile), update("b")];
    const data = wire(panels);
    const t = arrive(panels, ["a", "b"], [data.length]);
    expect(t.applied).toEqual([]);
    expect([...t.intake.finish()]).toEqual([]);
    const other = arrive([update("a"), update("b")], ["a", "b"], []);
    other.intake.partial("panel", () => wire([update("a"), update("b")]));
    expect(other.applied).toEqual([]);
    const cut = arrive([update("a"), update("b")], ["a", "b"], [cutAfter(wire([update("a"), update("b")]), "b")]);
    expect(cut.applied.map((u) => u.panelId)).toEqual(["a"]);
    cut.intake.reset();
    expect([...cut.intake.finish()]).toEqual([]);
  });

  test("a first panel late in the event is left to the whole event after a bounded number of reads", () => {
    const panels = [update("a"), update("b")];
    const t = arrive(
      panels,
      ["z"],
      Array.from({ length: MAX_EARLY_READS + 5 }, (_, i) => 40 + i),
    );
    expect(t.reads()).toBe(MAX_EARLY_READS);
    expect(t.applied).toEqual([]);
  });
});
