import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { type Box, encodeColumns, GAP, type Mapping, type PathSink, traceLine } from "./line-path.ts";

/** The columns of an encoded buffer as views: `count` columns of `length` cells. */
const decodeColumns = (buffer: Float64Array, count: number, length: number) =>
  Array.from({ length: count }, (_, c) => buffer.subarray(c * length, (c + 1) * length));

type Op = ["M" | "L", number, number];

const EVERYWHERE: Box = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };

function record(xs: number[], ys: (number | null | undefined)[], m: Mapping, i0 = 0, i1 = xs.length - 1): Op[] {
  const ops: Op[] = [];
  const sink: PathSink = { moveTo: (x, y) => ops.push(["M", x, y]), lineTo: (x, y) => ops.push(["L", x, y]) };
  traceLine(sink, xs, ys, i0, i1, m, EVERYWHERE);
  return ops;
}

/** The line drawn one vertex per point (what uPlot's linear builder draws): runs of rounded vertices split at nulls. */
function referenceRuns(xs: number[], ys: (number | null | undefined)[], m: Mapping): [number, number][][] {
  const runs: [number, number][][] = [];
  let run: [number, number][] | null = null;
  ys.forEach((v, i) => {
    if (v === undefined) return;
    if (v === null) {
      run = null;
      return;
    }
    if (!run) {
      run = [];
      runs.push(run);
    }
    run.push([Math.round(m.x0 + m.kx * xs[i]!), Math.round(m.y0 + m.ky * v)]);
  });
  return runs;
}

function tracedRuns(ops: Op[]): [number, number][][] {
  const runs: [number, number][][] = [];
  for (const [op, x, y] of ops) {
    if (op === "M") runs.push([[x, y]]);
    else runs.at(-1)!.push([x, y]);
  }
  return runs;
}

/**
 * What a 1 px line shows of a run: per pixel column in order, the y it enters at, the y it leaves at, and the span
 * it covers (the segments between columns join one column's exit to the next one's entry).
 */
function columns(run: [number, number][]): { x: number; first: number; last: number; min: number; max: number }[] {
  const out: { x: number; first: number; last: number; min: number; max: number }[] = [];
  for (const [x, y] of run) {
    const c = out.at(-1);
    if (c && c.x === x) {
      c.last = y;
      c.min = Math.min(c.min, y);
      c.max = Math.max(c.max, y);
    } else out.push({ x, first: y, last: y, min: y, max: y });
  }
  return out;
}

