import { h, replace } from "../lib/dom.ts";
import { formatTimestamp, formatValue } from "../lib/format.ts";
import type { Point } from "../lib/rolling-window.ts";
import { type QueryResult, statValue } from "../lib/result.ts";
import { sparkline } from "./timeseries.ts";

/** One big figure with its unit, the column it came from, and a sparkline of its recent history. */
export function renderStat(el: HTMLElement, result: QueryResult, opts: { unit?: string; history?: readonly Point[] }): void {
  const { value, column, at } = statValue(result);
  if (column === null) {
    replace(el, h("div", { class: "chart-empty" }, result.rows.length === 0 ? "No rows" : "No numeric column to show"));
    return;
  }
  const line = opts.history ? sparkline(opts.history) : null;
  replace(
    el,
    h(
      "div",
      { class: "stat" },
      h("div", { class: "stat-value", "aria-label": `${column}: ${formatValue(value, opts.unit)}` }, formatValue(value, opts.unit)),
      h("div", { class: "stat-label muted" }, column, at !== null ? ` · ${formatTimestamp(at)}` : ""),
      line,
    ),
  );
}
