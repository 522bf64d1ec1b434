import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { Point } from "../lib/rolling-window.ts";
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
