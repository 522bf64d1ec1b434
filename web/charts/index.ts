import { h, replace } from "../lib/dom.ts";
import type { QueryResult } from "../lib/result.ts";
import { toSeries } from "../lib/result.ts";
import type { RollingWindow } from "../lib/rolling-window.ts";
import type { Threshold } from "../lib/value-format.ts";
import { renderBar } from "./bar.ts";
import { renderGauge } from "./gauge.ts";
import { renderStat } from "./stat.ts";
import { renderTable } from "./table.ts";
import { type LegendValue, type LineSeries, TimeseriesChart } from "./uplot-timeseries.ts";

export type PanelType = "timeseries" | "stat" | "table" | "bar" | "gauge";

/** A panel's display options as the spec holds them. */
export interface PanelDisplay {
  decimals?: number;
  min?: number;
  max?: number;
  thresholds?: Threshold[];
  legend?: { show?: boolean; values?: LegendValue[] };
}

export interface RenderOptions {
  unit?: string;
  window?: RollingWindow;
  range?: [number, number] | null;
  title?: string;
  options?: PanelDisplay;
  timeZone?: string;
  /** Series hidden from the legend (kept by the caller across redraws). */
  hidden?: Set<string>;
  syncKey?: string;
  onZoom?: (from: number, to: number) => void;
  height?: number;
  partialFrom?: number | null;
  stepMs?: number | null;
  /** The stat or gauge figure when the caller picked it (the last complete bucket); else the result's latest. */
  pick?: { value: number | null; at: number | null };
}

/** The chart living in an element, reused across redraws (a tick is one setData). */
const charts = new WeakMap<HTMLElement, TimeseriesChart>();

/**
 * Lets go of the chart drawn in `el`, if any (its uPlot, and the canvases the chart worker holds for it): for an
 * element about to leave the page.
 */
export function disposeChart(el: HTMLElement): void {
  charts.get(el)?.destroy();
  charts.delete(el);
}

let darkQuery: MediaQueryList | null = null;

/** Whether the page is in the dark theme (one MediaQueryList, read on every draw; its `matches` is live). */
export function isDark(): boolean {
  if (typeof matchMedia !== "function") return false;
  darkQuery ??= matchMedia("(prefers-color-scheme: dark)");
  return darkQuery.matches;
}

/**
 * Draws a result as its panel type. With a rolling window (live dashboards) time series come from
 * the window, which the caller has already merged the result into; without one (query preview)
 * straight from the result. A result that does not fit the type falls back to a table.
 */
export function renderResult(el: HTMLElement, type: PanelType, result: QueryResult, opts: RenderOptions = {}): void {
  const o = opts.options ?? {};
  if (type !== "timeseries") {
    charts.get(el)?.destroy();
    charts.delete(el);
  }
  if (type === "table") {
    renderTable(el, result);
    return;
  }
  if (type === "bar") {
    renderBar(el, result, opts);
    return;
  }
  if (type === "gauge") {
    renderGauge(el, result, { title: opts.title ?? "Gauge", unit: opts.unit, ...o, ...(opts.pick ? { value: opts.pick.value } : {}) });
    return;
  }
  if (type === "stat") {
    const history = opts.window ? opts.window.get(opts.window.keys()[0] ?? "") : toSeries(result)?.[0]?.points;
    renderStat(el, result, {
      unit: opts.unit,
      decimals: o.decimals,
      thresholds: o.thresholds,
      history,
      timeZone: opts.timeZone,
      pick: opts.pick,
    });
    return;
  }
  let series: LineSeries[] | null;
  if (opts.window) series = opts.window.keys().map((key) => ({ key, points: opts.window!.get(key) }));
  else series = toSeries(result);
  if (!series) {
    charts.get(el)?.destroy();
    charts.delete(el);
    replace(el, h("p", { class: "muted small" }, "This result has no time column and number column to plot; showing it as a table."));
    const box = h("div");
    el.append(box);
    renderTable(box, result);
    return;
  }
  let chart = charts.get(el);
  const chartOpts = {
    title: opts.title ?? "Time series",
    unit: opts.unit,
    ...o,
    range: opts.range ?? null,
    timeZone: opts.timeZone,
    height: opts.height ?? 220,
    syncKey: opts.syncKey ?? "pulseboard",
    hidden: opts.hidden ?? new Set<string>(),
    partialFrom: opts.partialFrom,
    stepMs: opts.stepMs,
    onZoom: opts.onZoom,
    dark: isDark(),
  };
  if (!chart) {
    chart = new TimeseriesChart(el, chartOpts);
    charts.set(el, chart);
  }
  // Where the window changed since this chart last drew it: its aligned columns are merged again from there only.
  chart.update(series, chartOpts, opts.window ? opts.window.takeChangedFrom() : undefined);
}
