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
 *
 * Once the page's chart worker has loaded, the canvas is handed to it and the figures are drawn there
 * (chart-worker.ts); the page still places them and writes their texts.
 */
import { h } from "../lib/dom.ts";
import type { FiguresDraw } from "./chart-worker-messages.ts";
import { type ChartWorker, chartWorker } from "./chart-worker.ts";
import { drawFigures } from "./figure-text.ts";

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
  private canvas: HTMLCanvasElement = h("canvas", { width: 0, height: 0 });
  /** The list item holding the canvas, to be put last in the legend's list (out of flow, over the others). */
  readonly item: HTMLElement = h("li", { class: "legend-figures", "aria-hidden": "true" }, this.canvas);
  private readonly figures: Figure[] = [];
  private places: Places | null = null;
  private style: FigureStyle | null = null;
  private dirty = false;
  private ctx: CanvasRenderingContext2D | null = null;
  /** The canvas handed to the chart worker (null: drawn here). */
  private handed: { worker: ChartWorker; id: number } | null = null;
  /** The canvas' size in device pixels. */
  private size = { width: 0, height: 0 };
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
    if (!this.canvas.isConnected) return;
    // A worker that failed: a fresh canvas, drawn here (the one handed over is the worker's for good).
    if (this.handed && !this.handed.worker.available) {
      this.freshCanvas();
      this.handed = null;
      this.places = null;
      this.size = { width: 0, height: 0 };
    }
    const worker = chartWorker();
    if (worker && !this.handed) this.handOver(worker);
    let ctx = this.ctx;
    if (!this.handed && !ctx) {
      ctx = this.canvas.getContext("2d");
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
      if (this.size.width !== Math.ceil(width * ratio) || this.size.height !== Math.ceil(height * ratio)) {
        this.canvas.style.width = `${width}px`;
        this.canvas.style.height = `${height}px`;
        this.size = { width: Math.ceil(width * ratio), height: Math.ceil(height * ratio) };
        // A canvas handed over is resized by the worker.
        if (!this.handed) {
          this.canvas.width = this.size.width;
          this.canvas.height = this.size.height;
        }
      }
    }
    const d: FiguresDraw = {
      id: this.handed?.id ?? 0,
      width: this.size.width,
      height: this.size.height,
      ratio,
      font: style.font,
      figures: this.figures.map((f, i) => {
        const p = places.boxes[i]!;
        return { text: f.text, cx: p.left + p.width / 2, y: p.top + style.baseline, color: f.off ? this.colors.off : this.colors.on };
      }),
    };
    if (this.handed) this.handed.worker.drawFigures(d);
    else if (ctx) drawFigures(ctx, d, this.widths);
  }

  /**
   * Hands the canvas to the worker: a new one when this one was drawn here already (a canvas with a context cannot be
   * handed over), sized by the next draw.
   */
  private handOver(worker: ChartWorker): void {
    if (this.ctx) this.freshCanvas();
    this.size = { width: this.canvas.width, height: this.canvas.height };
    this.places = null;
    this.handed = { worker, id: worker.adoptCanvas(this.canvas) };
  }

  /** A new canvas in place of this one (with no context: a canvas drawn on or handed over cannot change hands). */
  private freshCanvas(): void {
    const fresh = h("canvas", { width: 0, height: 0 });
    this.canvas.replaceWith(fresh);
    this.canvas = fresh;
    this.ctx = null;
  }

  /** Stops watching the legend's size (the chart was rebuilt or destroyed). */
  destroy(): void {
    this.observer?.disconnect();
    if (this.handed) this.handed.worker.release(this.handed.id);
    this.handed = null;
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
