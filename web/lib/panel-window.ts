import { type Cell, firstIndexAtOrAfter, rowsInBucketOrder } from "../../lib/live/frames.ts";
import { columnRoles, type ResultData, seriesKeys, seriesLabel, seriesOfRows, toNumber, toSeries } from "./result.ts";
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

/** What mergeDelta reads of an incremental tick (a panel-delta frame). */
export interface DeltaRows {
  bucketColumn: number;
  buckets: readonly number[];
  rows: readonly (readonly unknown[])[];
}

/** The earliest bucket a tick changed: the buckets it lists and its rows' (+Infinity: none). */
export function firstChangedBucket(delta: DeltaRows): number {
  let from = Number.POSITIVE_INFINITY;
  for (const b of delta.buckets) from = Math.min(from, b);
  for (const r of delta.rows) from = Math.min(from, toNumber(r[delta.bucketColumn]) ?? from);
  return from;
}

/**
 * Merges an incremental tick into the window, leaving it as mergeResult(window, next, range) would, from the rows
 * the tick changed instead of all of them: `next` is the result after the delta (applyPanelDelta), sorted by the
 * bucket column. The rows merged are the tail of `next` from the earliest changed bucket, reaching back to each
 * series' row before it (a gap between that row and the next is a gap in the window, as withGaps makes it). Rows
 * before that tail were merged by an earlier tick and are in the window already. The series names of the whole
 * result are read only when a series of the window got no row in that tail (it may have left the result).
 */
export function mergeDelta(window: RollingWindow, next: ResultData, delta: DeltaRows, range: [number, number] | null): void {
  const roles = columnRoles(next);
  const col = delta.bucketColumn;
  const rows = next.rows;
  if (roles.time !== col || roles.values.length === 0 || !rowsInBucketOrder(rows as Cell[][], col)) {
    mergeResult(window, next, range);
    return;
  }
  const from = firstChangedBucket(delta);
  const single = roles.values.length === 1;
  const names = roles.values.map((v) => next.columns[v].name);
  const seen = (row: readonly unknown[], keys: Set<string>) => {
    const label = seriesLabel(row, roles.labels);
    for (const name of names) keys.delete(single && label ? label : label ? `${label} · ${name}` : name);
  };
  // The first row of a changed bucket; the window's series without a row from there on may have left the result.
  let start = firstIndexAtOrAfter(rows, col, from);
  const missing = new Set(window.keys());
  for (let i = start; i < rows.length && missing.size > 0; i++) seen(rows[i]!, missing);
  // Back to each series' row before the change.
  const before = new Set(window.keys());
  while (start > 0 && before.size > 0) seen(rows[--start]!, before);
  for (const s of seriesOfRows(next, roles, start === 0 ? rows : rows.slice(start))) window.merge(s.key, s.points);
  window.partialFrom = next.partialFrom;
  // A series with no row from the change on may have left the result: keep only the result's series.
  if (missing.size > 0) window.retain(seriesKeys(next, roles));
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
