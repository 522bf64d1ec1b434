// The browser side of `npm run bench -- web`: a 20-panel dashboard of 4 series x 720 points, then 300 ticks that
// each slide every series by one point, through the live page's own code: the snapshot's results parsed and taken
// by each panel's PanelData (web/live/panel-data.ts: merged into the window when first read or in idle time), every
// tick a panel-delta frame per panel decoded, applied to the held result in place and merged (PanelData.applyDelta), panels drawn by
// renderResult through the live page's draw scheduler (next animation frame, visible panels only, in viewport order
// within a frame budget, so one tick's drawing may span several frames). ?impl=svg draws every panel with the earlier
// SVG renderer synchronously on each tick instead (the renderer comparison). Results go to window.benchResult.
import "../../web/styles.css";
import "uplot/dist/uPlot.min.css";
import { type ChartWorker, startChartWorker } from "../../web/charts/chart-worker.ts";
import { renderResult } from "../../web/charts/index.ts";
import { renderTimeseries } from "../../web/charts/timeseries.ts";
import { frameMarks } from "../../web/lib/frame-marks.ts";
import { createDrawScheduler } from "../../web/live/draw-scheduler.ts";
import { createIdleSettler, PanelData } from "../../web/live/panel-data.ts";
import { takeEarlyStream } from "../../web/lib/early-stream.ts";
import { openStream } from "../../web/lib/sse-client.ts";
import { afterNextPaint, createEarlySnapshotIntake, takeSnapshotPanels } from "../../web/lib/snapshot-intake.ts";
import { decodeFrame, type PanelDeltaFrame, type QueryResult, splitSnapshot } from "../../lib/live/frames.ts";
import { BENCH_DONE, deltaAt, PANELS, POINTS, rangeAt, STEP, T0, TICKS } from "./data.ts";

declare global {
  interface Window {
    benchResult?: unknown;
    gc?: () => void;
  }
}

const scriptStart = performance.now();
/**
 * Long animation frames (over 50 ms) as the browser times them, to its rendering's end: the first chart's frame ends
 * there. The task a frame posts runs after it, but not always next: with the snapshot taken from its first bytes, the
 * stream's reads of the rest are queued too and may run first, which would count them in that frame.
 */
const longFrames: { start: number; end: number }[] = [];
const longFrameObserver = PerformanceObserver.supportedEntryTypes.includes("long-animation-frame")
  ? new PerformanceObserver((list) => {
      for (const e of list.getEntries()) longFrames.push({ start: e.startTime, end: e.startTime + e.duration });
    })
  : null;
longFrameObserver?.observe({ type: "long-animation-frame", buffered: true });
/** When the frame that ran a callback at `start` finished rendering: the long frame holding it, or `fallback`. */
function frameEnd(start: number, fallback: number): number {
  for (const e of longFrameObserver?.takeRecords() ?? []) longFrames.push({ start: e.startTime, end: e.startTime + e.duration });
  const f = longFrames.find((x) => x.start <= start && start <= x.end);
  return f ? Math.min(f.end, fallback) : fallback;
}
/** The stream the bench's page names in its early-stream script (bench/web.ts). */
const STREAM_URL = "/stream";
const params = new URLSearchParams(location.search);
const impl = params.get("impl") === "svg" ? "svg" : "uplot";
/**
 * The chart worker, started as the live page starts it (web/pages/live.ts: after the frame that paints the snapshot's
 * first chart); ?worker=off leaves it out, and every chart draws its lines and legend figures on this thread (the
 * side-by-side line). Each batch it draws is recorded: its busy time (the worker's thread, not this one) and when it
 * ended.
 */
let chartWorker: ChartWorker | null = null;
const workerBatches: { busyMs: number; endedAt: number }[] = [];
function startWorker(): void {
  if (params.get("worker") === "off" || chartWorker) return;
  chartWorker = startChartWorker();
  if (chartWorker) chartWorker.onDrawn = (busyMs, endedAt) => workerBatches.push({ busyMs, endedAt });
}
/** Fewer ticks for a trace (?ticks=30); the bench runs 300. */
const tickCount = Math.min(TICKS, Number(params.get("ticks")) || TICKS);
const grid = document.getElementById("grid")!;

interface Panel {
  id: string;
  card: HTMLElement;
  body: HTMLElement;
  data: PanelData;
  at: number;
  hidden: Set<string>;
}

