import { firstIndexAtOrAfter as firstRowAtOrAfter } from "../../lib/live/frames.ts";

/**
 * Binary searches over ascending times: the rolling windows' points (`[time, value]`), the aligned columns' times and
 * the chart's x values.
 */

/** The first index in [from, length) whose key is at or after `t`, for keys ascending in i; `length` when none. */
function firstIndexAtOrAfter(length: number, keyAt: (i: number) => number, t: number, from: number): number {
  let lo = from;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keyAt(mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The index of the first of the ascending `xs` at or after `x` (from `from` on); `xs.length` when none. */
export function firstAtOrAfter(xs: ArrayLike<number>, x: number, from = 0): number {
  return firstIndexAtOrAfter(xs.length, (i) => xs[i]!, x, from);
}

/** The index of the first of the time-sorted `points` at or after time `t`; `points.length` when none. */
export function firstPointAtOrAfter(points: readonly (readonly [number, ...unknown[]])[], t: number): number {
  // A point is a row whose time is its first cell: the results' own search.
  return firstRowAtOrAfter(points, 0, t);
}
