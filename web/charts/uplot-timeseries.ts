/**
 * The time series panel on uPlot: one crosshair shared by every time series on the page (cursor sync), drag-to-zoom,
 * a legend whose click hides a series and whose shift-click isolates it, optional legend values (last, min, max,
 * mean), colours by series name, threshold lines and bands, min/max, decimals, the unit on the axis, binary ticks for
 * bytes, the time zone on the axis and tooltip, gaps as gaps, and the bucket still filling drawn faded and dashed.
 * One instance per panel, kept across ticks: a tick rewrites the aligned columns in place (aligned-columns.ts), makes
 * one setData, and changes only the legend figures that changed. uPlot lays out the scales, axes and cursor and draws
 * nothing; the plot (axes, grid, thresholds, lines traced by line-path.ts) is drawn from that layout by plot-draw.ts,
 * on uPlot's canvas or, once the page's chart worker has loaded (chart-worker.ts), by the worker on a canvas laid over
 * it, with uPlot's canvas hidden: then no canvas is drawn or rastered on the page's thread on a tick.
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { firstAtOrAfter } from "../lib/bisect.ts";
import { h, replace } from "../lib/dom.ts";
import { formatTimestamp } from "../lib/format.ts";
import type { Point } from "../lib/rolling-window.ts";
import { seriesColor } from "../lib/series-color.ts";
import { type Threshold, valueFormatter } from "../lib/value-format.ts";
import { AlignedColumns, seriesStats } from "./aligned-columns.ts";
import { LegendFigures } from "./legend-figures.ts";
import type { PlotDraw } from "./chart-worker-messages.ts";
import { type ChartWorker, chartWorker } from "./chart-worker.ts";
import { ColumnsSender } from "./columns-delta.ts";
import type { Box, Mapping } from "./line-path.ts";
import { drawPlot } from "./plot-draw.ts";
import { readAxes, readThresholds, roundDec, timeseriesAxes } from "./uplot-axes.ts";

export interface LineSeries {
  key: string;
  points: readonly Point[];
}

export type LegendValue = "last" | "min" | "max" | "mean";

export interface TimeseriesOptions {
  title: string;
  unit?: string;
  decimals?: number;
  min?: number;
  max?: number;
  thresholds?: readonly Threshold[];
  legend?: { show?: boolean; values?: readonly LegendValue[] };
  /** The view's range (epoch ms); without one, the data's extent. */
  range: readonly [number, number] | null;
  /** IANA zone for the axis and tooltip; undefined: the browser's. */
  timeZone?: string;
  height: number;
  /** Charts with one key share the crosshair. */
  syncKey: string;
  /** Series names hidden by the legend; the caller keeps it across redraws. */
  hidden: Set<string>;
  /** The start (epoch ms) of the bucket still filling: drawn faded and dashed, left out of the legend values. */
  partialFrom?: number | null;
  /** The bucket step (ms): a missing bucket between two points is a gap. */
  stepMs?: number | null;
  /** A drag over the plot: the selected range (epoch ms). */
  onZoom?: (from: number, to: number) => void;
  /** Whether the page is in the dark theme (the palette follows). */
  dark: boolean;
}

/** A time series chart's canvas handed to the chart worker. */
interface Layer {
  worker: ChartWorker;
  id: number;
  canvas: HTMLCanvasElement;
  /** The size (device pixels) of the last plot sent to the worker. */
  width: number;
  height: number;
  /** Whether the layer shows the plot (uPlot's canvas hidden), or uPlot's canvas does while the worker catches up. */
  shown: boolean;
  /** Whether a wait for the worker's draw is under way (awaitLayer). */
  waiting: boolean;
  /** Stops listening for the worker's failure. */
  unwatch: () => void;
}

interface Built {
  plot: uPlot;
  keys: string;
  legend: HTMLElement;
  tip: HTMLElement;
  /** Per legend entry (at most 30): its button. */
  entries: { button: HTMLButtonElement }[];
  /** The legend's values (none: the legend is hidden), drawn by `figures`: entry i's value j is figure i * wanted.length + j. */
  wanted: readonly LegendValue[];
  figures: LegendFigures | null;
}