// The live page's markup (web/pages/live.ts, setSummary) and stylesheet, so layout and paint cost what they cost there.
const panels: Panel[] = Array.from({ length: PANELS }, (_, i) => {
  const body = document.createElement("div");
  body.className = "panel-body";
  body.tabIndex = 0;
  body.setAttribute("role", "figure");
  const head = document.createElement("header");
  head.className = "panel-head";
  const title = document.createElement("h2");
  title.textContent = `Panel p${i}`;
  const meta = document.createElement("span");
  meta.className = "panel-meta muted";
  head.append(title, meta);
  const card = document.createElement("article");
  card.className = "panel panel-timeseries";
  card.append(head, body);
  grid.append(card);
  return { id: `p${i}`, card, body, data: new PanelData(POINTS, true), at: 0, hidden: new Set() };
});
const byId = new Map(panels.map((p) => [p.id, p]));

/** The live page's draw of a time series panel (web/pages/live.ts, draw()), for the chart part. */
/** The first chart's draw, in parts: its window taken in (the snapshot's rows merged), then the chart built and drawn. */
let firstDraw: { windowMs: number; chartMs: number } | undefined;

function drawPanel(p: Panel): void {
  const u = p.data.last;
  if (!u || !("result" in u)) return;
  const result = u.result;
  const marks = frameMarks(result);
  const newest = (p.at - T0) / STEP;
  const start = performance.now();
  const rolling = p.data.window;
  const taken = performance.now();
  renderResult(p.body, "timeseries", result, {
    unit: "%",
    window: rolling,
    range: rangeAt(newest),
    title: `Panel ${p.id}`,
    options: {},
    hidden: p.hidden,
    syncKey: "bench",
    onZoom: () => {},
    height: 220,
    partialFrom: marks.partialFrom,
    stepMs: marks.stepMs,
  });
  firstDraw ??= { windowMs: taken - start, chartMs: performance.now() - taken };
}

function drawSvg(p: Panel): void {
  const w = p.data.window;
  const series = w.keys().map((key) => ({ key, points: w.get(key) }));
  renderTimeseries(p.body, series, { range: rangeAt((p.at - T0) / STEP), unit: "%" });
}

/** One animation frame in which the scheduler ran: its span, the charts it drew, whether it asked for another. */
interface FrameRecord {
  start: number;
  end: number;
  drew: number;
  more: boolean;
}
let drawsThisFrame = 0;
let inFrame = false;
let requestedInFrame = false;
let onFrameDone: ((f: FrameRecord) => void) | undefined;

/**
 * The browser's requestAnimationFrame as the scheduler uses it by default, timed: from the scheduler's callback (the
 * only animation-frame callback the page has then) to a task posted from it, which runs once that frame's style,
 * layout and paint are done.
 */
function timedFrame(callback: () => void): void {
  if (inFrame) requestedInFrame = true;
  requestAnimationFrame(() => {
    const record: FrameRecord = { start: performance.now(), end: 0, drew: 0, more: false };
    inFrame = true;
    requestedInFrame = false;
    drawsThisFrame = 0;
    try {
      callback();
    } finally {
      inFrame = false;
    }
    record.drew = drawsThisFrame;
    record.more = requestedInFrame;
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      record.end = performance.now();
      onFrameDone?.(record);
    };
    channel.port2.postMessage(null);
  });
}

/** The frames that draw what is due now: each one as it ends, until one asks for no other. */
function drawingFrames(): Promise<FrameRecord[]> {
  const frames: FrameRecord[] = [];
  return new Promise((resolve) => {
    onFrameDone = (f) => {
      frames.push(f);
      if (f.more) return;
      onFrameDone = undefined;
      resolve(frames);
    };
  });
}

/** ?budget=none: every due visible chart in one frame, as before the frame budget (the side-by-side comparison). */
const scheduler = createDrawScheduler({
  requestFrame: timedFrame,
  ...(params.get("budget") === "none" ? { budgetMs: Number.POSITIVE_INFINITY } : {}),
});
const settleWhenIdle = createIdleSettler(() => panels.map((p) => p.data));
// As the live page registers its cards (web/pages/live.ts): a card held outside the viewport merges its ticks when it
// is drawn, once it scrolls in.
if (impl === "uplot")
  for (const p of panels)
    scheduler.add(
      p.card,
      () => {
        drawsThisFrame++;
        p.data.deferTicks = false;
        drawPanel(p);
      },
      () => {
        p.data.deferTicks = true;
      },
    );

/** A panel's full result (`result`) or incremental tick (`delta`), as the live page's applyUpdate and applyDelta take them in. */
function apply(panelId: string, at: number, update: { result: QueryResult } | { delta: PanelDeltaFrame }): void {
  const p = byId.get(panelId)!;
  p.at = at;
  const range = rangeAt((at - T0) / STEP);
  if ("delta" in update) {
    if (!p.data.applyDelta(update.delta, range)) throw new Error("a delta without a held result");
  } else p.data.apply({ panelId, at, result: update.result }, range);
  if (impl === "svg") {
    drawSvg(p);
    return;
  }
  scheduler.invalidate(p.card);
  if (p.data.unsettled) settleWhenIdle();
}

