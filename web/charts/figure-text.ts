/**
 * A legend's figures drawn into a canvas context: the legend's own canvas on the page's thread, or the same canvas
 * handed to the chart worker (chart-worker.entry.ts). One function for both, so the two draw the same pixels.
 */
import type { FiguresDraw } from "./chart-worker-messages.ts";
import type { Context2D } from "./lines-draw.ts";

/**
 * Clears the canvas and draws every figure centred on its box's centre, on its baseline, in its colour. `widths`:
 * the advance widths measured so far in `d.font`, kept by the caller across draws.
 */
export function drawFigures(ctx: Context2D, d: FiguresDraw, widths: Map<string, number>): void {
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, d.width, d.height);
  ctx.setTransform(d.ratio, 0, 0, d.ratio, 0, 0);
  ctx.font = d.font;
  ctx.textBaseline = "alphabetic";
  // Centred in its box, as a button centres its text: drawFigure places its runs from their cached widths.
  ctx.textAlign = "left";
  let fill = "";
  for (const f of d.figures) {
    if (f.color !== fill) {
      ctx.fillStyle = f.color;
      fill = f.color;
    }
    drawFigure(ctx, f.text, f.cx, f.y, widths);
  }
}

/** A figure's characters that change from tick to tick, drawn one by one; the rest (a unit) as whole words. */
const DIGITS = /[0-9.,+\-\u2212 ]/;

/**
 * Draws `text` centred on `cx`: its digits one at a time, its other runs (a unit, a word) whole, each with the width
 * it was measured at once (`widths`). A figure is a new string every tick, and a canvas' fillText shapes every new
 * string (about 40 us each in a CPU profile); a single character or a word it drew before comes from the shaper's
 * cache. Digits do not kern in text fonts, and a unit is drawn as one word, so the glyphs fall where a whole-string
 * fillText puts them, to sub-pixel rounding. Text outside Latin-1 (a script whose glyphs join) is drawn whole.
 */
export function drawFigure(ctx: Context2D, text: string, cx: number, y: number, widths: Map<string, number>): void {
  if (!LATIN1.test(text)) {
    ctx.textAlign = "center";
    ctx.fillText(text, cx, y);
    ctx.textAlign = "left";
    return;
  }
  let total = 0;
  for (let i = 0; i < text.length; ) {
    const end = runEnd(text, i);
    total += widthOf(ctx, text.slice(i, end), widths);
    i = end;
  }
  let x = cx - total / 2;
  for (let i = 0; i < text.length; ) {
    const end = runEnd(text, i);
    const run = text.slice(i, end);
    ctx.fillText(run, x, y);
    x += widthOf(ctx, run, widths);
    i = end;
  }
}

const LATIN1 = /^[\u0020-\u007e\u00a0-\u00ff\u2212]*$/;

/** Where the run starting at `i` ends: one digit-like character, or the letters up to the next one. */
function runEnd(text: string, i: number): number {
  if (DIGITS.test(text[i]!)) return i + 1;
  let j = i + 1;
  while (j < text.length && !DIGITS.test(text[j]!)) j++;
  return j;
}

function widthOf(ctx: Context2D, run: string, widths: Map<string, number>): number {
  let w = widths.get(run);
  if (w === undefined) {
    w = ctx.measureText(run).width;
    widths.set(run, w);
  }
  return w;
}