const LEGEND_MAX = 30;

/** A time series chart mounted in `el`, redrawn in place with update(). */
export class TimeseriesChart {
  private built: Built | null = null;
  private series: readonly LineSeries[] = [];
  private opts: TimeseriesOptions;
  private optsKey = "";
  private readonly columns = new AlignedColumns();
  private partialX: number | null = null;
  private width = 0;
  private resized = false;
  private ariaLabel = "";
  /** The plot's canvas handed to the chart worker (null: the plot is drawn on uPlot's canvas). */
  private layer: Layer | null = null;
  /** The columns as the worker has them, and which sync of them that is (a new one each update). */
  private readonly sender = new ColumnsSender();
  private synced = 0;
  private sent = -1;
  private readonly observer = typeof ResizeObserver === "function" ? new ResizeObserver(() => (this.resized = true)) : null;
  /** Set while a drag started on this chart (not on a synced one). */
  dragging = false;

  constructor(
    private readonly el: HTMLElement,
    opts: TimeseriesOptions,
  ) {
    this.opts = opts;
    this.observer?.observe(el);
  }

  /**
   * Draws `series` with `opts`; reuses the plot when the series names and options are the same. `changedFrom`: the
   * earliest time (epoch ms) at which the series changed since the last update, but for points dropped from their
   * start (the rolling window's takeChangedFrom); the aligned columns are merged again from there only.
   */
  update(series: readonly LineSeries[], opts: TimeseriesOptions, changedFrom = Number.NEGATIVE_INFINITY): void {
    this.series = series;
    const key = opts === this.opts && this.optsKey ? this.optsKey : optionsKey(opts);
    const optionsChanged = key !== this.optsKey;
    this.optsKey = key;
    this.opts = opts;
    if (!series.some((s) => s.points.some((p) => p[1] !== null))) {
      this.destroy();
      this.columns.reset();
      replace(this.el, h("div", { class: "chart-empty" }, "No data in this time range"));
      return;
    }
    const cols = this.columns;
    cols.sync(series, opts.stepMs, opts.partialFrom, changedFrom);
    this.synced++;
    this.partialX = opts.partialFrom != null && cols.partial.some((v) => v !== null) ? opts.partialFrom / 1000 : null;
    const keys = series.map((s) => s.key).join("\u0000");
    // Reading clientWidth forces a layout; it is read only when the element was resized (not on every tick).
    if (this.width === 0 || this.resized) {
      this.width = Math.max(160, Math.floor(this.el.clientWidth || 480));
      this.resized = false;
    }
    const width = this.width;
    if (!this.built || this.built.keys !== keys || optionsChanged) this.build(keys, width);
    else {
      const plot = this.built.plot;
      if (Math.abs(plot.width - width) > 2) plot.setSize({ width, height: opts.height });
      plot.batch(() => {
        plot.setData(cols.data as uPlot.AlignedData, false);
        this.setX(plot, cols.xs);
      });
    }
    this.renderLegend();
    this.setLabel();
  }

  /** Sets the accessible name when it changed (an attribute write per tick is a style invalidation). */
  private setLabel(): void {
    const label = this.label();
    if (label === this.ariaLabel) return;
    this.ariaLabel = label;
    this.el.setAttribute("aria-label", label);
  }

