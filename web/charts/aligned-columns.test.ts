import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { type Point, RollingWindow } from "../lib/rolling-window.ts";
import { legendStats } from "../lib/value-format.ts";
import { AlignedColumns, type AlignedInput, seriesStats } from "./aligned-columns.ts";

/** The straightforward build the chart used before: a Set of times, a sort, an index Map, fresh columns. */
function reference(series: readonly AlignedInput[], stepMs: number | null, partialFrom: number | null) {
  const withGaps = series.map((s) => {
    const out: Point[] = [];
    s.points.forEach((p, i) => {
      out.push(p);
      const next = s.points[i + 1];
      if (stepMs && next && next[0] - p[0] > stepMs * 1.5) out.push([p[0] + stepMs, null]);
    });
    return out;
  });
  const sorted = [...new Set(withGaps.flatMap((pts) => pts.map((p) => p[0])))].sort((a, b) => a - b);
  const index = new Map(sorted.map((t, i) => [t, i]));
  const partial: (number | null)[] = [];
  const ys = withGaps.map((pts) => {
    const col = new Array<number | null | undefined>(sorted.length).fill(undefined);
    let pv: number | null = null;
    for (const [t, v] of pts) {
      if (partialFrom != null && t >= partialFrom) pv = v;
      else col[index.get(t)!] = v;
    }
    partial.push(pv);
    return col;
  });
  return { xs: sorted.map((t) => t / 1000), ys, partial };
}

const sortedPoints = fc
  .uniqueArray(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.option(fc.integer({ min: -50, max: 50 }), { nil: null })), {
    selector: (p) => p[0],
    maxLength: 25,
  })
  .map((pts) => pts.map(([t, v]) => [t * 1000, v] as Point).sort((a, b) => a[0] - b[0]));

