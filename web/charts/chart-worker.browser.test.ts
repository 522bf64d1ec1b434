// The chart worker in Chromium (web/charts/chart-worker.ts): a time series chart whose plot (axes, grid, threshold
// steps, lines) and legend figures the worker draws shows what one drawn on the page's thread shows (to the rounding
// of a layer's blend), through a first draw, incremental ticks (the columns sent as deltas), a hidden series, a gap
// and the bucket still filling; and so does a chart that started on the page's thread and was handed to the worker
// once it loaded. Three pages: no worker, the worker from the start, the worker started after the first draw.
import { readFile, rm } from "node:fs/promises";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { buildChartWorker } from "../build.ts";
import { bundleForPage, launchChromium } from "../e2e/harness.ts";

const ENTRY = `
import "../styles.css";
import "uplot/dist/uPlot.min.css";
import { TimeseriesChart } from "./uplot-timeseries.ts";
import { chartWorker, startChartWorker } from "./chart-worker.ts";
const STEP = 60_000;
const T0 = 1_767_225_600_000;
const el = document.getElementById("el");
const hidden = new Set();
let chart;
// Bucket i of series s: a wave, with a hole (buckets 40 to 42 of host-b) that makes a gap.
const value = (i, s) => 40 + 20 * Math.sin(i / 9 + s) + (i % 5) * 1.5 + s * 7;
const series = (tick) => ["host-a", "host-b", "host-c"].map((key, s) => ({
  key,
  points: Array.from({ length: 120 }, (_, k) => tick + k)
    .filter((i) => !(s === 1 && i >= 40 && i <= 42))
    .map((i) => [T0 + i * STEP, value(i, s)]),
}));
const opts = (tick) => ({
  title: "Load",
  unit: "%",
  range: [T0 + tick * STEP, T0 + (tick + 119) * STEP],
  height: 220,
  syncKey: "t",
  hidden,
  dark: false,
  partialFrom: T0 + (tick + 119) * STEP,
  stepMs: STEP,
  thresholds: [{ value: null, color: "#2f9e44" }, { value: 60, color: "#e03131" }],
});
const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
const shown = () => [...document.querySelectorAll(".uplot canvas")].map((c) => c.className + ":" + getComputedStyle(c).visibility);
window.workerTest = {
  start(url) {
    startChartWorker(url);
  },
  ready: () => chartWorker() !== null,
  // A tick: the window slid by one bucket; the points before the last two are what the last tick had.
  async draw(tick, hide) {
    hidden.clear();
    if (hide) hidden.add(hide);
    chart ??= new TimeseriesChart(el, opts(tick));
    chart.update(series(tick), opts(tick), tick === 0 || hide ? Number.NEGATIVE_INFINITY : T0 + (tick + 117) * STEP);
    await chartWorker()?.whenDrawn();
    await frames();
  },
  // The chart's box resized, then a tick: which canvas shows before the worker has drawn at the new size, and after.
  async resize(width, tick) {
    el.style.width = width + "px";
    await frames();
    chart.update(series(tick), opts(tick), T0 + (tick + 117) * STEP);
    const during = shown();
    await chartWorker()?.whenDrawn();
    await frames();
    return { during, after: shown() };
  },
  // A rebuild (the options changed): what shows before the worker has drawn the new layer, and how much of uPlot's
  // canvas is painted then.
  async rebuild(tick) {
    chart.update(series(tick), { ...opts(tick), height: 200 });
    const during = shown();
    const base = document.querySelector(".uplot canvas:not(.u-plot-layer)");
    const px = base.getContext("2d").getImageData(0, 0, base.width, base.height).data;
    let painted = 0;
    for (let i = 3; i < px.length; i += 4) if (px[i] > 0) painted++;
    await chartWorker()?.whenDrawn();
    await frames();
    return { during, painted, after: shown() };
  },
  // The worker fails after loading (an error it did not catch): what shows once the page has taken the drawing back.
  async fail() {
    const worker = chartWorker();
    worker.worker.onerror({ preventDefault() {} });
    await frames();
    return { after: shown(), available: worker.available };
    await chartWorker()?.whenDrawn();
    await frames();
    return { during, after: shown() };
  },
  layers: () => document.querySelectorAll("canvas.u-plot-layer").length,
  // uPlot's own canvas: shown while the page draws the plot on it, hidden under the worker's layer.
  base: () => getComputedStyle(document.querySelector(".uplot canvas:not(.u-plot-layer)")).visibility,
};
`;

