/**
 * The messages between the page and the chart worker (chart-worker.ts, chart-worker.entry.ts): the page sends one
 * batch per frame with every draw of that frame, the worker answers each batch when it has drawn it.
 */
import type { ColumnsDelta } from "./columns-delta.ts";
import type { Box, Mapping } from "./line-path.ts";

/**
 * A time series chart's plot, drawn as drawPlot does (plot-draw.ts): its axes and grid, its threshold bands and lines,
 * then the shown series of its columns, traced and stroked.
 */
export interface PlotDraw {
  /** The canvas (adopted earlier or in the same batch). */
  id: number;
  /** The canvas' size in device pixels (uPlot's canvas under it). */
  width: number;
  height: number;
  /** How many columns (x, then one per series) of how many cells; the cells travel as deltas in `columns`. */
  count: number;
  length: number;
  map: Mapping;
  /** The plot, in device pixels: the lines are clipped to it when a vertex lies outside. */
  box: Box;
  /** The lines' width in device pixels. */
  lineWidth: number;
  /** The cells in view: from `lo` to `hi`, each series widened past the cells where it has no sample. */
  lo: number;
  hi: number;
  /** The shown series: its column (1 = the first series), colour and alpha (uPlot's focus dims the others). */
  series: { column: number; color: string; alpha: number }[];
  /** The bucket still filling: one dashed segment per shown series, from its last point to the bucket. */
  partial: { color: string; x0: number; y0: number; x1: number; y1: number }[];
  /** The axes as uPlot lays them out (uplot-axes.ts), in the order uPlot draws them. */
  axes: AxisDraw[];
  /** The threshold steps, lowest first. */
  thresholds: ThresholdDraw[];
}

/** One axis: its labels, then its tick marks and its grid lines. Every position is in device pixels. */
export interface AxisDraw {
  font: string;
  color: string;
  align: "left" | "right" | "center";
  baseline: "top" | "bottom" | "middle";
  /** Each line of each label (a label with a date under its time is two). */
  labels: { text: string; x: number; y: number }[];
  /** The tick marks, then the grid lines. */
  rules: RulesDraw[];
}

/** Parallel lines across an axis: vertical (`vertical`) at each x of `at` from `from` to `to`, or horizontal at each y. */
export interface RulesDraw {
  vertical: boolean;
  at: number[];
  from: number;
  to: number;
  width: number;
  color: string;
  dash: number[];
  cap: "butt" | "round" | "square";
}

/**
 * A threshold step: its faint band over the plot, and its dashed line where it starts, when it starts inside (`y`: the
 * device pixel row it is drawn through).
 */
export interface ThresholdDraw {
  color: string;
  band: { x: number; y: number; width: number; height: number };
  line: { x0: number; x1: number; y: number; width: number } | null;
}

/** A legend's figures, drawn as drawFigures does. */
export interface FiguresDraw {
  id: number;
  /** The canvas' size in device pixels, and the device pixel ratio. */
  width: number;
  height: number;
  ratio: number;
  font: string;
  /** Each figure: its text, the centre of its box and its baseline (CSS px), and its colour. */
  figures: { text: string; cx: number; y: number; color: string }[];
}

/** Everything the page has for the worker since its last batch. */
export interface ChartWorkerBatch {
  type: "batch";
  /** Canvases handed over (their OffscreenCanvas is transferred with the message). */
  adopt: { id: number; canvas: OffscreenCanvas }[];
  plots: PlotDraw[];
  /** The changes of the plots' columns since the last batch, in the order they were made (columns-delta.ts). */
  columns: { id: number; delta: ColumnsDelta }[];
  figures: FiguresDraw[];
  /** Canvases of charts that are gone. */
  drop: number[];
}

/** The worker has drawn a batch: how long it worked on it, and when it finished (epoch ms). */
export interface ChartWorkerDrawn {
  type: "drawn";
  busyMs: number;
  endedAt: number;
}

/** The worker has loaded and takes batches. */
export interface ChartWorkerReady {
  type: "ready";
}

export type FromChartWorker = ChartWorkerReady | ChartWorkerDrawn;