describe("aligned columns", () => {
  test("a slide by one bucket: the oldest x goes, the newest comes, the same arrays are reused", () => {
    const cols = new AlignedColumns();
    const at = (from: number): AlignedInput[] =>
      ["a", "b"].map((key, s) => ({ key, points: Array.from({ length: 4 }, (_, i) => [(from + i) * 10_000, s * 10 + from + i] as Point) }));
    cols.sync(at(0), 10_000, null);
    const [xs, a] = [cols.data[0], cols.data[1]];
    expect(cols.xs).toEqual([0, 10, 20, 30]);
    cols.sync(at(1), 10_000, 40_000);
    expect(cols.data[0]).toBe(xs);
    expect(cols.data[1]).toBe(a);
    expect(cols.xs).toEqual([10, 20, 30, 40]);
    expect(cols.ys).toEqual([
      [1, 2, 3, undefined],
      [11, 12, 13, undefined],
    ]);
    expect(cols.partial).toEqual([4, 14]);
  });

  test("a missing bucket is a null one step after the last point; series without a sample there are undefined", () => {
    const cols = new AlignedColumns();
    cols.sync(
      [
        {
          key: "a",
          points: [
            [0, 1],
            [30_000, 4],
          ] as Point[],
        },
        { key: "b", points: [[10_000, 2]] as Point[] },
      ],
      10_000,
      null,
    );
    expect(cols.xs).toEqual([0, 10, 30]);
    expect(cols.ys).toEqual([
      [1, null, 4],
      [undefined, 2, undefined],
    ]);
  });

  test("property: the same columns as the straightforward build, over successive syncs of changing series", () => {
    const frame = fc.record({
      series: fc.array(sortedPoints, { maxLength: 4 }),
      step: fc.option(fc.constantFrom(1000, 2000, 5000), { nil: null }),
      partial: fc.option(
        fc.integer({ min: 0, max: 60 }).map((t) => t * 1000),
        { nil: null },
      ),
    });
    fc.assert(
      fc.property(fc.array(frame, { minLength: 1, maxLength: 5 }), (frames) => {
        const cols = new AlignedColumns();
        for (const f of frames) {
          const series = f.series.map((points, i) => ({ key: `s${i}`, points }));
          cols.sync(series, f.step, f.partial);
          const want = reference(series, f.step, f.partial);
          expect(cols.xs).toEqual(want.xs);
          expect(cols.ys).toEqual(want.ys);
          expect(cols.partial).toEqual(want.partial);
          expect(cols.data).toEqual([want.xs, ...want.ys]);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe("aligned columns merged again from the window's first changed time", () => {
  const keyOf = fc.constantFrom("a", "b", "c");
  const pointsAt = (lo: number, hi: number) =>
    fc
      .array(fc.tuple(fc.integer({ min: lo, max: hi }), fc.option(fc.integer({ min: -50, max: 50 }), { nil: null })), { maxLength: 8 })
      .map((pts) => pts.map(([t, v]) => [t * 1000, v] as Point));
  /** What happens to the window between two draws: results, ticks (the newest buckets, the oldest cut), cuts. */
  const op = fc.oneof(
    fc.record({ kind: fc.constant("merge" as const), key: keyOf, points: pointsAt(0, 80) }),
    fc.record({
      kind: fc.constant("tick" as const),
      keys: fc.subarray(["a", "b", "c"], { minLength: 1 }),
      value: fc.option(fc.integer({ min: -50, max: 50 }), { nil: null }),
      skip: fc.boolean(),
    }),
    fc.record({ kind: fc.constant("prune" as const), from: fc.integer({ min: 0, max: 80 }) }),
    fc.record({ kind: fc.constant("retain" as const), keys: fc.subarray(["a", "b", "c"]) }),
  );
  const round = fc.record({
    ops: fc.array(op, { maxLength: 4 }),
    draw: fc.boolean(),
    step: fc.constantFrom<number | null>(1000, 2000, null),
    partial: fc.option(fc.integer({ min: 0, max: 90 }), { nil: null }),
  });

  test("property: the same columns as a whole rebuild, over random windows and ticks", () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 30 }), fc.array(round, { minLength: 1, maxLength: 12 }), (max, rounds) => {
        const window = new RollingWindow(max);
        const cols = new AlignedColumns();
        let now = 40;
        for (const r of rounds) {
          for (const o of r.ops) {
            if (o.kind === "merge") window.merge(o.key, o.points);
            else if (o.kind === "prune") window.prune(o.from * 1000);
            else if (o.kind === "retain") window.retain(new Set(o.keys));
            else {
              // A tick: the bucket that was filling completes, a new one starts (or, skipped, a bucket is missing).
              now += o.skip ? 2 : 1;
              for (const key of o.keys)
                window.merge(key, [
                  [(now - 1) * 1000, o.value],
                  [now * 1000, o.value],
                ]);
              window.prune((now - 20) * 1000);
            }
          }
          if (!r.draw) continue;
          const series = window.keys().map((key) => ({ key, points: window.get(key) }));
          const partial = r.partial === null ? null : r.partial * 1000;
          cols.sync(series, r.step, partial, window.takeChangedFrom());
          const want = reference(series, r.step, partial);
          expect(cols.xs).toEqual(want.xs);
          expect(cols.ys).toEqual(want.ys);
          expect(cols.partial).toEqual(want.partial);
          expect(cols.data).toEqual([want.xs, ...want.ys]);
        }
      }),
      { numRuns: 2000 },
    );
  });

  test.each([
    {
      name: "a point inserted closes a gap opened by the point before the change (its null goes)",
      before: { a: [0, 5000], b: [1000, 6000] },
      merge: { a: [3000] },
      step: 2000,
      max: 10,
    },
    {
      name: "a series cut at its start while another keeps older points (its cells before its new start go)",
      before: { a: [0, 1000, 2000, 3000], b: [0, 2000, 4000] },
      merge: { a: [5000, 6000] },
      step: 1000,
      max: 4,
    },
    {
      name: "a dropped point's gap null was the only sample at its time (the entry goes)",
      before: { a: [0, 4000, 5000, 5500], b: [0, 1500, 3000, 4000] },
      merge: { a: [6000] },
      step: 1000,
      max: 4,
    },
  ])("$name", ({ before, merge, step, max }) => {
    const window = new RollingWindow(max);
    const pts = (ts: number[]) => ts.map((t) => [t, t / 1000] as Point);
    for (const [key, ts] of Object.entries(before)) window.merge(key, pts(ts));
    const series = () => window.keys().map((key) => ({ key, points: window.get(key) }));
    const cols = new AlignedColumns();
    cols.sync(series(), step, null, window.takeChangedFrom());
    for (const [key, ts] of Object.entries(merge)) window.merge(key, pts(ts));
    const changedFrom = window.takeChangedFrom();
    expect(changedFrom).toBeGreaterThan(0);
    cols.sync(series(), step, null, changedFrom);
    const want = reference(series(), step, null);
    expect(cols.xs).toEqual(want.xs);
    expect(cols.ys).toEqual(want.ys);
  });

  test("a tick merges again only its last buckets: the columns' arrays and their older cells stay", () => {
    const window = new RollingWindow(10);
    for (const key of ["a", "b"])
      window.merge(
        key,
        Array.from({ length: 10 }, (_, i) => [i * 1000, i] as Point),
      );
    const cols = new AlignedColumns();
    const series = () => window.keys().map((key) => ({ key, points: window.get(key) }));
    cols.sync(series(), 1000, 9000, window.takeChangedFrom());
    const xs = cols.xs;
    for (const key of ["a", "b"])
      window.merge(key, [
        [9000, 90],
        [10_000, 100],
      ]);
    const changedFrom = window.takeChangedFrom();
    expect(changedFrom).toBe(9000);
    cols.sync(series(), 1000, 10_000, changedFrom);
    expect(cols.xs).toBe(xs);
    expect(cols.xs).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(cols.ys[0]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 90, undefined]);
    expect(cols.partial).toEqual([100, 100]);
    expect(window.takeChangedFrom()).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("legend figures", () => {
  test("property: the figures of the complete buckets, as legendStats gives them over a filtered copy", () => {
    fc.assert(
      fc.property(
        sortedPoints,
        fc.option(
          fc.integer({ min: 0, max: 60 }).map((t) => t * 1000),
          { nil: null },
        ),
        (points, from) => {
          const want = legendStats(points.filter((p) => from === null || p[0] < from).map((p) => p[1]));
          expect(seriesStats(points, from, { last: true, spread: true })).toEqual(want);
          expect(seriesStats(points, from, { last: true, spread: false })).toEqual({ last: want.last, min: null, max: null, mean: null });
        },
      ),
    );
  });
});
