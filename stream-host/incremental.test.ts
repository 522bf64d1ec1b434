import { describe, expect, it } from "vitest";
import type { Panel } from "../lib/dashboards/spec.ts";
import type { Cell, PanelUpdate, QueryResult } from "../lib/live/frames.ts";
import { applyPanelDelta } from "../lib/live/frames.ts";
import type { HeldListener } from "../lib/query/runner.ts";
import { createIncrementalPanels } from "./incremental.ts";
import type { LoadedDashboard, PlanPanel, RunPanel, TickRange } from "./poller.ts";

const STEP = 60_000;
const panel: Panel = {
  id: "p",
  title: "P",
  type: "timeseries",
  sourceId: "s",
  sql: "SELECT $__timeGroup(ts, '1m') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1",
};
const dashboard: LoadedDashboard = {
  id: "d",
  workspaceId: "w",
  version: 1,
  spec: { title: "D", time: { from: "now-1h", to: "now" }, panels: [panel] },
};
const signal = new AbortController().signal;

/** A metrics table in memory: a count per minute bucket of the event times in [from, to]. */
function fakeSource() {
  const events: number[] = [];
  const calls: { range: TickRange; window?: TickRange; onHeld?: HeldListener }[] = [];
  let fail = false;
  let truncateNext = false;
  const run: RunPanel = async (_p, _d, range, _s, window, onHeld) => {
    calls.push({ range, window, onHeld });
    if (fail) throw new Error("source down");
    const w = window ?? range;
    const counts = new Map<number, number>();
    for (const t of events)
      if (t >= w.fromMs && t <= w.toMs) counts.set(Math.floor(t / STEP) * STEP, (counts.get(Math.floor(t / STEP) * STEP) ?? 0) + 1);
    const rows: Cell[][] = [...counts.entries()].sort((a, b) => a[0] - b[0]).map(([b, n]) => [b, n]);
    const truncated = truncateNext;
    truncateNext = false;
    return {
      columns: [
        { name: "t", type: "timestamptz" },
        { name: "count", type: "int8" },
      ],
      rows,
      truncated,
      elapsedMs: 1,
      stepMs: STEP,
    };
  };
  const plan: PlanPanel = async () => ({ ok: true, bucketColumn: 0, step: { kind: "fixed", stepMs: STEP, originMs: 0 } });
  return {
    events,
    calls,
    run,
    plan,
    failNext: (v: boolean) => {
      fail = v;
    },
    truncate: () => {
      truncateNext = true;
    },
  };
}

function update(result: QueryResult, at: number): PanelUpdate {
  return { panelId: panel.id, at, result };
}

describe("incremental panels of one view", () => {
  it("hands the poller's held listener to every run it makes, full and incremental", async () => {
    const src = fakeSource();
    const inc = createIncrementalPanels(src, { lateRowsMs: 5_000, fullEvery: 100, maxWindowPoints: 720, maxRows: 5_000 });
    const now = 10 * 3_600_000 + 12_345;
    for (let t = now - 3_600_000; t <= now; t += 7_000) src.events.push(t);
    const onHeld: HeldListener = () => {};
    await inc.run(panel, dashboard, { fromMs: now - 3_600_000, toMs: now }, signal, undefined, onHeld);
    await inc.run(panel, dashboard, { fromMs: now - 3_600_000 + 60_000, toMs: now + 60_000 }, signal, undefined, onHeld);
    // One full query, then the incremental tick's two windows.
    expect(src.calls.map((c) => c.window !== undefined)).toEqual([false, true, true]);
    expect(src.calls.every((c) => c.onHeld === onHeld)).toBe(true);
  });

  it("queries in full first, then only the cut first bucket and the newest, and the deltas rebuild the full result", async () => {
    const src = fakeSource();
    const inc = createIncrementalPanels(src, { lateRowsMs: 5_000, fullEvery: 100, maxWindowPoints: 720, maxRows: 5_000 });
    let now = 10 * 3_600_000 + 12_345;
    for (let t = now - 3_600_000; t <= now; t += 7_000) src.events.push(t);
    const first = await inc.run(panel, dashboard, { fromMs: now - 3_600_000, toMs: now }, signal);
    expect(src.calls.at(-1)?.window).toBeUndefined();
    expect(inc.deltaFor(update(first, now))).toBeUndefined();
    let held = first.rows;
    for (let i = 0; i < 20; i++) {
      now += 5_000;
      src.events.push(now - 1_000, now - 4_000);
      const calls = src.calls.length;
      const r = await inc.run(panel, dashboard, { fromMs: now - 3_600_000, toMs: now }, signal);
      expect(src.calls.length - calls).toBe(2);
      expect(src.calls.slice(calls).every((c) => c.window !== undefined)).toBe(true);
      const delta = inc.deltaFor(update(r, now));
      if (!delta) throw new Error("expected a delta");
      held = applyPanelDelta({ ...first, rows: held }, delta).rows;
      const full = await src.run(panel, dashboard, { fromMs: now - 3_600_000, toMs: now }, signal);
      expect(r.rows).toEqual(full.rows);
      expect(held).toEqual(full.rows);
      // A delta carries what changed: a bucket or two, not the hour.
      expect(delta.rows.length).toBeLessThanOrEqual(3);
    }
  });

  it("runs the full query after an error, on its schedule, after a cut result and for a new spec version", async () => {
    const src = fakeSource();
    const inc = createIncrementalPanels(src, { lateRowsMs: 0, fullEvery: 3, maxWindowPoints: 720, maxRows: 5_000 });
    let now = 3_600_000 * 5;
    const tick = async (d: LoadedDashboard = dashboard) => {
      now += 10_000;
      const before = src.calls.length;
      await inc.run(panel, d, { fromMs: now - 3_600_000, toMs: now }, signal);
      return src.calls.slice(before).some((c) => c.window === undefined) ? "full" : "incremental";
    };
    expect(await tick()).toBe("full");
    expect(await tick()).toBe("incremental");
    expect(await tick()).toBe("incremental");
    expect(await tick()).toBe("full");
    src.failNext(true);
    await expect(tick()).rejects.toThrow("source down");
    src.failNext(false);
    // The full query after the error comes back cut by a limit: the next tick runs in full again.
    src.truncate();
    expect(await tick()).toBe("full");
    expect(await tick()).toBe("full");
    expect(await tick()).toBe("incremental");
    expect(await tick({ ...dashboard, version: 2 })).toBe("full");
  });

  it("never ticks incrementally when the plan refuses or the range length changed", async () => {
    const src = fakeSource();
    const inc = createIncrementalPanels(
      { run: src.run, plan: async () => ({ ok: false, reason: "a window function" }) },
      { lateRowsMs: 0, fullEvery: 100, maxWindowPoints: 720, maxRows: 5_000 },
    );
    await inc.run(panel, dashboard, { fromMs: 0, toMs: 3_600_000 }, signal);
    await inc.run(panel, dashboard, { fromMs: 10_000, toMs: 3_610_000 }, signal);
    expect(src.calls.every((c) => c.window === undefined)).toBe(true);

    const src2 = fakeSource();
    const inc2 = createIncrementalPanels(src2, { lateRowsMs: 0, fullEvery: 100, maxWindowPoints: 720, maxRows: 5_000 });
    await inc2.run(panel, dashboard, { fromMs: 0, toMs: 3_600_000 }, signal);
    await inc2.run(panel, dashboard, { fromMs: 0, toMs: 3_610_000 }, signal);
    expect(src2.calls.every((c) => c.window === undefined)).toBe(true);
  });
});
