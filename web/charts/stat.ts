import { h, replace } from "../lib/dom.ts";
import { formatTimestamp } from "../lib/format.ts";
import type { Point } from "../lib/rolling-window.ts";
import { type QueryResult, statValue } from "../lib/result.ts";
import { type Threshold, thresholdColor, valueFormatter } from "../lib/value-format.ts";
import { sparkline } from "./timeseries.ts";

export interface StatOptions {
  unit?: string;
  decimals?: number;
  thresholds?: readonly Threshold[];
  history?: readonly Point[];
  timeZone?: string;
  /** The figure and its time when the caller picked them (the last complete bucket); else the result's latest row. */
  pick?: { value: number | null; at: number | null };
}

/** One big figure with its unit (in its threshold colour), the column it came from, and a sparkline of its history. */
export function renderStat(el: HTMLElement, result: QueryResult, opts: StatOptions): void {
  const latest = statValue(result);
  if (latest.column === null) {
    replace(el, h("div", { class: "chart-empty" }, result.rows.length === 0 ? "No rows" : "No numeric column to show"));
    return;
  }
  const { value, at } = opts.pick ?? latest;
  const text = valueFormatter(opts.unit, opts.decimals)(value);
  const line = opts.history ? sparkline(opts.history) : null;
  const figure = h("div", { class: "stat-value", "aria-label": `${latest.column}: ${text}` }, text);
  const color = thresholdColor(value, opts.thresholds);
  if (color) {
    figure.classList.add("thresholded");
    figure.style.color = color;
  }
  replace(
    el,
    h(
      "div",
      { class: "stat" },
      figure,
      h("div", { class: "stat-label muted" }, latest.column, at !== null ? ` · ${formatTimestamp(at, { timeZone: opts.timeZone })}` : ""),
      line,
    ),
  );
}
