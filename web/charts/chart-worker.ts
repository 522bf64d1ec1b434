/**
 * The chart worker, the page's side. A frame of the live page drew six charts' lines and legends on the page's
 * thread: tracing the lines, then rastering them at commit (Chromium rasters a canvas on the thread that draws it,
 * and without a GPU a 1 px line of 720 points is tens of thousands of pixels of coverage), about 3 ms of the
 * tick's 7; uPlot's axes and grid, drawn and rastered on uPlot's canvas, cost about 2 ms more at p95. Here
 * each chart's plot canvas (laid over uPlot's, which then stays hidden) and the legends' canvases are handed to one
 * worker (`transferControlToOffscreen`), which draws and rasters them on its own thread; the page computes what to
 * draw (uPlot's layout of the axes, scales, pixel boxes, colours, texts and places) and sends every draw of a frame
 * in one message.
 *
 * At most one batch is in flight: draws made while the worker works replace the waiting draw of the same canvas, so a
 * slow worker draws the latest state and never a queue of stale ones. A canvas handed over stays the worker's; the
 * page drops it when its chart goes. Until the worker has loaded (and in a browser without OffscreenCanvas or
 * without the worker's script: a page bundled without it, a test page) `chartWorker()` is null and the charts draw
 * on the page's thread with the same functions (plot-draw.ts, figure-text.ts).
 */
import type { ChartWorkerBatch, FiguresDraw, FromChartWorker, PlotDraw } from "./chart-worker-messages.ts";
import type { ColumnsDelta } from "./columns-delta.ts";

/** The worker script's file name, beside the page's bundle (web/build.ts defines it); absent in a bundle built without it. */
declare const __CHART_WORKER__: string | undefined;

export class ChartWorker {
  private ready = false;
  private nextId = 1;
  private inFlight = false;
  private scheduled = false;
  private adopt: ChartWorkerBatch["adopt"] = [];
  private readonly plots = new Map<number, PlotDraw>();
  private columns: ChartWorkerBatch["columns"] = [];
  private readonly figures = new Map<number, FiguresDraw>();
  private drop: number[] = [];
  private waiters: (() => void)[] = [];
  /** whenPlotDrawn's waits: for the next batch carrying the canvas' draw, then for that batch's answer. */
  private readonly plotWaiters = new Map<number, (() => void)[]>();
  private inFlightWaiters: (() => void)[] = [];
  /** The canvases whose draws the batch in flight carries. */
  private inFlightPlots = new Set<number>();
  /** Called once if the worker fails after loading (the charts take their drawing back). */
  private readonly lost = new Set<() => void>();
  /**
   * A canvas handed over whose element is gone without its chart letting go of it (a page that dropped the element):
   * the worker lets it go too, rather than keep its pixels for the page's life.
   */
  private readonly gone = typeof FinalizationRegistry === "function" ? new FinalizationRegistry<number>((id) => this.release(id)) : null;
  /** The registrations of the canvases not let go of yet (a chart that lets go unregisters its canvas). */
  private readonly tokens = new Map<number, object>();
  /** Each batch drawn: how long the worker worked on it and when it finished (this page's clock). The bench's. */
  onDrawn: ((busyMs: number, endedAt: number) => void) | null = null;

  constructor(private readonly worker: Worker) {
    worker.onmessage = (e: MessageEvent<FromChartWorker>) => {
      const m = e.data;
      if (m.type === "ready") {
        this.ready = true;
        return;
      }
      this.inFlight = false;
      this.onDrawn?.(m.busyMs, m.endedAt - performance.timeOrigin);
      const drawn = this.inFlightWaiters;
      this.inFlightWaiters = [];
      this.inFlightPlots.clear();
      for (const w of drawn) w();
      this.schedule();
      this.settled();
    };
    worker.onerror = (e) => {
      // Before it loaded (its script missing or refused): the charts keep drawing on the page's thread. After: it may
      // not answer again, and a chart waiting on it would stop; the charts take their drawing back (broken()).
      if (!this.ready) e.preventDefault();
      else this.broken();
    };
    worker.onmessageerror = () => this.broken();
  }

  /** Whether the worker has loaded and takes canvases (false again once it failed). */
  get available(): boolean {
    return this.ready && !this.failed;
  }

  private failed = false;

  /** The worker failed: nothing more is sent, every wait ends, and charts that see it unavailable draw on the page. */
  private broken(): void {
    if (this.failed) return;
    this.failed = true;
    this.worker.terminate();
    this.inFlight = false;
    this.adopt = [];
    this.plots.clear();
    this.columns = [];
    this.figures.clear();
    this.drop = [];
    this.wake();
    for (const list of this.plotWaiters.values()) for (const w of list) w();
    this.plotWaiters.clear();
    for (const w of this.inFlightWaiters) w();
    this.inFlightWaiters = [];
    for (const f of this.lost) f();
    this.lost.clear();
  }

