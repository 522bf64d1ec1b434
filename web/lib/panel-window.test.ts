import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { applyPanelDelta, type Cell, type QueryResult } from "../../lib/live/frames.ts";
import { chatResult, mergeDelta, mergeResult } from "./panel-window.ts";
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

describe("incremental ticks (panel-delta frames)", () => {
  const STEP = 10;
  const full = (rows: Cell[][], extra: Partial<QueryResult> = {}): QueryResult => ({
    columns: cols,
    rows,
    truncated: false,
    elapsedMs: 1,
    ...extra,
  });
  const windowOf = (w: RollingWindow) => w.keys().map((k) => [k, w.get(k)] as const);

  test("the newest bucket of every series merges from the delta's rows alone, as the whole result would", () => {
    const rows: Cell[][] = [];
    for (let t = 0; t < 5; t++) rows.push([t * STEP, "a", t], [t * STEP, "b", -t]);
    let held = full(rows, { stepMs: STEP, partialFrom: 4 * STEP });
    const a = new RollingWindow(100);
    const b = new RollingWindow(100);
    mergeResult(a, held, [0, 100]);
    mergeResult(b, held, [0, 100]);
    // The partial bucket completes, a new one starts, b misses it (a gap would follow), the range moves on.
    const delta = {
      bucketColumn: 0,
      buckets: [40, 50],
      rows: [
        [40, "a", 4.5],
        [40, "b", -4.5],
        [50, "a", 5],
      ] as Cell[][],
      rangeStart: 10,
    };
    held = applyPanelDelta(held, { ...delta, elapsedMs: 1, stepMs: STEP, partialFrom: 50 });
    mergeResult(a, held, [10, 110]);
    mergeDelta(b, held, delta, [10, 110]);
    expect(windowOf(b)).toEqual(windowOf(a));
    expect(b.get("a").at(-1)).toEqual([50, 5]);
    expect(b.partialFrom).toBe(50);
  });

  test("property: any sequence of deltas leaves the window as merging each whole result does", () => {
    const hosts = ["a", "b", "c"];
    const rowsOf = (bucket: number, present: boolean[], values: (number | null)[]): Cell[][] =>
      hosts.flatMap((h, i) => (present[i] ? [[bucket * STEP, h, values[i] ?? null] as Cell[]] : []));
    const bucketRows = fc.tuple(
      fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      fc.array(fc.option(fc.integer(), { nil: null }), { minLength: 3, maxLength: 3 }),
    );
    const tick = fc.record({
      advance: fc.integer({ min: 0, max: 3 }),
      // Buckets re-sent relative to the newest: 0 is the newest held, 1 the next, -1 the one before.
      buckets: fc.uniqueArray(fc.integer({ min: -3, max: 2 }), { maxLength: 4 }),
      rows: fc.array(bucketRows, { minLength: 4, maxLength: 4 }),
      partial: fc.boolean(),
      cap: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(bucketRows, { minLength: 1, maxLength: 12 }),
        fc.array(tick, { maxLength: 15 }),
        fc.boolean(),
        (initial, ticks, withStep) => {
          const step = withStep ? { stepMs: STEP } : {};
          const rows = initial.flatMap(([present, values], b) => rowsOf(b, present, values));
          let held = full(rows, step);
          let newest = initial.length - 1;
          let rangeStart = 0;
          const a = new RollingWindow(ticks.some((t) => t.cap) ? 6 : 100);
          const b = new RollingWindow(a.maxPoints);
          mergeResult(a, held, [0, 1000]);
          mergeResult(b, held, [0, 1000]);
          for (const t of ticks) {
            rangeStart += t.advance * STEP;
            const buckets = t.buckets.map((d) => newest + d).filter((x) => x * STEP >= rangeStart);
            const deltaRows = buckets.flatMap((x, i) => rowsOf(x, t.rows[i]![0], t.rows[i]![1]));
            newest = Math.max(newest, ...buckets);
            const delta = { bucketColumn: 0, buckets: buckets.map((x) => x * STEP), rows: deltaRows, rangeStart };
            held = applyPanelDelta(held, { ...delta, elapsedMs: 1, ...step, ...(t.partial ? { partialFrom: newest * STEP } : {}) });
            const range: [number, number] = [rangeStart, rangeStart + 1000];
            mergeResult(a, held, range);
            mergeDelta(b, held, delta, range);
            expect(windowOf(b)).toEqual(windowOf(a));
            expect(b.partialFrom).toBe(a.partialFrom);
          }
        },
      ),
      { numRuns: 300 },
    );
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
