/**
 * uPlot's aligned columns for a time series panel, kept across ticks. A tick used to rebuild them from the window's
 * points through a Set of times, a sort, a Map of indexes and fresh arrays per series (about a third of a chart's
 * update, and most of its garbage); here one linear merge of the series (each already sorted by the rolling window)
 * writes into the same arrays every time, so a steady tick allocates nothing in proportion to the window, and it runs
 * from the first time the window changed only (the rolling window's takeChangedFrom), the entries before it kept.
 */
import { firstAtOrAfter, firstPointAtOrAfter } from "../lib/bisect.ts";
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
  /** The times of xs in epoch ms (xs are seconds: t / 1000 may round two times to one). */
  private readonly ts: number[] = [];
  private cursors: number[] = [];
  private gapPending: boolean[] = [];
  /** What the last sync was given: its series' names, step and partial bucket (a change of any: a whole rebuild). */
  private keys: string[] = [];
  private step: number | null | undefined = undefined;
  private partialFrom: number | null | undefined = undefined;
  private synced = false;

  /** The next sync rebuilds the columns whole (its `changedFrom` is not relative to the last sync). */
  reset(): void {
    this.synced = false;
  }

  /**
   * Rewrites the columns in place from `series` (the step and the partial bucket as the frame says). `changedFrom`
   * (epoch ms, the rolling window's takeChangedFrom) says that every point before it is as the last sync saw it,
   * but for points dropped from a series' start: the columns are then kept up to there, their start cut to the new
   * one, and merged again from there only (a tick: the oldest bucket goes, the last one or two change). The result
   * is the same as a whole rebuild's (property-tested); -Infinity (the default) rebuilds them whole.
   */
  sync(
    series: readonly AlignedInput[],
    stepMs: number | null | undefined,
    partialFrom: number | null | undefined,
    changedFrom = Number.NEGATIVE_INFINITY,
  ): void {
    const n = series.length;
    let from = this.synced && this.sameShape(series, stepMs) ? changedFrom : Number.NEGATIVE_INFINITY;
    // The partial bucket's points are left out of the columns: a column before it is the same only below both the
    // last sync's start of it and this one's.
    if (partialFrom != null && partialFrom < from) from = partialFrom;
    if (this.partialFrom != null && this.partialFrom < from) from = this.partialFrom;
    this.step = stepMs;
    this.partialFrom = partialFrom;
    this.synced = true;
    if (this.keys.length !== n) this.keys.length = n;
    for (let s = 0; s < n; s++) this.keys[s] = series[s]!.key;
    while (this.ys.length < n) {
      // Born with tagged elements (a null, then emptied: an array's elements kind never narrows back). Chromium's V8
      // keeps a column of numbers and undefined as a double array (undefined as a special NaN), so every read of a
      // cell as a value (the line's tracing, uPlot's y range) boxed its number anew: 12 bytes a point drawn, about
      // 200 KB of garbage a tick on the bench's page. Tagged cells hold the points' own numbers and are read as is.
      const col: Cell[] = [null];
      col.length = 0;
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
    const gapAfter = stepMs && stepMs > 0 ? stepMs * 1.5 : Number.POSITIVE_INFINITY;
    const step = stepMs ?? 0;
    const k = from === Number.NEGATIVE_INFINITY ? 0 : this.keepBefore(series, from, gapAfter, step);
    if (k === 0) {
      for (let s = 0; s < n; s++) {
        this.cursors[s] = 0;
        this.gapPending[s] = false;
      }
    }
    for (let s = 0; s < n; s++) this.partial[s] = null;
    this.merge(series, k, gapAfter, step, partialFrom);
  }

  /** Whether the series' names (in order) and the step are the last sync's. */
  private sameShape(series: readonly AlignedInput[], stepMs: number | null | undefined): boolean {
    if (stepMs !== this.step || series.length !== this.keys.length) return false;
    for (let s = 0; s < series.length; s++) if (series[s]!.key !== this.keys[s]) return false;
    return true;
  }

  /**
   * Keeps the columns' entries before `changedFrom` (moved back to the last point before it in any series, whose
   * gap null depends on the point after it), with the entries before the series' new starts cut, and sets the
   * cursors to go on from there. Returns how many entries are kept (0: merge everything again).
   */
  private keepBefore(series: readonly AlignedInput[], changedFrom: number, gapAfter: number, step: number): number {
    const n = series.length;
    let from = changedFrom;
    let front = Number.POSITIVE_INFINITY;
    let lastStart = Number.NEGATIVE_INFINITY;
    for (let s = 0; s < n; s++) {
      const pts = series[s]!.points;
      if (pts.length === 0) return 0;
      const c = firstPointAtOrAfter(pts, changedFrom);
      if (c > 0 && pts[c - 1]![0] < from) from = pts[c - 1]![0];
      const start = pts[0]![0];
      if (start < front) front = start;
      if (start > lastStart) lastStart = start;
    }
    if (!(from > front)) return 0;
    const ts = this.ts;
    // Entries before the earliest start go; between it and the latest start, a series' cells before its own start
    // are emptied (its dropped points, and the gap nulls they had), and an entry left with no cell goes.
    const drop = firstAtOrAfter(ts, front);
    let keep = firstAtOrAfter(ts, from);
    const fixEnd = Math.min(keep, firstAtOrAfter(ts, lastStart));
    for (let k = fixEnd - 1; k >= drop; k--) {
      let any = false;
      for (let s = 0; s < n; s++) {
        const col = this.ys[s]!;
        if (ts[k]! < series[s]!.points[0]![0]) col[k] = undefined;
        else if (col[k] !== undefined) any = true;
      }
      if (!any) {
        ts.splice(k, 1);
        this.xs.splice(k, 1);
        for (const col of this.ys) col.splice(k, 1);
        keep--;
      }
    }
    if (drop > 0) {
      ts.splice(0, drop);
      this.xs.splice(0, drop);
      for (const col of this.ys) col.splice(0, drop);
      keep -= drop;
    }
    if (keep <= 0) return 0;
    for (let s = 0; s < n; s++) {
      const pts = series[s]!.points;
      const c = firstPointAtOrAfter(pts, from);
      this.cursors[s] = c;
      // The gap null after the point before `from` is still to come when it falls at or after `from`.
      this.gapPending[s] = c > 0 && c < pts.length && pts[c]![0] - pts[c - 1]![0] > gapAfter && pts[c - 1]![0] + step >= from;
    }
    return keep;
  }

  /** The linear merge from entry `k` on, the cursors and pending gaps set for it. */
  private merge(series: readonly AlignedInput[], k: number, gapAfter: number, step: number, partialFrom: number | null | undefined): void {
    const n = series.length;
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
      this.ts[k] = t;
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
    this.ts.length = k;
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