  /** The chart's accessible name: title, range and last values. */
  label(): string {
    const fmt = valueFormatter(this.opts.unit, this.opts.decimals);
    const range = this.opts.range
      ? `${stamp(this.opts.range[0], this.opts.timeZone)} to ${stamp(this.opts.range[1], this.opts.timeZone)}`
      : "the data's range";
    const shown: number[] = [];
    for (let i = 0; i < this.series.length && shown.length < 8; i++) if (!this.opts.hidden.has(this.series[i]!.key)) shown.push(i);
    const head = `${this.opts.title}, time series from ${range}`;
    if (shown.length === 0) return head;
    // The legend's figures of this tick (renderLegend formatted them from the same series) where it has them, rather
    // than the series' statistics computed twice a tick; its figures are drawn, not text, so this is where they are read.
    const built = this.built;
    const figures = built?.figures ?? null;
    const n = built?.wanted.length ?? 0;
    const figure = (i: number, j: number) => (figures && i < built!.entries.length ? figures.text(i * n + j) : null);
    // The legend's own values when it names them.
    const wanted = built && built.entries.length > 0 && this.opts.legend?.values?.length ? built.wanted : null;
    if (!wanted) {
      // Unnamed, the legend shows the last value alone (its figure 0 of each entry).
      const last = (i: number) => figure(i, 0) ?? fmt(seriesStats(this.series[i]!.points, this.opts.partialFrom, LAST_ONLY).last);
      return `${head}; last: ${shown.map((i) => `${this.series[i]!.key} ${last(i)}`).join(", ")}`;
    }
    const want = wantedStats(wanted);
    const parts = shown.map((i) => {
      const s = this.series[i]!;
      const stats = figure(i, 0) === null ? seriesStats(s.points, this.opts.partialFrom, want) : null;
      return `${s.key}: ${wanted.map((k, j) => `${k} ${stats ? fmt(stats[k]) : figure(i, j)}`).join(", ")}`;
    });
    return `${head}; ${parts.join("; ")}`;
  }

  destroy(): void {
    if (this.layer) {
      this.layer.unwatch();
      this.layer.worker.release(this.layer.id);
    }
    this.layer = null;
    this.built?.figures?.destroy();
    this.built?.plot.destroy();
    this.built = null;
    this.ariaLabel = "";
  }

  private setX(plot: uPlot, xs: number[]): void {
    const r = this.opts.range;
    const min = r ? r[0] / 1000 : xs[0]!;
    const max = r ? r[1] / 1000 : xs[xs.length - 1]!;
    plot.setScale("x", { min, max: max > min ? max : min + 1 });
  }

  private build(keys: string, width: number): void {
    this.destroy();
    const o = this.opts;
    const fmt = valueFormatter(o.unit, o.decimals);
    const axisLabel = memoized(valueFormatter(o.unit, undefined));
    const { muted, grid: gridColor } = axisColors(o.dark);
    const tz = o.timeZone;
    const plotEl = h("div", { class: "uplot-host" });
    const tip = h("div", { class: "tooltip", hidden: true, role: "presentation" });
    const legend = h("ul", { class: "legend", "aria-label": `Series of ${o.title}` });
    replace(this.el, h("div", { class: "chart-wrap" }, plotEl, tip), legend);

    const opts: uPlot.Options = {
      width,
      height: o.height,
      tzDate: tz ? (ts) => uPlot.tzDate(new Date(ts * 1000), tz) : (ts) => new Date(ts * 1000),
      legend: { show: false },
      // uPlot draws nothing on its canvas: drawPlot draws the plot from its layout (the draw hook).
      drawOrder: [],
      cursor: {
        sync: { key: o.syncKey, setSeries: false },
        drag: { x: true, y: false, setScale: false },
        points: { size: 6 },
        focus: { prox: 16 },
      },
      select: { show: true, left: 0, top: 0, width: 0, height: 0 },
      scales: {
        x: { time: true },
        y: {
          range: (_u, dmin, dmax) => {
            if (dmin === null || dmax === null) return [o.min ?? 0, o.max ?? 1];
            const [lo, hi] = uPlot.rangeNum(dmin >= 0 ? 0 : dmin, dmax, 0.1, true);
            const low = o.min ?? (dmin >= 0 ? 0 : lo!);
            const high = o.max ?? Math.max(hi!, low + 1e-9);
            return [low, high > low ? high : low + 1];
          },
        },
      },
      axes: timeseriesAxes(o.unit, { muted, grid: gridColor }, axisLabel),
      series: [
        {},
        ...this.series.map((s) => ({
          label: s.key,
          stroke: seriesColor(s.key, o.dark),
          width: 1,
          show: !o.hidden.has(s.key),
          points: { show: false },
          // The lines are drawn by drawPlot (the draw hook), not by uPlot.
          paths: noPath,
        })),
      ],
      hooks: {
        draw: [(u) => this.drawPlot(u)],
        setSelect: [
          (u) => {
            // Synced charts receive the selection too: only the chart dragged on zooms.
            if (u.select.width > 4 && o.onZoom && this.dragging) {
              const a = u.posToVal(u.select.left, "x") * 1000;
              const b = u.posToVal(u.select.left + u.select.width, "x") * 1000;
              o.onZoom(Math.round(a), Math.round(b));
            }
            this.dragging = false;
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          },
        ],
        setCursor: [(u) => this.renderTip(u, fmt)],
      },
    };
    const plot = new uPlot(opts, this.columns.data as uPlot.AlignedData, plotEl);
    // In a batch, uPlot commits (paths, axes, canvas) now rather than in a microtask after the caller returns, so
    // the draw scheduler's frame budget sees what a build costs.
    plot.batch(() => this.setX(plot, this.columns.xs));
    plot.over.addEventListener("pointerleave", () => (tip.hidden = true));
    plot.over.addEventListener("mousedown", () => (this.dragging = true));
    this.built = { plot, keys, legend, tip, ...this.buildLegend(legend) };
  }

