// The row count of a generate_series over times depends on the range a viewer picks: the guard proves each
// such series spans the range a bounded number of times plus a bounded widening (SeriesBound), and this
// check, run with the range's values before the statement, caps its rows (docs/sql-guard.md, "Time series").
import { intervalLiteralMs } from "./interval.ts";
import type { SeriesBound } from "./verdict.ts";

/** Most rows one generate_series over times may produce, for any range. */
export const MAX_SERIES_ROWS = 100_000;

/**
 * The problem with the verdict's time series over [fromMs, toMs] with this `$__interval` value (its text, as
 * intervalFor writes it), or null when every one has at most MAX_SERIES_ROWS rows.
 */
export function seriesRowsProblem(
  series: readonly SeriesBound[] | undefined,
  fromMs: number,
  toMs: number,
  intervalText: string,
): string | null {
  if (!series || series.length === 0) return null;
  const intervalMs = intervalLiteralMs(intervalText);
  for (const s of series) {
    const stepMs = s.stepMs ?? intervalMs;
    if (stepMs === undefined || stepMs <= 0) return "generate_series needs a positive step";
    const span = (toMs - fromMs) * s.ranges + s.widenMs + s.intervals * (intervalMs ?? 0);
    const rows = Math.floor(span / stepMs) + 1;
    if (!(rows <= MAX_SERIES_ROWS)) {
      return `generate_series would make ${Number.isFinite(rows) ? rows : "too many"} rows over this range (at most ${MAX_SERIES_ROWS}): use a larger step or $__interval`;
    }
  }
  return null;
}
