import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { ColumnsCopy, ColumnsSender } from "./columns-delta.ts";
import { encodeColumns } from "./line-path.ts";

/** The columns of an encoded buffer as views: `count` columns of `length` cells. */
const decodeColumns = (buffer: Float64Array, count: number, length: number) =>
  Array.from({ length: count }, (_, c) => buffer.subarray(c * length, (c + 1) * length));

type Cell = number | null | undefined;

/** A window of `n` buckets from bucket `start`, two series: the values a function of the bucket (so a shift keeps them). */
function windowAt(start: number, n: number, value: (t: number, s: number) => Cell): Cell[][] {
  const xs = Array.from({ length: n }, (_, i) => 1_700_000_000 + (start + i) * 60);
  return [xs, ...[0, 1].map((s) => xs.map((_, i) => value(start + i, s)))];
}

const encoded = (cols: Cell[][]) => [...encodeColumns(cols, null).subarray(0, cols.length * (cols[0]?.length ?? 0))];
const copied = (copy: ColumnsCopy) => copy.columns().flatMap((c) => [...c]);

describe("ColumnsSender and ColumnsCopy", () => {
  test("a tick (one bucket cut from the start, the last changed, one added) sends the shift and the last cells only", () => {
    const sender = new ColumnsSender();
    const copy = new ColumnsCopy();
    const v = (t: number, s: number) => t * 10 + s;
    const first = sender.delta(windowAt(0, 720, v));
    expect(first).toMatchObject({ count: 3, length: 720, cut: 0, from: 0 });
    copy.apply(first);
    // The bucket that was filling (the last) completed with another value, and a new one started.
    const next = windowAt(1, 720, (t, s) => (t === 719 ? 5 : v(t, s)));
    const d = sender.delta(next);
    expect(d).toMatchObject({ cut: 1, from: 718, length: 720 });
    expect(d.cells.length).toBe(3 * 2);
    copy.apply(d);
    expect(copied(copy)).toEqual(encoded(next));
  });

  test("a change that is no shift (new data) is every cell", () => {
    const sender = new ColumnsSender();
    sender.delta(windowAt(0, 10, () => 1));
    expect(sender.delta(windowAt(100, 10, () => 1))).toMatchObject({ cut: 0, from: 0 });
    // Another series count: every cell too.
    expect(sender.delta([[1, 2, 3]])).toMatchObject({ cut: 0, from: 0, count: 1 });
  });

  test("after reset the next delta is every cell", () => {
    const sender = new ColumnsSender();
    sender.delta(windowAt(0, 10, () => 1));
    sender.reset();
    expect(sender.delta(windowAt(1, 10, () => 1))).toMatchObject({ cut: 0, from: 0, length: 10 });
  });

  test("property: the worker's copy is the page's columns after any sequence of windows, gaps and missing samples", () => {
    const cell = fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: -50, max: 50 }) },
      { weight: 1, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.constant(undefined) },
    );
    const step = fc.record({
      shift: fc.integer({ min: -3, max: 12 }),
      grow: fc.integer({ min: -5, max: 5 }),
      // Cells rewritten anywhere (a late sample, a gap filled), as index and value.
      edits: fc.array(fc.tuple(fc.nat(), fc.nat(1), cell), { maxLength: 6 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 30 }), fc.array(step, { minLength: 1, maxLength: 12 }), (n0, steps) => {
        const sender = new ColumnsSender();
        const copy = new ColumnsCopy();
        const values = new Map<string, Cell>();
        const value = (t: number, s: number) => (values.has(`${t}:${s}`) ? values.get(`${t}:${s}`) : t % 7 === 3 ? undefined : t * 3 + s);
        let start = 0;
        let n = n0;
        for (const st of steps) {
          start += st.shift;
          n = Math.max(0, n + st.grow);
          for (const [i, s, v] of st.edits) if (n > 0) values.set(`${start + (i % n)}:${s}`, v);
          const cols = windowAt(start, n, value);
          copy.apply(sender.delta(cols));
          expect(copied(copy)).toEqual(encoded(cols));
        }
      }),
      { numRuns: 300 },
    );
  });

  test("the copy's columns decode as the encoded ones do", () => {
    const cols = windowAt(0, 4, (t) => (t === 2 ? null : t));
    const copy = new ColumnsCopy();
    copy.apply(new ColumnsSender().delta(cols));
    const [xs, ys] = copy.columns();
    const [exs, eys] = decodeColumns(encodeColumns(cols, null), 3, 4);
    expect([...xs!]).toEqual([...exs!]);
    expect([...ys!]).toEqual([...eys!]);
  });
});