  /**
   * The plot (plot-draw.ts): on uPlot's canvas, or, once the page's chart worker has loaded, by the worker on a canvas
   * of its own laid over uPlot's (under its cursor and selection), with the columns sent again only after a sync.
   * uPlot's canvas is hidden while the worker's layer shows the plot. Until the worker has drawn a layer at its
   * current size (a new layer, whether the chart is new or was drawn on the page before the worker loaded; a resized
   * chart, whose layer would show its old pixels stretched), the page draws the plot on uPlot's canvas too and the
   * layer stays hidden, so no frame shows an empty or stretched plot.
   */
  private drawPlot(u: uPlot): void {
    // A plot destroyed with a commit still pending (a rebuild in the same task) draws nothing over the new one's.
    if (this.built && this.built.plot !== u) return;
    // A worker that failed: its layer is dropped (a canvas handed over is the worker's for good), drawn here again.
    if (this.layer && !this.layer.worker.available) this.dropLayer(u);
    const d = this.plotDraw(u);
    const worker = chartWorker();
    if (!worker) {
      drawPlot(u.ctx, d, u.data);
      return;
    }
    let layer = this.layer;
    if (!layer) {
      const canvas = document.createElement("canvas");
      canvas.className = "u-plot-layer";
      canvas.setAttribute("aria-hidden", "true");
      canvas.width = d.width;
      canvas.height = d.height;
      canvas.style.visibility = "hidden";
      u.ctx.canvas.after(canvas);
      layer = {
        worker,
        id: worker.adoptCanvas(canvas),
        canvas,
        width: d.width,
        height: d.height,
        shown: false,
        waiting: false,
        // A worker that fails later: the chart draws again at once, on its own canvas (a past range has no next tick).
        unwatch: worker.onLost(() => this.built?.plot.redraw(false, false)),
      };
      this.layer = layer;
      this.sender.reset();
      this.sent = -1;
    } else if (layer.width !== d.width || layer.height !== d.height) {
      layer.width = d.width;
      layer.height = d.height;
      if (layer.shown) this.showLayer(u, layer, false);
    }
    d.id = layer.id;
    const delta = this.sent === this.synced ? null : this.sender.delta(u.data);
    this.sent = this.synced;
    worker.drawPlot(d, delta);
    if (layer.shown) return;
    drawPlot(u.ctx, d, u.data);
    this.awaitLayer(u, layer);
  }