const HTML = `<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/page.css"></head>
<body><div id="el" class="panel-body" style="width:640px"></div><script type="module" src="/page.js"></script></body></html>`;

let browser: Browser;
let dir = "";
let files: Record<string, { body: string; type: string }> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pulseboard-chart-worker-"));
  const worker = await buildChartWorker(dir, { sourcemap: false });
  const { js, css } = await bundleForPage(ENTRY, fileURLToPath(new URL(".", import.meta.url)));
  files = {
    "/": { body: HTML, type: "text/html" },
    "/page.js": { body: js, type: "text/javascript" },
    "/page.css": { body: css, type: "text/css" },
    "/chart-worker.js": { body: await readFile(join(dir, worker), "utf8"), type: "text/javascript" },
  };
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A page on a test origin whose files are the bundles above (no network). */
async function open(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 700, height: 400 } });
  await page.route("http://charts.test/**", (route) => {
    const f = files[new URL(route.request().url()).pathname];
    return f ? route.fulfill({ status: 200, contentType: f.type, body: f.body }) : route.fulfill({ status: 404 });
  });
  await page.goto("http://charts.test/");
  await page.waitForFunction(() => "workerTest" in window);
  return page;
}

type Api = {
  workerTest: {
    start(u: string): void;
    ready(): boolean;
    draw(t: number, hide?: string): Promise<void>;
    resize(width: number, tick: number): Promise<{ during: string[]; after: string[] }>;
    rebuild(tick: number): Promise<{ during: string[]; painted: number; after: string[] }>;
    fail(): Promise<{ after: string[]; available: boolean }>;
    layers(): number;
    base(): string;
  };
};

async function startWorker(page: Page): Promise<void> {
  await page.evaluate(() => (window as unknown as Api).workerTest.start("/chart-worker.js"));
  await page.waitForFunction(() => (window as unknown as Api).workerTest.ready());
}

/** Draws the steps in turn and returns a screenshot of the chart after each; `before` runs after the first. */
async function shots(page: Page, afterFirst?: () => Promise<void>): Promise<Buffer[]> {
  const steps: [number, string?][] = [[0], [1], [2], [3], [3, "host-a"], [4], [30], [31]];
  const out: Buffer[] = [];
  for (const [i, [tick, hide]] of steps.entries()) {
    await page.evaluate(([t, h]) => (window as unknown as Api).workerTest.draw(t as number, h as string | undefined), [
      tick,
      hide,
    ] as const);
    out.push(await page.locator("#el").screenshot());
    if (i === 0) await afterFirst?.();
  }
  return out;
}

/** Per pixel, the largest channel difference between two screenshots of one size (decoded by the page), and how many differ. */
async function difference(page: Page, a: Buffer, b: Buffer): Promise<{ max: number; count: number }> {
  return page.evaluate(
    async ([srcA, srcB]) => {
      const load = (src: string) =>
        new Promise<HTMLImageElement>((res, rej) => {
          const img = new Image();
          img.onload = () => res(img);
          img.onerror = rej;
          img.src = src;
        });
      const pixels = (img: HTMLImageElement) => {
        const c = document.createElement("canvas");
        c.width = img.width;
        c.height = img.height;
        const ctx = c.getContext("2d")!;
        ctx.drawImage(img, 0, 0);
        return ctx.getImageData(0, 0, c.width, c.height).data;
      };
      const [ia, ib] = await Promise.all([load(srcA), load(srcB)]);
      if (ia.width !== ib.width || ia.height !== ib.height) return { max: 255, count: -1 };
      const [pa, pb] = [pixels(ia), pixels(ib)];
      let max = 0;
      let count = 0;
      for (let i = 0; i < pa.length; i++) {
        const d = Math.abs(pa[i]! - pb[i]!);
        if (d > 0 && i % 4 === 0) count++;
        if (d > max) max = d;
      }
      return { max, count };
    },
    [`data:image/png;base64,${a.toString("base64")}`, `data:image/png;base64,${b.toString("base64")}`] as const,
  );
}

