/**
 * A chart's columns sent to the chart worker as what changed since the last send. Cloning a chart's whole columns
 * into a message (a Float64Array of 5 x 720 cells) cost Chromium about 0.2 ms a chart on the page's thread, more than
 * tracing its lines; a tick changes a few cells: the oldest bucket goes from the start (every column shifts by one),
 * the last one or two change. So the page keeps the encoded columns it sent last (line-path.ts' encodeColumns: a gap
 * is GAP, no sample NaN), and each send is the shift of the start and the cells from the first one that differs;
 * the worker applies the deltas in order to its copy. A change that is not a shift (a zoom's new data, a rebuild)
 * is one delta of every cell.
 */
import { firstAtOrAfter } from "../lib/bisect.ts";
import { encodeColumns } from "./line-path.ts";

/** The columns' change: drop `cut` cells from every column's start, keep the first `from` of the rest, then `cells`. */
export interface ColumnsDelta {
  /** Columns (x, then one per series) and cells per column after the change. */
  count: number;
  length: number;
  cut: number;
  from: number;
  /** Per column, its cells `from` to `length`, column after column. */
  cells: Float64Array;
}

/** The page's side: what was sent last, and the delta to the columns now. */
export class ColumnsSender {
  private sent: Float64Array | null = null;
  private next: Float64Array | null = null;
  private count = 0;
  private length = 0;

  /** The delta from the columns sent last to `columns` (uPlot's), which are then the ones sent. */
  delta(columns: readonly ArrayLike<number | null | undefined>[]): ColumnsDelta {
    const count = columns.length;
    const length = columns[0]?.length ?? 0;
    const now = encodeColumns(columns, this.next);
    const before = this.sent;
    let cut = 0;
    let from = 0;
    if (before && count === this.count && this.length > 0 && length > 0) {
      // The new start among the old xs (sorted): found, the columns shifted by that many.
      const x0 = now[0]!;
      let k = firstAtOrAfter(before.subarray(0, this.length), x0);
      if (k >= this.length || before[k] !== x0) k = -1;
      if (k >= 0) {
        cut = k;
        from = Math.min(length, this.length - k);
        for (let c = 0; c < count && from > 0; c++) {
          const a = c * this.length + k;
          const b = c * length;
          let i = 0;
          while (i < from && same(before[a + i]!, now[b + i]!)) i++;
          from = i;
        }
      }
    }
    const cells = new Float64Array(count * (length - from));
    for (let c = 0, k = 0; c < count; c++) for (let i = from; i < length; i++) cells[k++] = now[c * length + i]!;
    this.next = before;
    this.sent = now;
    this.count = count;
    this.length = length;
    return { count, length, cut, from, cells };
  }

  /** The next delta is every cell (the worker's copy is gone: a new canvas). */
  reset(): void {
    this.sent = null;
    this.count = 0;
    this.length = 0;
  }
}

/** The worker's side: the columns as the deltas so far make them. */
export class ColumnsCopy {
  private cols: Float64Array[] = [];
  private length = 0;

  /** Applies `d` (the deltas in the order they were made). */
  apply(d: ColumnsDelta): void {
    const cut = Math.min(d.cut, this.length);
    const keep = Math.min(d.from, this.length - cut);
    const cols: Float64Array[] = [];
    for (let c = 0; c < d.count; c++) {
      let col = this.cols[c];
      if (!col || col.length < d.length) {
        const grown = new Float64Array(Math.max(16, Math.ceil(d.length * 1.25)));
        if (col) grown.set(col.subarray(cut, cut + keep));
        col = grown;
      } else if (cut > 0) col.copyWithin(0, cut, cut + keep);
      col.set(d.cells.subarray(c * (d.length - d.from), (c + 1) * (d.length - d.from)), d.from);
      cols.push(col);
    }
    this.cols = cols;
    this.length = d.length;
  }

  /** The columns, `length` cells each (views: valid until the next apply). */
  columns(): Float64Array[] {
    return this.cols.map((c) => c.subarray(0, this.length));
  }
}

function same(a: number, b: number): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}
