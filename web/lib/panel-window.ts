import { type ResultData, toSeries } from "./result.ts";
import type { RollingWindow } from "./rolling-window.ts";

/**
 * Merges a panel result's series into the panel's window, then drops series the result no longer
 * has and points before the range start. A result without a time series empties the window.
 */
export function mergeResult(window: RollingWindow, result: ResultData, range: [number, number] | null): void {
  const series = toSeries(result);
  if (!series) {
    window.clear();
    return;
  }
  for (const s of series) window.merge(s.key, s.points);
  window.partialFrom = result.partialFrom;
  window.retain(new Set(series.map((s) => s.key)));
  if (range) window.prune(range[0]);
}

/** Rows of a panel result sent along with a chat question: the newest `maxRows`, flagged when cut. */
export function chatResult(
  panelId: string,
  update: { result?: ResultData & { truncated?: boolean }; error?: { message: string } } | null,
  maxRows = 100,
): { panelId: string; columns?: { name: string; type: string }[]; rows?: unknown[][]; truncated?: boolean; error?: string } {
  if (!update) return { panelId, error: "no result yet" };
  if (update.error) return { panelId, error: update.error.message.slice(0, 1000) };
  const r = update.result!;
  const rows = r.rows.length > maxRows ? r.rows.slice(r.rows.length - maxRows) : r.rows;
  return {
    panelId,
    columns: r.columns.slice(0, 100),
    rows: rows.map((row) => row.slice(0, 100)),
    truncated: Boolean(r.truncated) || rows.length < r.rows.length,
  };
}