/**
 * Times the frame that draws some work. Made before the work, its first callback runs first in the next frame (before
 * the scheduler's, which the work registers); `afterWork()`, called after it, registers a callback that runs after the
 * scheduler's and posts a task, which runs once that frame's style, layout and paint are done.
 */
function frameProbe(): { started: Promise<number>; afterWork(): Promise<number> } {
  const started = new Promise<number>((r) => requestAnimationFrame(() => r(performance.now())));
  return {
    started,
    afterWork: () =>
      new Promise<number>((resolve) => {
        const channel = new MessageChannel();
        channel.port1.onmessage = () => resolve(performance.now());
        requestAnimationFrame(() => channel.port2.postMessage(null));
      }),
  };
}

const heap = () => (performance as unknown as { memory: { usedJSHeapSize: number } }).memory.usedJSHeapSize;
const settle = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));

const span = (f: FrameRecord) => f.end - f.start;

/**
 * The snapshot received, taken in and drawn: the first-chart figures. A function of its own, so that the snapshot's
 * text and parts are not held by main's frame through the ticks (the heap figures are the page's state).
 */
async function firstChart() {
  const drawing = impl === "uplot" ? drawingFrames() : undefined;
  /** When the first panel was taken (parsed and applied), and how long its parse took. */
  let firstTaken = Number.NaN;
  let parseMs = Number.NaN;
  // As the live page reads the snapshot (web/pages/live.ts, attach()): the first panel in layout order taken from the
  // event's first bytes while the rest arrives (createEarlySnapshotIntake), then the others from the whole event.
  const early = createEarlySnapshotIntake({
    head: () => {},
    order: () => panels.map((p) => p.id),
    apply: (u) => {
      firstTaken = performance.now();
      if ("result" in u) apply(u.panelId, u.at, { result: u.result });
    },
  });
  const timedPartial = (event: string, data: () => string) => {
    const start = performance.now();
    const took = early.partial(event, data);
    if (took) parseMs = performance.now() - start;
    return took;
  };
  // The snapshot, as the live page receives it: the stream the page's inline script opened while this bundle loaded,
  // taken over by the stream client, its event decoded (web/pages/live.ts, attach()).
  const data = await new Promise<string>((resolve) => {
    const stream = openStream(
      STREAM_URL,
      {
        onPartial: impl === "uplot" ? timedPartial : undefined,
        onEvent(event, text) {
          if (event !== "snapshot") return;
          stream.close();
          resolve(text);
        },
      },
      { early: takeEarlyStream(STREAM_URL) },
    );
  });
  const fetched = performance.now();
  if (impl === "uplot") afterNextPaint(startWorker);
  const probe = impl === "svg" ? frameProbe() : undefined;
  /** The frames that draw the panels taken after the first frame (the live page's `later`). */
  let restDrawn: Promise<FrameRecord[]> = Promise.resolve([]);
  let tookRest: () => void = () => {};
  const restTaken = new Promise<void>((r) => {
    tookRest = r;
  });
  if (impl === "uplot") {
    // As the live page takes it (web/pages/live.ts): cut into panels, the first in layout order parsed and applied
    // now unless it was taken while the event arrived, the others after the frame that draws it.
    const takenEarly = early.finish();
    const split = splitSnapshot(data);
    if (!split) throw new Error("bad snapshot");
    let first = true;
    takeSnapshotPanels(
      split,
      panels.map((p) => p.id),
      {
        apply: (u) => {
          if (first && takenEarly.size === 0) {
            firstTaken = performance.now();
            parseMs = firstTaken - fetched;
          }
          first = false;
          if ("result" in u) apply(u.panelId, u.at, { result: u.result });
        },
        later: (fn) =>
          afterNextPaint(() => {
            restDrawn = drawingFrames();
            fn();
            tookRest();
          }),
      },
      takenEarly,
    );
  } else {
    // SVG: every panel parsed and drawn at once, as the page did before uPlot (the renderer comparison).
    const frame = decodeFrame("snapshot", data);
    if (frame?.event !== "snapshot") throw new Error("bad snapshot");
    firstTaken = performance.now();
    parseMs = firstTaken - fetched;
    for (const u of frame.data.panels) if ("result" in u) apply(u.panelId, u.at, { result: u.result });
  }
  const merged = performance.now();
  let firstChartAt: number;
  let firstFrame: number;
  let firstFrameCharts: number;
  let allVisibleAt: number;
  let snapshotFrames: number;
  if (drawing) {
    // uPlot: the scheduler's frames, the first one drawing a chart, then the rest of the visible charts.
    const frames = await drawing;
    const first = frames.find((f) => f.drew > 0)!;
    // Drawn on this thread: the chart worker is started after this frame (as the live page starts it).
    firstChartAt = frameEnd(first.start, first.end);
    firstFrame = firstChartAt - first.start;
    firstFrameCharts = first.drew;
    // Then the frames that draw the other visible panels, taken in after the first frame.
    await restTaken;
    const rest = await restDrawn;
    allVisibleAt = (rest.at(-1) ?? frames.at(-1)!).end;
    // The lines the worker drew for these frames, once it had loaded, are part of them.
    await chartWorker?.whenDrawn();
    for (const b of workerBatches) allVisibleAt = Math.max(allVisibleAt, b.endedAt);
    snapshotFrames = frames.length + rest.length;
  } else {
    // SVG: drawn during the merge; the frame that follows paints all 20.
    firstChartAt = await probe!.afterWork();
    firstFrame = firstChartAt - (await probe!.started);
    firstFrameCharts = PANELS;
    allVisibleAt = firstChartAt;
    snapshotFrames = 1;
  }
  return {
    fetched,
    firstTaken,
    parseMs,
    mergeMs: merged - (impl === "svg" ? firstTaken : fetched),
    firstFrame,
    firstFrameCharts,
    firstChartAt,
    allVisibleAt,
    snapshotFrames,
  };
}

