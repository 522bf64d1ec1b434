/**
 * A legend's figures (last, min, max, mean), drawn on one canvas laid over the legend rather than written as text.
 * A tick changes them all (each tick completes a bucket, so "last" moves), and a text change, however contained its
 * box, makes the frame run style, layout, pre-paint, paint and layerize over the page: with six charts in view about
 * 3.5 ms of a tick's main-thread time. A canvas drawn again is only its raster at commit, as the chart's own canvas
 * is; one canvas per legend rather than one per figure, since each canvas has a fixed cost at commit.
 *
 * The layout is the text's: each figure keeps an empty box in the legend (`.legend-num`) as wide as its characters
 * plus one, in digits (ch), growing with a longer figure and never shrinking, so the legend neither jitters nor
 * lays out on a tick. The figure is drawn where the text was: centred in its box as a button centres its text, on
 * the baseline the legend's line height puts it, in the legend's font and colour (read once from the computed style),
 * muted for a hidden series. The boxes' places are read from the layout once, and again when a box grows or the
 * legend's size changes (a ResizeObserver on it, which redraws at once).
 *
 * The figures stay available to assistive technology through the chart's accessible name, which names each shown
 * series' legend values, and its table view; the canvas is aria-hidden.
 */
import { h } from "../lib/dom.ts";

/** What the figures are drawn with: the font read once from the computed style of a figure's box. */
export interface FigureStyle {
  font: string;
  /** The baseline's distance from the box's top, in CSS px. */
  baseline: number;
}

interface Figure {
  box: HTMLElement;
  text: string;
  off: boolean;
  /** The box's width in characters (0: not drawn yet). */
  chars: number;
}

/** Where each box is (left, top, width, in CSS px from the legend's content origin), and the extent of them all. */
interface Places {
  boxes: { left: number; top: number; width: number }[];
  width: number;
  height: number;
}

/** A legend's figures: its boxes, and the canvas over the legend they are drawn on. */
export class LegendFigures {
  private readonly canvas: HTMLCanvasElement = h("canvas", { width: 0, height: 0 });
  /** The list item holding the canvas, to be put last in the legend's list (out of flow, over the others). */
  readonly item: HTMLElement = h("li", { class: "legend-figures", "aria-hidden": "true" }, this.canvas);
  private readonly figures: Figure[] = [];
  private places: Places | null = null;
  private style: FigureStyle | null = null;
  private dirty = false;
  private ctx: CanvasRenderingContext2D | null = null;
  private readonly observer: ResizeObserver | null;

  /**
   * `legend`: the legend's list (positioned: the canvas is placed from its content origin); `colors`: the figures'
   * colour, and a hidden series' (the theme's text and muted colours, as the legend's CSS gives its text).
   */
  constructor(
    private readonly legend: HTMLElement,
    private readonly colors: { on: string; off: string },
  ) {
    this.observer =
      typeof ResizeObserver === "function"
        ? new ResizeObserver(() => {
            // Wrapping or a new width moves the boxes: placed and drawn again now, not at the next tick.
            if (!this.places) return;
            this.places = null;
            this.dirty = true;
            this.draw();
          })
        : null;
    this.observer?.observe(legend);
  }

  /** A new figure's box, to be put in the legend; its figure is `set` by its index (the order of the calls). */
  box(): HTMLElement {
    const box = h("span", { class: "legend-num" });
    this.figures.push({ box, text: "", off: false, chars: 0 });
    return box;
  }

  /** The figure `i`'s text and whether its series is hidden; drawn by the next draw() when either changed. */
  set(i: number, text: string, off: boolean): void {
    const f = this.figures[i];
    if (!f || (f.chars > 0 && f.text === text && f.off === off)) return;
    f.text = text;
    f.off = off;
    this.dirty = true;
    const chars = text.length + 1;
    if (chars > f.chars) {
      // The box grows (a layout, rare: a longer figure than any before), and the boxes after it move.
      f.chars = chars;
      f.box.style.width = `${chars}ch`;
      this.places = null;
    }
  }

  /** The figure `i`'s text as last set ("" before, or for no such figure). */
  text(i: number): string {
    return this.figures[i]?.text ?? "";
  }