  /**
   * Shows the layer once the worker has drawn it at its current size, at the frame after (the worker's canvas reaches
   * the screen when its task has ended); one wait per layer, however many draws come meanwhile.
   */
  private awaitLayer(u: uPlot, layer: Layer): void {
    if (layer.waiting) return;
    layer.waiting = true;
    const { width, height } = layer;
    void layer.worker.whenPlotDrawn(layer.id).then(() =>
      requestAnimationFrame(() => {
        layer.waiting = false;
        if (this.layer !== layer || layer.shown || !layer.worker.available) return;
        if (layer.width !== width || layer.height !== height) this.awaitLayer(u, layer);
        else this.showLayer(u, layer, true);
      }),
    );
  }

  /** The worker's layer shown and uPlot's canvas hidden, or the other way round. */
  private showLayer(u: uPlot, layer: Layer, shown: boolean): void {
    layer.shown = shown;
    layer.canvas.style.visibility = shown ? "" : "hidden";
    u.ctx.canvas.style.visibility = shown ? "hidden" : "";
  }

  /** The worker failed: its layer goes and uPlot's canvas shows the plot again. */
  private dropLayer(u: uPlot): void {
    const layer = this.layer;
    if (!layer) return;
    layer.canvas.remove();
    layer.unwatch();
    this.layer = null;
    u.ctx.canvas.style.visibility = "";
  }

  /**
   * What drawPlot draws, in uPlot's canvas pixels: the axes and thresholds as uPlot laid them out, the mapping of the
   * scales, the plot's box, the shown series.
   */
  private plotDraw(u: uPlot): PlotDraw {
    const canvas = u.ctx.canvas;
    const xs = u.data[0];
    const lineWidth = roundDec(uPlot.pxRatio, 3);
    const d: PlotDraw = {
      id: 0,
      width: canvas.width,
      height: canvas.height,
      count: u.data.length,
      length: xs.length,
      map: { x0: 0, kx: 0, y0: 0, ky: 0 },
      box: { left: 0, top: 0, right: 0, bottom: 0 },
      lineWidth,
      lo: 0,
      hi: -1,
      series: [],
      partial: [],
      axes: readAxes(u),
      thresholds: readThresholds(u, this.opts.thresholds),
    };
    const sx = u.scales.x!;
    const sy = u.scales.y!;
    if (sx.min == null || sx.max == null || sy.min == null || sy.max == null || sx.max === sx.min || sy.max === sy.min) return d;
    const { left, top, width, height } = u.bbox;
    const kx = width / (sx.max - sx.min);
    const ky = -height / (sy.max - sy.min);
    const map: Mapping = { x0: left - sx.min * kx, kx, y0: top + height - sy.min * ky, ky };
    const box: Box = { left, top, right: left + width, bottom: top + height };
    d.map = map;
    d.box = box;
    if (xs.length > 0) {
      // The points in view and, on each side, the one just outside (the line runs in from it).
      d.lo = Math.max(0, firstAtOrAfter(xs, sx.min) - 1);
      d.hi = Math.min(xs.length - 1, firstAtOrAfter(xs, sx.max, d.lo));
    }
    // The bucket still filling: a faded dashed segment from each series' last complete point.
    const x1 = this.partialX === null ? 0 : u.valToPos(this.partialX, "x", true);
    for (let i = 0; i < this.series.length; i++) {
      const s = u.series[i + 1];
      const col = u.data[i + 1];
      if (!s?.show || !col) continue;
      const color = seriesColor(this.series[i]!.key, this.opts.dark);
      d.series.push({ column: i + 1, color, alpha: s.alpha ?? 1 });
      const v = this.partialX === null ? null : this.columns.partial[i];
      if (v === null || v === undefined) continue;
      let j = xs.length - 1;
      while (j >= 0 && (col[j] === null || col[j] === undefined)) j--;
      const y1 = u.valToPos(v, "y", true);
      if (j >= 0) d.partial.push({ color, x0: u.valToPos(xs[j]!, "x", true), y0: u.valToPos(col[j] as number, "y", true), x1, y1 });
      else d.partial.push({ color, x0: x1, y0: y1, x1, y1 });
    }
    return d;
  }

