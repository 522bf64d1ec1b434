/**
 * A time series chart's axes, grid and threshold steps drawn into a canvas context: uPlot's own canvas on the page's
 * thread, or the chart worker's canvas (chart-worker.entry.ts). What to draw is read from uPlot's layout on the page
 * (uplot-axes.ts); the strokes and texts here are the ones uPlot's own axis drawing makes (its drawAxesGrid and
 * drawOrthoLines, uPlot 1.6), so a chart looks the same whichever thread draws it (a browser test compares the pixels).
 */
import type { AxisDraw, RulesDraw, ThresholdDraw } from "./chart-worker-messages.ts";
import type { Context2D } from "./lines-draw.ts";

/** Each axis in turn: its labels, its tick marks, its grid lines. */
export function drawAxes(ctx: Context2D, axes: readonly AxisDraw[]): void {
  ctx.save();
  for (const a of axes) {
    ctx.font = a.font;
    ctx.fillStyle = a.color;
    ctx.textAlign = a.align;
    ctx.textBaseline = a.baseline;
    for (const l of a.labels) ctx.fillText(l.text, l.x, l.y);
    for (const r of a.rules) drawRules(ctx, r);
  }
  ctx.restore();
}

/** One stroke of parallel lines, each half a pixel in when its width is odd (uPlot's pxAlign), as uPlot strokes them. */
function drawRules(ctx: Context2D, r: RulesDraw): void {
  const offset = (r.width % 2) / 2;
  ctx.translate(offset, offset);
  ctx.strokeStyle = r.color;
  ctx.fillStyle = r.color;
  ctx.lineWidth = r.width;
  ctx.lineJoin = "round";
  ctx.lineCap = r.cap;
  ctx.setLineDash(r.dash);
  ctx.beginPath();
  for (const p of r.at) {
    if (r.vertical) {
      ctx.moveTo(p, r.from);
      ctx.lineTo(p, r.to);
    } else {
      ctx.moveTo(r.from, p);
      ctx.lineTo(r.to, p);
    }
  }
  ctx.stroke();
  ctx.translate(-offset, -offset);
}

/** Each threshold step's faint band, then its dashed line, lowest step first, under the series. */
export function drawThresholds(ctx: Context2D, steps: readonly ThresholdDraw[]): void {
  if (steps.length === 0) return;
  ctx.save();
  ctx.lineCap = "butt";
  for (const t of steps) {
    ctx.fillStyle = t.color;
    ctx.globalAlpha = 0.07;
    ctx.fillRect(t.band.x, t.band.y, t.band.width, t.band.height);
    if (t.line) {
      ctx.globalAlpha = 0.9;
      ctx.strokeStyle = t.color;
      ctx.lineWidth = t.line.width;
      ctx.setLineDash([6, 4]);
      const y = t.line.y + (t.line.width % 2) / 2;
      ctx.beginPath();
      ctx.moveTo(t.line.x0, y);
      ctx.lineTo(t.line.x1, y);
      ctx.stroke();
      ctx.setLineDash([]);
    }
  }
  ctx.restore();
}
