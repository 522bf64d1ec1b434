// Test-only: panels a fake model answers with in the generation tests, and the spec text it sends.

/** A panel the guard accepts over DEMO_CATALOG. */
export const GOOD_PANEL = {
  id: "rps",
  title: "Requests per minute",
  type: "timeseries",
  sql: "SELECT $__timeGroup(ts, '1m') AS t, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
};

/** A panel the guard refuses with `time` (it reads a time-column table without $__timeFilter). */
export const NO_TIME_PANEL = { id: "errors", title: "Errors", type: "stat", sql: "SELECT count(*) FROM http_requests WHERE status >= 500" };

/** A generated dashboard spec as the model's text answer. */
export function specText(panels: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ title: "HTTP overview", time: { from: "now-6h", to: "now" }, panels, ...extra });
}
