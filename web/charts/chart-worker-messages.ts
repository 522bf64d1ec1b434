/**
 * The messages between the page and the chart worker (chart-worker.ts, chart-worker.entry.ts): the page sends one
 * batch per frame with every draw of that frame, the worker answers each batch when it has drawn it.
 */
import type { ColumnsDelta } from "./columns-delta.ts";
import type { Box, Mapping } from "./line-path.ts";

/** A time series chart's lines: the shown series of its columns, traced and stroked as drawLines does. */
export interface LinesDraw {
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
  lines: LinesDraw[];
  /** The changes of the lines' columns since the last batch, in the order they were made (columns-delta.ts). */
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
