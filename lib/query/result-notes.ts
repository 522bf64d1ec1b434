import type { PointsWarning, QueryResult, Truncation } from "../live/frames.ts";
import { type TimeShape, bucketStart, intervalMs } from "./time-shape.ts";
import type { TimeRange } from "./types.ts";

const count = (n: number) => n.toLocaleString("en-US");

/**
 * A range's length in the largest unit that divides it, as the range pickers name it: "24 h", "30 min", "7 d",
 * "90 s". Days from two on, so a day reads "24 h" (now-24h, the default range).
 */
export function spanText(ms: number): string {
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["min", 60_000],
    ["s", 1_000],
  ] as const) {
    if (unit === "d" && ms < 2 * size) continue;
    if (ms >= size && ms % size === 0) return `${count(ms / size)} ${unit}`;
  }
  return `${count(ms)} ms`;
}

/** What MAX_QUERY_ROWS cut, and how to fix it. `newest`: the runner had the newest rows returned first. */
export function rowsTruncation(kept: number, maxRows: number, newest: boolean): Truncation {
  return newest
    ? {
        limit: "MAX_QUERY_ROWS",
        kept,
        end: "newest",
        message: `More than MAX_QUERY_ROWS (${count(maxRows)}) rows: the newest ${count(kept)} are shown and older ones are cut. Use $__interval or a coarser bucket, or a shorter range.`,
      }
    : {
        limit: "MAX_QUERY_ROWS",
        kept,
        end: "first",
        message: `More than MAX_QUERY_ROWS (${count(maxRows)}) rows: the first ${count(kept)} in the statement's order are shown and the rest are cut. Order by the time column, use $__interval or a coarser bucket, or aggregate further.`,
      };
}

/** The warning when a step gives more points per series over the range than the browser keeps. */
export function pointsWarning(range: TimeRange, stepMs: number, maxPoints: number): PointsWarning | undefined {
  const rangeMs = range.toMs - range.fromMs;
  const points = Math.ceil(rangeMs / stepMs);
  if (points <= maxPoints) return undefined;
  return {
    pointsPerSeries: points,
    kept: maxPoints,
    rangeMs,
    stepMs,
    message: `${count(points)} points per series over ${spanText(rangeMs)}; ${count(maxPoints)} are kept (MAX_WINDOW_POINTS). Use $__interval or a coarser bucket.`,
  };
}

/**
 * The step in ms of a shaped statement as run with `values` (the `$__interval` bind value when the step is
 * that macro); undefined when it does not bucket or the width is not fixed.
 */
export function stepMsOf(shape: TimeShape | null, values: readonly (string | null)[]): number | undefined {
  if (!shape?.step) return undefined;
  if ("ms" in shape.step) return shape.step.ms;
  const v = values[shape.step.param - 1];
  return typeof v === "string" ? (intervalMs(v) ?? undefined) : undefined;
}

/**
 * Adds what a time-bucketed result is to it: the step, the still-filling bucket (the bucket holding the
 * range's end, when it ends after `wallNow`) and the points-per-series warning.
 */
export function withBuckets(
  result: QueryResult,
  shape: TimeShape | null,
  stepMs: number | undefined,
  range: TimeRange,
  opts: { maxPoints: number; wallNow: number },
): QueryResult {
  if (!shape || stepMs === undefined || !(stepMs > 0)) return result;
  const out: QueryResult = { ...result, stepMs };
  const last = bucketStart(range.toMs, stepMs, shape.originMs);
  if (last + stepMs > opts.wallNow) out.partialFrom = last;
  const warning = pointsWarning(range, stepMs, opts.maxPoints);
  if (warning) out.pointsWarning = warning;
  return out;
}