  private renderTip(u: uPlot, fmt: (n: number | null) => string): void {
    const tip = this.built?.tip;
    if (!tip) return;
    const idx = u.cursor.idx;
    if (idx === null || idx === undefined || u.cursor.left === undefined || u.cursor.left < 0) {
      tip.hidden = true;
      return;
    }
    const t = u.data[0][idx]! * 1000;
    const rows = this.series
      .map((s, i) => ({ s, v: u.data[i + 1]?.[idx] }))
      .filter((r) => !this.opts.hidden.has(r.s.key) && r.v !== undefined)
      .slice(0, 12)
      .map((r) =>
        h(
          "div",
          { class: "tip-row" },
          swatch(r.s.key, this.opts.dark),
          h("span", { class: "tip-key" }, r.s.key),
          h("strong", null, fmt(r.v ?? null)),
        ),
      );
    replace(tip, h("div", { class: "tip-time" }, formatTimestamp(t, { timeZone: this.opts.timeZone })), ...rows);
    tip.hidden = false;
    tip.classList.toggle("left", u.cursor.left > u.over.clientWidth / 2);
  }

  /** The legend's entries, built with the plot (the series names and options are fixed until the next build). */
  private buildLegend(legend: HTMLElement): Pick<Built, "entries" | "wanted" | "figures"> {
    const o = this.opts;
    if (o.legend?.show === false || (this.series.length === 1 && !o.legend?.values?.length && !this.series[0]!.key)) {
      legend.hidden = true;
      return { entries: [], wanted: [], figures: null };
    }
    const { text, muted } = axisColors(o.dark);
    // The figures are drawn on one canvas over the legend (legend-figures.ts): a new figure every tick changes no
    // text, so the frame runs no layout or paint for it.
    const figures = new LegendFigures(legend, { on: text, off: muted });
    const wanted = o.legend?.values?.length ? o.legend.values : (["last"] as const);
    const named = wanted.length > 1 || Boolean(o.legend?.values?.length);
    const entries = this.series.slice(0, LEGEND_MAX).map((s, i) => {
      const boxes = wanted.map(() => figures.box());
      const button = h(
        "button",
        {
          type: "button",
          class: "legend-item",
          title: "Click: show or hide. Shift-click: show only this series (again: show all).",
          onclick: (ev: Event) => this.toggle(i, (ev as MouseEvent).shiftKey || (ev as MouseEvent).metaKey || (ev as MouseEvent).ctrlKey),
        },
        swatch(s.key, o.dark),
        h("span", { class: "legend-key" }, s.key || o.title),
        ...wanted.map((k, j) =>
          h("span", { class: "legend-val" }, named ? h("span", { class: "muted", "aria-hidden": "true" }, `${k} `) : null, boxes[j]!),
        ),
      );
      return { button };
    });
    replace(
      legend,
      entries.map((e) => h("li", null, e.button)),
      this.series.length > LEGEND_MAX ? h("li", { class: "muted" }, `+${this.series.length - LEGEND_MAX} more`) : null,
      figures.item,
    );
    legend.hidden = false;
    this.renderShown(entries);
    return { entries, wanted, figures };
  }

  /** Whether each legend entry's series is shown. */
  private renderShown(entries: Built["entries"]): void {
    entries.forEach((e, i) => {
      const shown = !this.opts.hidden.has(this.series[i]!.key);
      e.button.classList.toggle("off", !shown);
      e.button.setAttribute("aria-pressed", shown ? "true" : "false");
    });
  }

