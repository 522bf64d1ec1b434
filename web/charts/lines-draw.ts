/**
 * A time series chart's lines and its bucket still filling, drawn into a canvas context (plot-draw.ts draws them after
 * the axes): uPlot's own canvas on the page's thread, or the chart worker's canvas laid over it (chart-worker.entry.ts).
 * One function for both, so the two draw the same pixels (a browser test compares them).
 */
import type { PlotDraw } from "./chart-worker-messages.ts";
import { traceLine } from "./line-path.ts";

/** A 2D context on the page or in a worker: what drawing the lines needs of it. */
export type Context2D = CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D;

/**
 * The shown series' lines, as uPlot's linear paths draw them (1 px, vertices on whole device pixels, half a pixel
 * in, the focus alpha), traced by traceLine (line-path.ts: a gap breaks the line) straight into the context: in
 * Chromium a context's lineTo costs a third of a Path2D's (24 series of 720 points: about 1 against 3 ms). uPlot
 * clips every series to the plot on its own: in Chromium's software canvas a clipped stroke costs about 1.5 times
 * an unclipped one, so here the clip is set only once a series has a vertex outside the plot (a zoom, or min/max
 * that cut the data), before that series is stroked; the series before it needed none. Then the bucket still
 * filling: a faded dashed segment per shown series.
 */
export function drawLines(ctx: Context2D, d: PlotDraw, columns: readonly ArrayLike<number | null | undefined>[]): void {
  const xs = columns[0] as ArrayLike<number> | undefined;
  if (xs && d.length > 0) {
    const { box, lineWidth } = d;
    const offset = (lineWidth % 2) / 2;
    ctx.save();
    ctx.translate(offset, offset);
    ctx.lineWidth = lineWidth;
    ctx.lineJoin = "round";
    ctx.lineCap = "butt";
    ctx.setLineDash([]);
    let clipped = false;
    let alpha = ctx.globalAlpha;
    for (const s of d.series) {
      const ys = columns[s.column];
      if (!ys) continue;
      // Past cells with no sample at their x, to this series' own point outside the view.
      let i0 = d.lo;
      while (i0 > 0 && noSample(ys[i0])) i0--;
      let i1 = d.hi;
      while (i1 < d.length - 1 && noSample(ys[i1])) i1++;
      ctx.beginPath();
      if (!traceLine(ctx, xs, ys, i0, i1, d.map, box) && !clipped) {
        const clip = new Path2D();
        clip.rect(box.left - lineWidth / 2, box.top - lineWidth / 2, box.right - box.left + lineWidth, box.bottom - box.top + lineWidth);
        ctx.clip(clip);
        clipped = true;
      }
      // The context keeps its state between strokes: alpha is set only when it changes (a focused series dims others).
      if (s.alpha !== alpha) ctx.globalAlpha = alpha = s.alpha;
      ctx.strokeStyle = s.color;
      ctx.stroke();
    }
    ctx.restore();
  }
  if (d.partial.length === 0) return;
  ctx.save();
  ctx.setLineDash([4, 4]);
  ctx.globalAlpha = 0.55;
  ctx.lineWidth = d.lineWidth;
  for (const p of d.partial) {
    ctx.strokeStyle = p.color;
    ctx.beginPath();
    ctx.moveTo(p.x0, p.y0);
    ctx.lineTo(p.x1, p.y1);
    ctx.stroke();
  }
  ctx.restore();
}

/** No sample at this x: undefined in uPlot's columns, NaN in encoded ones. */
function noSample(v: number | null | undefined): boolean {
  return v === undefined || Number.isNaN(v as number);
}