test("the worker draws the plot and figures the page's thread draws, to a level or two of blending, from the first draw or after a handover", async () => {
  const plain = await open();
  const onPage = await shots(plain);
  expect(await plain.evaluate(() => (window as unknown as Api).workerTest.layers())).toBe(0);
  expect(await plain.evaluate(() => (window as unknown as Api).workerTest.base())).toBe("visible");

  const worker = await open();
  await startWorker(worker);
  const inWorker = await shots(worker);
  // The plot is on the worker's layer: uPlot's canvas is hidden.
  expect(await worker.evaluate(() => (window as unknown as Api).workerTest.layers())).toBe(1);
  expect(await worker.evaluate(() => (window as unknown as Api).workerTest.base())).toBe("hidden");

  const later = await open();
  const handedOver = await shots(later, () => startWorker(later));
  expect(await later.evaluate(() => (window as unknown as Api).workerTest.layers())).toBe(1);
  expect(await later.evaluate(() => (window as unknown as Api).workerTest.base())).toBe("hidden");

  for (let i = 0; i < onPage.length; i++) {
    for (const [name, shot] of [
      ["worker from the start", inWorker[i]!],
      ["handed over after the first draw", handedOver[i]!],
    ] as const) {
      const d = await difference(plain, onPage[i]!, shot);
      // A layer composited over uPlot's canvas rounds its antialiased pixels' blend a level or two apart from strokes
      // blended into that canvas; a line or figure missing or moved differs by far more.
      expect(d.max, `step ${i}, ${name}: ${d.count} pixels differ`).toBeLessThanOrEqual(2);
    }
  }
  // The comparison can fail: a step against the next differs by far more than that.
  expect((await difference(plain, onPage[1]!, onPage[2]!)).max).toBeGreaterThan(50);
  await Promise.all([plain.close(), worker.close(), later.close()]);
}, 120_000);

test("a resized chart shows the page's drawing until the worker has drawn its layer at the new size, never the old one stretched", async () => {
  const plain = await open();
  await plain.evaluate(() => (window as unknown as Api).workerTest.draw(0));
  await plain.evaluate(() => (window as unknown as Api).workerTest.resize(520, 1));
  const onPage = await plain.locator("#el").screenshot();

  const worker = await open();
  await startWorker(worker);
  await worker.evaluate(() => (window as unknown as Api).workerTest.draw(0));
  const r = await worker.evaluate(() => (window as unknown as Api).workerTest.resize(520, 1));
  // Before the worker's answer: uPlot's canvas (drawn by the page at the new size) shows, the layer is hidden.
  expect(r.during).toEqual([":visible", "u-plot-layer:hidden"]);
  expect(r.after).toEqual([":hidden", "u-plot-layer:visible"]);
  const d = await difference(plain, onPage, await worker.locator("#el").screenshot());
  expect(d.max, `${d.count} pixels differ`).toBeLessThanOrEqual(2);
  await Promise.all([plain.close(), worker.close()]);
}, 60_000);

test("a rebuilt chart shows the page's drawing until the worker has drawn its new layer; a worker that fails gives the drawing back at once", async () => {
  const plain = await open();
  await plain.evaluate(() => (window as unknown as Api).workerTest.draw(0));
  await plain.evaluate(() => (window as unknown as Api).workerTest.rebuild(1));
  const onPage = await plain.locator("#el").screenshot();

  const worker = await open();
  await startWorker(worker);
  await worker.evaluate(() => (window as unknown as Api).workerTest.draw(0));
  const r = await worker.evaluate(() => (window as unknown as Api).workerTest.rebuild(1));
  // The new plot is on uPlot's canvas at once (axes, grid, lines: thousands of pixels), its layer hidden until drawn.
  expect(r.during).toEqual([":visible", "u-plot-layer:hidden"]);
  expect(r.painted).toBeGreaterThan(5000);
  expect(r.after).toEqual([":hidden", "u-plot-layer:visible"]);
  const d = await difference(plain, onPage, await worker.locator("#el").screenshot());
  expect(d.max, `${d.count} pixels differ`).toBeLessThanOrEqual(2);

  // The worker fails: the chart draws on its own canvas again without waiting for a tick, and the layer is gone.
  const f = await worker.evaluate(() => (window as unknown as Api).workerTest.fail());
  expect(f.available).toBe(false);
  expect(f.after).toEqual([":visible"]);
  const e = await difference(plain, onPage, await worker.locator("#el").screenshot());
  expect(e.max, `${e.count} pixels differ`).toBeLessThanOrEqual(2);
  await Promise.all([plain.close(), worker.close()]);
}, 60_000);
