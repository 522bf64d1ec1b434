import fc from "fast-check";
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
/** A fresh snapshot result each time: a panel's ticks change its result's rows in place. */
const snapshotOf = () => result([...rowsAt(0), ...rowsAt(10), ...rowsAt(20)]);
const snapshot = snapshotOf();
const windowOf = (w: RollingWindow) => w.keys().map((k) => [k, [...w.get(k)]] as const);

/** The property tests' ticks: generated, then played by steps() against a panel and a model. */
const hosts = ["a", "b", "c"];
const tickArb = fc.record({
  advance: fc.integer({ min: 0, max: 2 }),
  // Buckets relative to the newest held: re-sent (-2..0), new (1, 2), or before the range start (dropped).
  buckets: fc.uniqueArray(fc.integer({ min: -4, max: 2 }), { maxLength: 3 }),
  present: fc.array(fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), { minLength: 3, maxLength: 3 }),
  value: fc.integer(),
  partial: fc.boolean(),
  full: fc.integer({ min: 0, max: 9 }),
  // Whether the panel's ticks wait for its window's next read (a panel held below the fold), and whether the window
  // is read (drawn) after this tick.
  defer: fc.boolean(),
  read: fc.boolean(),
});
type GeneratedTick = typeof tickArb extends fc.Arbitrary<infer T> ? T : never;

const rowsOfBucket = (b: number, present: boolean[], v: number): Cell[][] =>
  hosts.flatMap((h, i) => (present[i] ? [[b * 10, h, v + i] as Cell[]] : []));
const initialRows = (buckets: number): Cell[][] =>
  Array.from({ length: buckets }, (_, b) => rowsOfBucket(b, [true, true, b % 2 === 0], b)).flat();

/**
 * The generated ticks as the stream sends them, after `buckets` initial buckets: each a delta frame, or now and then
 * a full result (the server's periodic full query), with the range it is for.
 */
