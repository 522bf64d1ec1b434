/**
 * uPlot's aligned columns for a time series panel, kept across ticks. A tick used to rebuild them from the window's
 * points through a Set of times, a sort, a Map of indexes and fresh arrays per series (about a third of a chart's
 * update, and most of its garbage); here one linear merge of the series (each already sorted by the rolling window)
 * writes into the same arrays every time, so a steady tick allocates nothing in proportion to the window.
 */
import type { Point } from "../lib/rolling-window.ts";

/** A series as the chart receives it: its name and its points sorted by time (the rolling window's). */
export interface AlignedInput {
  key: string;
  points: readonly Point[];
}

/** A column value: a number, null for a gap (the line breaks), undefined for "no sample at this x". */
export type Cell = number | null | undefined;

/**
 * x in seconds (uPlot's time unit) and one column per series: the union of the series' times, plus a null one step
 * after each point followed by a missing bucket when the step is known (a gap drawn as a gap). Points of the bucket
 * still filling (at or after `partialFrom`) keep their x but are left out of the columns: the chart draws them
 * apart, and `partial` holds each series' value there.
 */
export class AlignedColumns {
  readonly xs: number[] = [];
  readonly ys: Cell[][] = [];
  /** Per series, its value in the bucket still filling (null: none). */
  readonly partial: (number | null)[] = [];
  /** uPlot's data array: [xs, ...ys], the same arrays across syncs. */
  readonly data: [number[], ...Cell[][]] = [this.xs];
  private cursors: number[] = [];
  private gapPending: boolean[] = [];

  /** Rewrites the columns in place from `series` (the step and the partial bucket as the frame says). */
  sync(series: readonly AlignedInput[], stepMs: number | null | undefined, partialFrom: number | null | undefined): void {
    const n = series.length;
    while (this.ys.length < n) {
      const col: Cell[] = [];
      this.ys.push(col);
      this.data.push(col);
    }
    if (this.ys.length > n) {
      this.ys.length = n;
      this.data.length = n + 1;
    }
    this.partial.length = n;
    this.cursors.length = n;
    this.gapPending.length = n;
    for (let s = 0; s < n; s++) {
      this.partial[s] = null;
      this.cursors[s] = 0;
      this.gapPending[s] = false;
    }
    const gapAfter = stepMs && stepMs > 0 ? stepMs * 1.5 : Number.POSITIVE_INFINITY;
    const step = stepMs ?? 0;
    let k = 0;
    for (;;) {
      // The earliest time any series has next (a pending gap null comes before that series' next point).
      let t = Number.POSITIVE_INFINITY;
      for (let s = 0; s < n; s++) {
        const pts = series[s]!.points;
        const c = this.cursors[s]!;
        const next = this.gapPending[s] ? pts[c - 1]![0] + step : c < pts.length ? pts[c]![0] : Number.POSITIVE_INFINITY;
        if (next < t) t = next;
      }
      if (t === Number.POSITIVE_INFINITY) break;
      this.xs[k] = t / 1000;
      for (let s = 0; s < n; s++) {
        const pts = series[s]!.points;
        const col = this.ys[s]!;
        const c = this.cursors[s]!;
        if (this.gapPending[s]) {
          col[k] = undefined;
          if (pts[c - 1]![0] + step === t) {
            this.gapPending[s] = false;
            if (partialFrom != null && t >= partialFrom) this.partial[s] = null;
            else col[k] = null;
          }
          continue;
        }
        const p = c < pts.length ? pts[c] : undefined;
        if (p === undefined || p[0] !== t) {
          col[k] = undefined;
          continue;
        }
        if (partialFrom != null && t >= partialFrom) {
          this.partial[s] = p[1];
          col[k] = undefined;
        } else col[k] = p[1];
        this.cursors[s] = c + 1;
        const after = c + 1 < pts.length ? pts[c + 1] : undefined;
        if (after !== undefined && after[0] - t > gapAfter) this.gapPending[s] = true;
      }
      k++;
    }
    this.xs.length = k;
    for (const col of this.ys) col.length = k;
  }
}

/** The legend's figures of one series over its complete buckets (before `partialFrom`), without copying them. */
export function seriesStats(
  points: readonly Point[],
  partialFrom: number | null | undefined,
  want: { last: boolean; spread: boolean },
): { last: number | null; min: number | null; max: number | null; mean: number | null } {
  let end = points.length;
  if (partialFrom != null) while (end > 0 && points[end - 1]![0] >= partialFrom) end--;
  let last: number | null = null;
  if (want.last) {
    for (let i = end - 1; i >= 0 && last === null; i--) {
      const v = points[i]![1];
      if (v !== null && Number.isFinite(v)) last = v;
    }
  }
  if (!want.spread) return { last, min: null, max: null, mean: null };
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let sum = 0;
  let count = 0;
  for (let i = 0; i < end; i++) {
    const v = points[i]![1];
    if (v === null || !Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    count++;
  }
  return count === 0 ? { last, min: null, max: null, mean: null } : { last, min, max, mean: sum / count };
}