  /** The legend's values of this tick: a figure is drawn again only when its text or its shown state changed. */
  private renderLegend(): void {
    const built = this.built;
    const figures = built?.figures;
    if (!built || !figures) return;
    const o = this.opts;
    const fmt = valueFormatter(o.unit, o.decimals);
    const want = wantedStats(built.wanted);
    const n = built.wanted.length;
    for (let i = 0; i < built.entries.length; i++) {
      const s = this.series[i]!;
      const stats = seriesStats(s.points, o.partialFrom, want);
      const off = o.hidden.has(s.key);
      for (let j = 0; j < n; j++) figures.set(i * n + j, fmt(stats[built.wanted[j]!]), off);
    }
    figures.draw();
  }

  /** Legend click: hide or show series `i`; with a modifier, show it alone (or everything, when it already is). */
  private toggle(i: number, isolate: boolean): void {
    const key = this.series[i]!.key;
    const hidden = this.opts.hidden;
    if (isolate) {
      const alone = this.series.every((s, j) => (j === i ? !hidden.has(s.key) : hidden.has(s.key)));
      hidden.clear();
      if (!alone) for (const s of this.series) if (s.key !== key) hidden.add(s.key);
    } else if (hidden.has(key)) hidden.delete(key);
    else hidden.add(key);
    const built = this.built;
    if (built) {
      built.plot.batch(() => {
        for (let j = 0; j < this.series.length; j++) built.plot.setSeries(j + 1, { show: !hidden.has(this.series[j]!.key) });
      });
      this.renderShown(built.entries);
      this.renderLegend();
      built.entries[i]?.button.focus();
    }
    this.setLabel();
  }
}

function swatch(key: string, dark: boolean): HTMLElement {
  const el = h("span", { class: "swatch", "aria-hidden": "true" });
  el.style.background = seriesColor(key, dark);
  return el;
}

const LAST_ONLY = { last: true, spread: false };

/** Which of seriesStats' passes the legend's values need. */
function wantedStats(wanted: readonly LegendValue[]): { last: boolean; spread: boolean } {
  return { last: wanted.includes("last"), spread: wanted.some((k) => k !== "last") };
}

/**
 * A formatter that remembers its last few hundred answers: the y axis asks for the same tick values on every tick
 * (and twice when uPlot converges the axis size), and formatting a number with its unit costs more than a lookup.
 */
function memoized(fmt: (n: number) => string): (n: number) => string {
  const seen = new Map<number, string>();
  return (n) => {
    let text = seen.get(n);
    if (text === undefined) {
      if (seen.size >= 512) seen.clear();
      text = fmt(n);
      seen.set(n, text);
    }
    return text;
  };
}

/** The range's ends in the accessible names: every chart on the page shows the same range, formatted once a tick. */
const stamps = new Map<string, string>();
function stamp(ms: number, timeZone: string | undefined): string {
  const key = `${timeZone ?? ""} ${ms}`;
  let text = stamps.get(key);
  if (text === undefined) {
    if (stamps.size >= 16) stamps.clear();
    text = formatTimestamp(ms, { timeZone });
    stamps.set(key, text);
  }
  return text;
}

let palette: { dark: boolean; muted: string; grid: string; text: string } | null = null;

/**
 * The axis, grid and text colours of the theme, read once per theme: getComputedStyle after the DOM changed is a style
 * recalculation, and the first frame builds several charts in a row.
 */
function axisColors(dark: boolean): { muted: string; grid: string; text: string } {
  if (palette?.dark !== dark) {
    const css = getComputedStyle(document.documentElement);
    palette = {
      dark,
      muted: css.getPropertyValue("--muted").trim() || "#5d6878",
      grid: css.getPropertyValue("--grid").trim() || "#e9ecf0",
      text: css.getPropertyValue("--text").trim() || "#1c2330",
    };
  }
  return palette;
}

/** What forces a rebuild rather than a setData: everything but the range and the data. */
function optionsKey(o: TimeseriesOptions): string {
  return JSON.stringify([o.unit, o.decimals, o.min, o.max, o.thresholds, o.legend, o.timeZone, o.height, o.dark, o.syncKey]);
}

/** uPlot's `series.paths` for the lines drawPlot draws itself: nothing for uPlot to stroke. */
const noPath: uPlot.Series.PathBuilder = () => null;