  /** Advance widths of the characters and words drawn, in the figures' font (measured once each). */
  private readonly widths = new Map<string, number>();

  /** Draws every figure when one changed since the last draw. */
  draw(): void {
    if (!this.dirty || this.figures.length === 0) return;
    this.dirty = false;
    const canvas = this.canvas;
    if (!canvas.isConnected) return;
    let ctx = this.ctx;
    if (!ctx) {
      ctx = canvas.getContext("2d");
      if (!ctx) return;
      this.ctx = ctx;
    }
    this.style ??= figureStyle(this.figures[0]!.box);
    const style = this.style;
    const ratio = typeof devicePixelRatio === "number" && devicePixelRatio > 0 ? devicePixelRatio : 1;
    let places = this.places;
    if (!places) {
      places = this.place();
      this.places = places;
      const width = Math.ceil(places.width);
      const height = Math.ceil(places.height);
      // Resizing the canvas clears it and resets its state; its CSS size changes no layout (it is out of flow).
      if (canvas.width !== Math.ceil(width * ratio) || canvas.height !== Math.ceil(height * ratio)) {
        canvas.style.width = `${width}px`;
        canvas.style.height = `${height}px`;
        canvas.width = Math.ceil(width * ratio);
        canvas.height = Math.ceil(height * ratio);
      }
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.font = style.font;
    ctx.textBaseline = "alphabetic";
    // Centred in its box, as a button centres its text: drawFigure places its runs from their cached widths.
    ctx.textAlign = "left";
    let fill = "";
    for (let i = 0; i < this.figures.length; i++) {
      const f = this.figures[i]!;
      const p = places.boxes[i]!;
      const color = f.off ? this.colors.off : this.colors.on;
      if (color !== fill) {
        ctx.fillStyle = color;
        fill = color;
      }
      drawFigure(ctx, f.text, p.left + p.width / 2, p.top + style.baseline, this.widths);
    }
  }

  /** Stops watching the legend's size (the chart was rebuilt or destroyed). */
  destroy(): void {
    this.observer?.disconnect();
  }

  /** The boxes' places, read from the layout (a forced layout when the page changed since the last one). */
  private place(): Places {
    const origin = this.legend.getBoundingClientRect();
    const x0 = origin.left - this.legend.scrollLeft + this.legend.clientLeft;
    const y0 = origin.top - this.legend.scrollTop + this.legend.clientTop;
    let width = 0;
    let height = 0;
    const boxes = this.figures.map((f) => {
      const r = f.box.getBoundingClientRect();
      const p = { left: r.left - x0, top: r.top - y0, width: r.width };
      width = Math.max(width, p.left + r.width);
      height = Math.max(height, p.top + r.height);
      return p;
    });
    return { boxes, width, height };
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
export function drawFigure(ctx: CanvasRenderingContext2D, text: string, cx: number, y: number, widths: Map<string, number>): void {
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

function widthOf(ctx: CanvasRenderingContext2D, run: string, widths: Map<string, number>): number {
  let w = widths.get(run);
  if (w === undefined) {
    w = ctx.measureText(run).width;
    widths.set(run, w);
  }
  return w;
}

/**
 * The style the figures are drawn with: the font a figure's text would have in `box`, and where a line of
 * the computed line height puts its baseline from the box's top (Blink floors the half-leading; line-height normal
 * has none).
 */
export function figureStyle(box: Element): FigureStyle {
  const cs = getComputedStyle(box);
  const size = Number.parseFloat(cs.fontSize) || 12;
  const font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
  const lineHeight = Number.parseFloat(cs.lineHeight);
  let baseline = size;
  const probe = document.createElement("canvas").getContext("2d");
  if (probe) {
    probe.font = font;
    const m = probe.measureText("0");
    const ascent = Math.round(m.fontBoundingBoxAscent);
    const descent = Math.round(m.fontBoundingBoxDescent);
    const line = Number.isFinite(lineHeight) ? lineHeight : ascent + descent;
    baseline = Math.floor((line - (ascent + descent)) / 2) + ascent;
  }
  return { font, baseline };
}
