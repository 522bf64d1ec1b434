import { h, replace } from "../lib/dom.ts";
import type { QueryResult } from "../lib/result.ts";
import { toSeries } from "../lib/result.ts";
import type { RollingWindow } from "../lib/rolling-window.ts";
import { renderBar } from "./bar.ts";
import { renderStat } from "./stat.ts";
import { renderTable } from "./table.ts";
import { type LineSeries, renderTimeseries } from "./timeseries.ts";

export type PanelType = "timeseries" | "stat" | "table" | "bar";

/**
 * Draws a result as its panel type. With a rolling window (live dashboards) time series come from
 * the window, which the caller has already merged the result into; without one (query preview)
 * straight from the result. A result that does not fit the type falls back to a table.
 */
export function renderResult(
  el: HTMLElement,
  type: PanelType,
  result: QueryResult,
  opts: { unit?: string; window?: RollingWindow; range?: [number, number] | null } = {},
): void {
  if (type === "table") {
    renderTable(el, result);
    return;
  }
  if (type === "bar") {
    renderBar(el, result, opts);
    return;
  }
  if (type === "stat") {
    const history = opts.window ? opts.window.get(opts.window.keys()[0] ?? "") : toSeries(result)?.[0]?.points;
    renderStat(el, result, { unit: opts.unit, history });
    return;
  }
  let series: LineSeries[] | null;
  if (opts.window) series = opts.window.keys().map((key) => ({ key, points: opts.window!.get(key) }));
  else series = toSeries(result);
  if (!series) {
    replace(el, h("p", { class: "muted small" }, "This result has no time column and number column to plot; showing it as a table."));
    const box = h("div");
    el.append(box);
    renderTable(box, result);
    return;
  }
  renderTimeseries(el, series, opts);
}