async function main(): Promise<void> {
  const first = await firstChart();
  await settle();

  const ticks: number[] = [];
  const dataMs: number[] = [];
  const frameMs: number[] = [];
  const longestFrameMs: number[] = [];
  const allDrawnMs: number[] = [];
  const framesPerTick: number[] = [];
  const workerMs: number[] = [];
  let heapAt100 = 0;
  let heapAt300 = 0;
  for (let t = 1; t <= tickCount; t++) {
    // The wire text of this tick's frames (the server's work, not timed).
    const wire = panels.map((p) => JSON.stringify(deltaAt(p.id, t)));
    const probe = impl === "svg" ? frameProbe() : undefined;
    const drawing = impl === "uplot" ? drawingFrames() : undefined;
    const start = performance.now();
    for (const data of wire) {
      const decoded = decodeFrame("panel-delta", data);
      if (decoded?.event !== "panel-delta") throw new Error("bad frame");
      apply(decoded.data.panelId, decoded.data.at, { delta: decoded.data });
    }
    const end = performance.now();
    const batchesBefore = workerBatches.length;
    let frames: number[];
    let lastEnd: number;
    if (drawing) {
      const recs = await drawing;
      frames = recs.map(span);
      lastEnd = recs.at(-1)!.end;
      // The worker's part: the batches the tick's frames sent, drawn on its thread (not counted in the main thread's).
      await chartWorker?.whenDrawn();
      const batches = workerBatches.slice(batchesBefore);
      if (chartWorker) workerMs.push(batches.reduce((a, b) => a + b.busyMs, 0));
      for (const b of batches) lastEnd = Math.max(lastEnd, b.endedAt);
    } else {
      lastEnd = await probe!.afterWork();
      frames = [lastEnd - (await probe!.started)];
    }
    const drawingMs = frames.reduce((a, b) => a + b, 0);
    dataMs.push(end - start);
    frameMs.push(drawingMs);
    longestFrameMs.push(Math.max(...frames));
    allDrawnMs.push(lastEnd - start);
    framesPerTick.push(frames.length);
    ticks.push(end - start + drawingMs);
    await settle();
    if (t === 100 || t === 300) {
      window.gc?.();
      await settle();
      if (t === 100) heapAt100 = heap();
      else heapAt300 = heap();
    }
  }
  const opened = performance.getEntriesByName(new URL(STREAM_URL, location.href).href)[0]?.startTime ?? Number.NaN;
  window.benchResult = {
    impl,
    scriptStart,
    streamOpened: opened,
    ...first,
    firstDraw: firstDraw ?? { windowMs: Number.NaN, chartMs: Number.NaN },
    ticks,
    dataMs,
    frameMs,
    longestFrameMs,
    allDrawnMs,
    framesPerTick,
    workerMs,
    visible: impl === "uplot" ? scheduler.visibleCount() : PANELS,
    heapAt100,
    heapAt300,
  };
}

void main().then(() => console.log(BENCH_DONE));
