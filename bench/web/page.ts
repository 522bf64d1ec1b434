// The browser side of `npm run bench -- web`: a 20-panel dashboard of 4 series x 720 points drawn by one chart
// implementation (?impl=uplot or ?impl=svg), then 300 ticks that each slide every series by one point, as the
// live page does. Results go to window.benchResult for the runner to read.
import { renderTimeseries } from "../../web/charts/timeseries.ts";
import { TimeseriesChart } from "../../web/charts/uplot-timeseries.ts";
import type { Point } from "../../web/lib/rolling-window.ts";

const PANELS = 20;
const SERIES = 4;
const POINTS = 720;
const TICKS = 300;
const STEP = 5_000;

declare global {
  interface Window {
    benchResult?: unknown;
    gc?: () => void;
  }
}

const impl = new URLSearchParams(location.search).get("impl") === "svg" ? "svg" : "uplot";
const grid = document.getElementById("grid")!;
const t0 = Date.UTC(2026, 0, 1);
const value = (s: number, i: number) => 50 + 30 * Math.sin((i + s * 40) / 37) + ((i * 7919 + s * 104729) % 13);

function seriesAt(tick: number): { key: string; points: Point[] }[] {
  return Array.from({ length: SERIES }, (_, s) => ({
    key: `host-${s}`,
    points: Array.from({ length: POINTS }, (_, k) => [t0 + (tick + k) * STEP, value(s, tick + k)] as const),
  }));
}

const bodies = Array.from({ length: PANELS }, () => {
  const el = document.createElement("div");
  el.className = "panel-body";
  grid.append(el);
  return el;
});
const hidden = new Set<string>();
const charts = new Map<HTMLElement, TimeseriesChart>();

function draw(tick: number): void {
  const series = seriesAt(tick);
  const range: [number, number] = [t0 + tick * STEP, t0 + (tick + POINTS - 1) * STEP];
  for (const el of bodies) {
    if (impl === "svg") {
      renderTimeseries(el, series, { range, unit: "%" });
      continue;
    }
    const opts = { title: "bench", unit: "%", range, height: 220, syncKey: "bench", hidden, dark: false };
    let chart = charts.get(el);
    if (!chart) {
      chart = new TimeseriesChart(el, opts);
      charts.set(el, chart);
    }
    chart.update(series, opts);
  }
}

/** Runs `f`, then lets queued microtasks (uPlot commits its redraw in one) finish; returns the elapsed ms. */
async function timed(f: () => void): Promise<number> {
  const start = performance.now();
  f();
  await new Promise<void>((r) => queueMicrotask(r));
  await Promise.resolve();
  return performance.now() - start;
}

const heap = () => (performance as unknown as { memory: { usedJSHeapSize: number } }).memory.usedJSHeapSize;
const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));

async function main(): Promise<void> {
  const firstDraw = await timed(() => draw(0));
  const firstChartAt = performance.now();
  await frame();
  const ticks: number[] = [];
  let heapAt100 = 0;
  let heapAt300 = 0;
  for (let t = 1; t <= TICKS; t++) {
    ticks.push(await timed(() => draw(t)));
    await frame();
    if (t === 100 || t === 300) {
      window.gc?.();
      await frame();
      if (t === 100) heapAt100 = heap();
      else heapAt300 = heap();
    }
  }
  window.benchResult = { impl, firstDraw, firstChartAt, ticks, heapAt100, heapAt300 };
}

void main();
