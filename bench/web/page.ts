// The browser side of `npm run bench -- web`: a 20-panel dashboard of 4 series x 720 points, then 300 ticks that
// each slide every series by one point, through the live page's own code: the snapshot's results parsed and taken
// by each panel's PanelData (web/live/panel-data.ts: merged into the window when first read or in idle time), every
// tick a panel-delta frame per panel decoded, applied to the held result and merged (mergeDelta), panels drawn by
// renderResult through the live page's draw scheduler (next animation frame, visible panels only). ?impl=svg draws every panel with the earlier SVG renderer
// synchronously on each tick instead (the renderer comparison). Results go to window.benchResult.
import "../../web/styles.css";
import "uplot/dist/uPlot.min.css";
import { renderResult } from "../../web/charts/index.ts";
import { renderTimeseries } from "../../web/charts/timeseries.ts";
import { frameMarks } from "../../web/lib/frame-marks.ts";
import { createDrawScheduler } from "../../web/live/draw-scheduler.ts";
import { createIdleSettler, PanelData } from "../../web/live/panel-data.ts";
import { applyPanelDelta, decodeFrame, type PanelDeltaFrame, type QueryResult } from "../../lib/live/frames.ts";
import { deltaAt, PANELS, POINTS, rangeAt, STEP, T0, TICKS } from "./data.ts";

declare global {
  interface Window {
    benchResult?: unknown;
    gc?: () => void;
  }
}

const scriptStart = performance.now();
const params = new URLSearchParams(location.search);
const impl = params.get("impl") === "svg" ? "svg" : "uplot";
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
function drawPanel(p: Panel): void {
  const u = p.data.last;
  if (!u || !("result" in u)) return;
  const result = u.result;
  const marks = frameMarks(result);
  const newest = (p.at - T0) / STEP;
  renderResult(p.body, "timeseries", result, {
    unit: "%",
    window: p.data.window,
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
}

function drawSvg(p: Panel): void {
  const w = p.data.window;
  const series = w.keys().map((key) => ({ key, points: w.get(key) }));
  renderTimeseries(p.body, series, { range: rangeAt((p.at - T0) / STEP), unit: "%" });
}

const scheduler = createDrawScheduler();
const settleWhenIdle = createIdleSettler(() => panels.map((p) => p.data));
if (impl === "uplot") for (const p of panels) scheduler.add(p.card, () => drawPanel(p));

/** A panel's full result or incremental tick, as the live page's applyUpdate takes it in. */
function apply(panelId: string, at: number, result: QueryResult, delta?: PanelDeltaFrame): void {
  const p = byId.get(panelId)!;
  p.at = at;
  p.data.apply({ panelId, at, result }, rangeAt((at - T0) / STEP), delta);
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

async function main(): Promise<void> {
  // The snapshot, as the stream delivers it: every panel's full result, parsed on the page.
  const text = await (await fetch("/snapshot.json")).text();
  const fetched = performance.now();
  const probe = frameProbe();
  const snapshot = JSON.parse(text) as { panelId: string; at: number; result: QueryResult }[];
  const parsed = performance.now();
  for (const u of snapshot) apply(u.panelId, u.at, u.result);
  const merged = performance.now();
  const firstChartAt = await probe.afterWork();
  const firstFrame = firstChartAt - (await probe.started);
  // Charts built by that frame (offscreen panels build theirs only once they scroll into view).
  const firstFrameCharts = impl === "uplot" ? document.querySelectorAll(".uplot").length : PANELS;
  await settle();

  const ticks: number[] = [];
  const dataMs: number[] = [];
  const frameMs: number[] = [];
  let heapAt100 = 0;
  let heapAt300 = 0;
  for (let t = 1; t <= tickCount; t++) {
    // The wire text of this tick's frames (the server's work, not timed).
    const wire = panels.map((p) => JSON.stringify(deltaAt(p.id, t)));
    const probe = frameProbe();
    const start = performance.now();
    for (const data of wire) {
      const decoded = decodeFrame("panel-delta", data);
      if (decoded?.event !== "panel-delta") throw new Error("bad frame");
      const d = decoded.data;
      const held = byId.get(d.panelId)!.data.last as { result: QueryResult };
      apply(d.panelId, d.at, applyPanelDelta(held.result, d), d);
    }
    const end = performance.now();
    const rendered = await probe.afterWork();
    const frameStart = await probe.started;
    dataMs.push(end - start);
    frameMs.push(rendered - frameStart);
    ticks.push(end - start + (rendered - frameStart));
    await settle();
    if (t === 100 || t === 300) {
      window.gc?.();
      await settle();
      if (t === 100) heapAt100 = heap();
      else heapAt300 = heap();
    }
  }
  window.benchResult = {
    impl,
    scriptStart,
    fetched,
    parseMs: parsed - fetched,
    mergeMs: merged - parsed,
    firstFrame,
    firstFrameCharts,
    firstChartAt,
    ticks,
    dataMs,
    frameMs,
    visible: impl === "uplot" ? scheduler.visibleCount() : PANELS,
    heapAt100,
    heapAt300,
  };
}

void main();
