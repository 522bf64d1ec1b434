/**
 * The chart worker (chart-worker.ts is the page's side): holds the canvases the page handed over, draws each batch's
 * plots and figures with the functions the page's thread uses (plot-draw.ts, figure-text.ts) and answers every batch
 * with the time it took. A canvas drawn here is committed when the batch's task ends, rastered on this thread.
 */
import type { ChartWorkerBatch, ChartWorkerDrawn, FiguresDraw, FromChartWorker, PlotDraw } from "./chart-worker-messages.ts";
import { drawFigures } from "./figure-text.ts";
import { ColumnsCopy } from "./columns-delta.ts";
import { drawPlot } from "./plot-draw.ts";

interface Held {
  canvas: OffscreenCanvas;
  ctx: OffscreenCanvasRenderingContext2D | null;
  /** The plot's columns, as the deltas so far make them. */
  columns: ColumnsCopy;
  /** The figures' advance widths, in `font`. */
  widths: Map<string, number>;
  font: string;
}

/** What the worker's global scope offers here (the DOM's types are the page's). */
interface Scope {
  onmessage: ((e: MessageEvent<ChartWorkerBatch>) => void) | null;
  postMessage(m: FromChartWorker): void;
}
const scope = globalThis as unknown as Scope;
const held = new Map<number, Held>();

scope.onmessage = (e) => {
  const start = performance.now();
  const batch = e.data;
  // The page sends nothing more until the answer comes: it comes whatever failed, and one failed draw does not stop
  // the others.
  try {
    for (const a of batch.adopt) held.set(a.id, { canvas: a.canvas, ctx: null, columns: new ColumnsCopy(), widths: new Map(), font: "" });
    for (const id of batch.drop) held.delete(id);
    for (const c of batch.columns) guarded(() => held.get(c.id)?.columns.apply(c.delta));
    for (const d of batch.plots) guarded(() => plot(d));
    for (const d of batch.figures) guarded(() => figures(d));
  } finally {
    const end = performance.now();
    const drawn: ChartWorkerDrawn = { type: "drawn", busyMs: end - start, endedAt: performance.timeOrigin + end };
    scope.postMessage(drawn);
  }
};
scope.postMessage({ type: "ready" });

function plot(d: PlotDraw): void {
  const h = held.get(d.id);
  const ctx = h && sized(h, d.width, d.height);
  if (!h || !ctx) return;
  ctx.clearRect(0, 0, d.width, d.height);
  drawPlot(ctx, d, h.columns.columns());
}

function figures(d: FiguresDraw): void {
  const h = held.get(d.id);
  const ctx = h && sized(h, d.width, d.height);
  if (!h || !ctx) return;
  if (h.font !== d.font) {
    h.font = d.font;
    h.widths.clear();
  }
  drawFigures(ctx, d, h.widths);
}

/** The canvas' context, the canvas resized first when the page's size for it changed (which clears it). */
function sized(h: Held, width: number, height: number): OffscreenCanvasRenderingContext2D | null {
  if (h.canvas.width !== width || h.canvas.height !== height) {
    h.canvas.width = width;
    h.canvas.height = height;
  }
  h.ctx ??= h.canvas.getContext("2d");
  return h.ctx;
}

function guarded(draw: () => void): void {
  try {
    draw();
  } catch (err) {
    console.error("chart worker: a draw failed", err);
  }
}
