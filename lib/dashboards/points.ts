// The points-per-series warning at save time: a panel whose statement buckets time at a fixed width (a
// `$__timeGroup(col, '1m')`, `date_bin('1 minute', ...)`, `date_trunc('minute', ...)`) gives more points per series over
// the dashboard's saved range than the browser keeps (MAX_WINDOW_POINTS). The same numbers and sentence as the
// preview's and the live panel's `pointsWarning`, so an editor learns it when saving, not from a thinned chart.
import type { PointsWarning } from "../live/frames.ts";
import { pointsWarning } from "../query/result-notes.ts";
import { shapeOf } from "../query/time-shape.ts";
import type { MacroParam } from "../sql-guard/verdict.ts";
import { type DashboardSpec, resolveTime } from "./spec.ts";

/** A panel's points warning, as a save reports it. */
export interface PanelPointsWarning extends PointsWarning {
  panelId: string;
}

/**
 * The warning of one guarded panel statement over the dashboard's saved range resolved at `now`; null when it does
 * not bucket time, its width is `$__interval` (never more than MAX_WINDOW_POINTS buckets by construction) or not
 * fixed (months), or the points fit. Needs the guard's parser loaded (a guard check loads it).
 */
export function panelPointsWarning(
  panelId: string,
  guarded: { sql: string; params: readonly MacroParam[] },
  time: DashboardSpec["time"],
  opts: { maxWindowPoints: number; now: number },
): PanelPointsWarning | null {
  const shape = shapeOf(guarded.sql, guarded.params);
  if (!shape?.step || !("ms" in shape.step) || !(shape.step.ms > 0)) return null;
  let range: { fromMs: number; toMs: number };
  try {
    range = { fromMs: resolveTime(time.from, opts.now), toMs: resolveTime(time.to, opts.now) };
  } catch {
    return null;
  }
  if (!(range.toMs > range.fromMs)) return null;
  const warning = pointsWarning(range, shape.step.ms, opts.maxWindowPoints);
  return warning ? { panelId, ...warning } : null;
}