/** A cell of uPlot's columns: mostly a value, sometimes a gap (null) or no sample (undefined). */
const cell = fc.oneof(
  { weight: 8, arbitrary: fc.double({ min: -1000, max: 1000, noNaN: true }) },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

const IDENTITY: Mapping = { x0: 0, kx: 1, y0: 0, ky: 1 };

describe("traceLine", () => {
  test("one vertex per point on whole pixels, starting with a move", () => {
    expect(record([0, 1, 2], [5, 6.4, 6.6], IDENTITY)).toEqual([
      ["M", 0, 5],
      ["L", 1, 6],
      ["L", 2, 7],
    ]);
  });

  test("maps values with the mapping (y downwards, as on a canvas)", () => {
    const m: Mapping = { x0: 10 - 100 * 2, kx: 2, y0: 200, ky: -2 };
    expect(record([100, 101], [0, 50], m)).toEqual([
      ["M", 10, 200],
      ["L", 12, 100],
    ]);
  });

  test("a null breaks the line; an undefined cell is skipped and the line joins across it", () => {
    expect(record([0, 1, 2, 3, 4], [1, null, 3, undefined, 5], IDENTITY)).toEqual([
      ["M", 0, 1],
      ["M", 2, 3],
      ["L", 4, 5],
    ]);
  });

  test("the points of one pixel column become its entry, lowest, highest and exit", () => {
    const xs = [0, 0.1, 0.2, 0.3, 0.4, 1];
    expect(record(xs, [5, 9, 1, 7, 6, 4], IDENTITY)).toEqual([
      ["M", 0, 5],
      ["L", 0, 1],
      ["L", 0, 9],
      ["L", 0, 6],
      ["L", 1, 4],
    ]);
  });

  test("draws only from i0 to i1", () => {
    expect(record([0, 1, 2, 3], [1, 2, 3, 4], IDENTITY, 1, 2)).toEqual([
      ["M", 1, 2],
      ["L", 2, 3],
    ]);
  });

  test("property: the same pixels as one vertex per point (runs, columns, entries, exits and spans)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.double({ min: 0, max: 3, noNaN: true }), cell), { maxLength: 80 }),
        fc.double({ min: 0.05, max: 20, noNaN: true }),
        fc.double({ min: -5, max: 5, noNaN: true }),
        (steps, kx, ky) => {
          let t = 1_700_000_000;
          const xs = steps.map(([dt]) => (t += dt));
          const ys = steps.map(([, v]) => v);
          const m: Mapping = { x0: 40 - xs[0]! * kx, kx, y0: 300, ky };
          const traced = tracedRuns(record(xs, ys, m)).map(columns);
          const expected = referenceRuns(xs, ys, m).map(columns);
          expect(traced).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("says whether every vertex lies in the box (edges included)", () => {
    const box: Box = { left: 0, top: 0, right: 10, bottom: 10 };
    const inBox = (xs: number[], ys: (number | null)[]) => traceLine({ moveTo() {}, lineTo() {} }, xs, ys, 0, xs.length - 1, IDENTITY, box);
    expect(inBox([0, 5, 10], [0, 10, 5])).toBe(true);
    expect(inBox([-1, 5], [5, 5])).toBe(false);
    expect(inBox([5, 11], [5, 5])).toBe(false);
    expect(inBox([5, 6], [5, 10.6])).toBe(false);
    expect(inBox([5, 6], [-0.6, 5])).toBe(false);
    // A point inside a column drawn as a vertical run counts too.
    expect(inBox([5, 5.1, 5.2], [5, 20, 6])).toBe(false);
    // A null's position does not matter.
    expect(inBox([5, 50, 6], [5, null, 6])).toBe(true);
  });

  test("property: at most four vertices per pixel column and run", () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 100, noNaN: true }), { minLength: 1, maxLength: 200 }), (vals) => {
        const xs = vals.map((_, i) => i / 10);
        const runs = tracedRuns(record(xs, vals, IDENTITY));
        const perColumn = new Map<number, number>();
        for (const [x] of runs.flat()) perColumn.set(x, (perColumn.get(x) ?? 0) + 1);
        for (const n of perColumn.values()) expect(n).toBeLessThanOrEqual(4);
      }),
    );
  });
});

describe("encodeColumns", () => {
  test("a gap is GAP, no sample NaN, and the columns follow one another", () => {
    const buf = encodeColumns(
      [
        [1, 2, 3],
        [4, null, undefined],
      ],
      null,
    );
    const [xs, ys] = decodeColumns(buf, 2, 3);
    expect([...xs!]).toEqual([1, 2, 3]);
    expect(ys![0]).toBe(4);
    expect(ys![1]).toBe(GAP);
    expect(Number.isNaN(ys![2])).toBe(true);
  });

  test("reuses the buffer it is given when it is large enough", () => {
    const buf = encodeColumns([[1, 2, 3, 4]], null);
    expect(encodeColumns([[5, 6]], buf)).toBe(buf);
    expect(encodeColumns([[5, 6, 7, 8, 9, 10]], buf)).not.toBe(buf);
  });

  test("property: traced from the encoded columns, the line is the same as from uPlot's", () => {
    fc.assert(
      fc.property(fc.array(cell, { maxLength: 60 }), fc.double({ min: -5, max: 5, noNaN: true }), (ys, ky) => {
        const xs = ys.map((_, i) => i * 0.7);
        const m: Mapping = { x0: 3, kx: 1.3, y0: 200, ky };
        const [exs, eys] = decodeColumns(encodeColumns([xs, ys], null), 2, xs.length);
        const ops: Op[] = [];
        traceLine(
          { moveTo: (x, y) => ops.push(["M", x, y]), lineTo: (x, y) => ops.push(["L", x, y]) },
          exs!,
          eys!,
          0,
          xs.length - 1,
          m,
          EVERYWHERE,
        );
        expect(ops).toEqual(record(xs, ys, m));
      }),
      { numRuns: 300 },
    );
  });
});