  /** Calls `f` if the worker fails after loading; returns the function that stops that. */
  onLost(f: () => void): () => void {
    this.lost.add(f);
    return () => this.lost.delete(f);
  }

  /**
   * Resolves once the worker has drawn the canvas' last draw (the last drawPlot of `id`, waiting or in flight), however
   * many other draws come meanwhile; at once when it has, and when the worker fails or the canvas is released.
   */
  whenPlotDrawn(id: number): Promise<void> {
    if (this.failed) return Promise.resolve();
    if (!this.plots.has(id)) {
      if (!this.inFlightPlots.has(id)) return Promise.resolve();
      return new Promise((r) => this.inFlightWaiters.push(r));
    }
    return new Promise((r) => {
      const list = this.plotWaiters.get(id);
      if (list) list.push(r);
      else this.plotWaiters.set(id, [r]);
    });
  }

  /** Hands `canvas` to the worker (it must have no context yet) and returns its id for the draws. */
  adoptCanvas(canvas: HTMLCanvasElement): number {
    const id = this.nextId++;
    this.adopt.push({ id, canvas: canvas.transferControlToOffscreen() });
    if (this.gone) {
      const token = {};
      this.tokens.set(id, token);
      this.gone.register(canvas, id, token);
    }
    this.schedule();
    return id;
  }

  /** Draws a chart's plot; `delta`: how its columns changed since its last draw (none: they did not). */
  drawPlot(d: PlotDraw, delta: ColumnsDelta | null): void {
    if (this.failed) return;
    this.plots.set(d.id, d);
    // Every delta is kept, in order: each is relative to the one before.
    if (delta) this.columns.push({ id: d.id, delta });
    this.schedule();
  }

  /** Draws a legend's figures. */
  drawFigures(d: FiguresDraw): void {
    if (this.failed) return;
    this.figures.set(d.id, d);
    this.schedule();
  }

  /** The canvas' chart is gone: the worker lets it go. */
  release(id: number): void {
    const token = this.tokens.get(id);
    if (token) this.gone?.unregister(token);
    this.tokens.delete(id);
    if (this.failed) return;
    this.plots.delete(id);
    for (const w of this.plotWaiters.get(id) ?? []) w();
    this.plotWaiters.delete(id);
    this.columns = this.columns.filter((c) => c.id !== id);
    this.figures.delete(id);
    this.drop.push(id);
    this.schedule();
  }

  /** Resolves once every draw made so far is drawn (at once when none is waiting or in flight). */
  whenDrawn(): Promise<void> {
    if (this.failed || (!this.inFlight && !this.scheduled)) return Promise.resolve();
    return new Promise((r) => this.waiters.push(r));
  }

  private settled(): void {
    if (!this.inFlight && !this.scheduled) this.wake();
  }

  /** Ends every wait of whenDrawn(). */
  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** After the current task (a frame's draws are one batch), unless a batch is in flight: then when it is drawn. */
  private schedule(): void {
    if (this.scheduled || this.inFlight || this.failed) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.inFlight) return;
    if (
      this.adopt.length === 0 &&
      this.plots.size === 0 &&
      this.columns.length === 0 &&
      this.figures.size === 0 &&
      this.drop.length === 0
    ) {
      this.settled();
      return;
    }
    const batch: ChartWorkerBatch = {
      type: "batch",
      adopt: this.adopt,
      plots: [...this.plots.values()],
      columns: this.columns,
      figures: [...this.figures.values()],
      drop: this.drop,
    };
    this.inFlightPlots = new Set(this.plots.keys());
    for (const id of this.plots.keys()) {
      const list = this.plotWaiters.get(id);
      if (!list) continue;
      this.inFlightWaiters.push(...list);
      this.plotWaiters.delete(id);
    }
    const transfer = this.adopt.map((a) => a.canvas);
    this.adopt = [];
    this.plots.clear();
    this.columns = [];
    this.figures.clear();
    this.drop = [];
    this.inFlight = true;
    this.worker.postMessage(batch, transfer);
  }
}

let page: ChartWorker | null = null;

function builtWorker(): string | undefined {
  return typeof __CHART_WORKER__ === "string" ? new URL(__CHART_WORKER__, import.meta.url).href : undefined;
}

/**
 * Starts the page's chart worker from the build's script (`url`; by default the one the build named), when the browser
 * can hand a canvas to a worker, and returns it (null: none, the charts draw on the page's thread). Called once by the
 * page's entry; a second call returns the same one.
 */
export function startChartWorker(url: string | undefined = builtWorker()): ChartWorker | null {
  if (page || !url || typeof Worker !== "function" || typeof OffscreenCanvas !== "function") return page;
  if (typeof HTMLCanvasElement.prototype.transferControlToOffscreen !== "function") return null;
  page = new ChartWorker(new Worker(url, { name: "charts" }));
  return page;
}

/** The page's chart worker once it has loaded; null before, or when there is none (the charts draw themselves). */
export function chartWorker(): ChartWorker | null {
  return page?.available ? page : null;
}
