/**
 * A time series chart's plot drawn into a canvas context, in uPlot's order: axes and grid, threshold steps, then the
 * lines and the bucket still filling. On the chart worker's canvas (chart-worker.entry.ts), or on uPlot's own canvas
 * while the page has no worker: one function for both, so the two draw the same pixels.
 */
import { drawAxes, drawThresholds } from "./axes-draw.ts";
import type { PlotDraw } from "./chart-worker-messages.ts";
import { type Context2D, drawLines } from "./lines-draw.ts";

/** Draws `d` over what the canvas has (the caller clears it). `columns`: the x column, then one per series. */
export function drawPlot(ctx: Context2D, d: PlotDraw, columns: readonly ArrayLike<number | null | undefined>[]): void {
  try {
    drawAxes(ctx, d.axes);
    drawThresholds(ctx, d.thresholds);
    drawLines(ctx, d, columns);
  } catch (err) {
    // A draw that failed part way leaves no saved state, transform or clip behind for the next (the worker's context
    // lives as long as its canvas): reset clears the canvas and its state (a browser without it keeps them).
    if (typeof ctx.reset === "function") ctx.reset();
    throw err;
  }
}