function* steps(
  buckets: number,
  ticks: readonly GeneratedTick[],
): Generator<{ k: number; t: GeneratedTick; range: [number, number]; full?: Cell[][]; delta?: PanelDeltaFrame }> {
  let newest = buckets - 1;
  let rangeStart = 0;
  for (const [k, t] of ticks.entries()) {
    rangeStart += t.advance * 10;
    const range: [number, number] = [rangeStart, rangeStart + 1000];
    if (t.full === 0) {
      yield { k, t, range, full: rowsOfBucket(newest, [true, true, true], k) };
      continue;
    }
    const bs = t.buckets.map((x) => newest + x);
    newest = Math.max(newest, ...bs);
    const delta: PanelDeltaFrame = {
      panelId: "p",
      at: k,
      rangeStart,
      bucketColumn: 0,
      buckets: bs.map((b) => b * 10),
      rows: bs.flatMap((b, i) => rowsOfBucket(b, t.present[i]!, t.value)),
      elapsedMs: 1,
      ...(t.partial ? { partialFrom: newest * 10 } : {}),
    };
    yield { k, t, range, delta };
  }
}

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
    d.apply({ panelId: "p", at: 20, result: snapshotOf() }, [0, 100]);
    const delta: PanelDeltaFrame = { panelId: "p", at: 30, rangeStart: 10, bucketColumn: 0, buckets: [30], rows: rowsAt(30), elapsedMs: 1 };
    const next = applyPanelDelta(snapshot, delta);
    expect(d.applyDelta(delta, [10, 110])).toBe(true);
    expect(d.last).toEqual({ panelId: "p", at: 30, result: next });
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

  test("a tick without a result to apply it to is not taken", () => {
    const delta: PanelDeltaFrame = { panelId: "p", at: 30, rangeStart: 10, bucketColumn: 0, buckets: [30], rows: rowsAt(30), elapsedMs: 1 };
    const d = new PanelData(100, true);
    expect(d.applyDelta(delta, [10, 110])).toBe(false);
    expect(d.last).toBeNull();
    d.apply({ panelId: "p", at: 20, error: { code: "query_timeout", message: "too slow" } }, null);
    expect(d.applyDelta(delta, [10, 110])).toBe(false);
    expect(d.last).toEqual({ panelId: "p", at: 20, error: { code: "query_timeout", message: "too slow" } });
  });

  test("a tick changes the last result's rows in place; kept() is a copy the next ticks leave as it is", () => {
    const d = new PanelData(100, true);
    const first = snapshotOf();
    d.apply({ panelId: "p", at: 20, result: first }, [0, 100]);
    const tick = (t: number): PanelDeltaFrame => ({
      panelId: "p",
      at: t,
      rangeStart: t - 20,
      bucketColumn: 0,
      buckets: [t],
      rows: rowsAt(t),
      elapsedMs: 1,
    });
    d.applyDelta(tick(30), [10, 110]);
    const rows = (d.last as { result: QueryResult }).result.rows;
    expect(rows).toBe(first.rows);
    const kept = d.kept() as { result: QueryResult };
    const copy = structuredClone(kept);
    d.applyDelta(tick(40), [20, 120]);
    d.applyDelta(tick(50), [30, 130]);
    expect(kept).toEqual(copy);
    expect(kept.result.rows.map((r) => r[0])).toEqual([10, 10, 20, 20, 30, 30]);
    expect((d.last as { result: QueryResult }).result.rows).toBe(rows);
    expect(rows.map((r) => r[0])).toEqual([30, 30, 40, 40, 50, 50]);
    // An error has no rows to copy.
    d.apply({ panelId: "p", at: 60, error: { code: "query_timeout", message: "too slow" } }, null);
    expect(d.kept()).toEqual(d.last);
  });

  test("property: ticks taken in place leave the result and the window as copying each result and merging it did", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(tickArb, { maxLength: 20 }), fc.boolean(), (buckets, ticks, windowed) => {
        const initial = initialRows(buckets);
        const d = new PanelData(6, windowed);
        d.apply({ panelId: "p", at: 0, result: result(initial.map((r) => [...r])) }, [0, 1000]);
        let held = result(initial.map((r) => [...r]));
        const want = new RollingWindow(6);
        if (windowed) mergeResult(want, held, [0, 1000]);
        for (const { k, range, full, delta } of steps(buckets, ticks)) {
          if (full) {
            d.apply({ panelId: "p", at: k, result: result(full.map((r) => [...r])) }, range);
            held = result(full);
            if (windowed) mergeResult(want, held, range);
            continue;
          }
          expect(d.applyDelta(delta!, range)).toBe(true);
          held = applyPanelDelta(held, delta!);
          if (windowed) mergeDelta(want, held, delta!, range);
          expect(d.last).toEqual({ panelId: "p", at: k, result: held });
          expect(windowOf(d.window)).toEqual(windowOf(want));
          expect(d.window.partialFrom).toBe(want.partialFrom);
        }
      }),
      { numRuns: 300 },
    );
  });

  test("property: ticks merged as they arrive, or deferred to the window's next read and merged all at once, leave the window as merging the last result would (mergeResult)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(tickArb, { maxLength: 24 }), (buckets, ticks) => {
        const initial = initialRows(buckets);
        const d = new PanelData(6, true);
        d.apply({ panelId: "p", at: 0, result: result(initial.map((r) => [...r])) }, [0, 1000]);
        let held = result(initial.map((r) => [...r]));
        // The model: the window as of its last merge, and the range of the ticks taken since (none: up to date).
        const want = new RollingWindow(6);
        mergeResult(want, held, [0, 1000]);
        let unread: [number, number] | null = null;
        for (const { k, t, range, full, delta } of steps(buckets, ticks)) {
          if (full) {
            d.apply({ panelId: "p", at: k, result: result(full.map((r) => [...r])) }, range);
            if (unread) mergeResult(want, held, unread);
            unread = null;
            held = result(full);
            mergeResult(want, held, range);
          } else {
            d.deferTicks = t.defer;
            expect(d.applyDelta(delta!, range)).toBe(true);
            held = applyPanelDelta(held, delta!);
            unread = range;
            if (!t.defer) {
              mergeResult(want, held, unread);
              unread = null;
            }
          }
          expect(d.last).toEqual({ panelId: "p", at: k, result: held });
          if (!t.read) continue;
          if (unread) mergeResult(want, held, unread);
          unread = null;
          expect(windowOf(d.window)).toEqual(windowOf(want));
          expect(d.window.partialFrom).toBe(want.partialFrom);
        }
      }),
      { numRuns: 500 },
    );
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
