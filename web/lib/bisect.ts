import { firstIndexAtOrAfter as firstRowAtOrAfter, searchAtOrAfter } from "../../lib/live/frames.ts";

/**
 * Searches over ascending times (lib/live/frames.ts' searchAtOrAfter: galloping in from both ends, then bisecting):
 * the rolling windows' points (`[time, value]`), the aligned columns' times and the chart's x values.
 */

/** The index of the first of the ascending `xs` at or after `x` (from `from` on); `xs.length` when none. */
export function firstAtOrAfter(xs: ArrayLike<number>, x: number, from = 0): number {
  return searchAtOrAfter(xs.length, (i) => xs[i]!, x, from);
}

/** The index of the first of the time-sorted `points` at or after time `t`; `points.length` when none. */
export function firstPointAtOrAfter(points: readonly (readonly [number, ...unknown[]])[], t: number): number {
  // A point is a row whose time is its first cell: the results' own search.
  return firstRowAtOrAfter(points, 0, t);
}
