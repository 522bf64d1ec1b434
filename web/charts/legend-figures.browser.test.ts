// The time series chart's legend in Chromium (web/charts/uplot-timeseries.ts with legend-figures.ts): the figures
// drawn on the legend's canvas inside their boxes and nowhere else, a tick writing nothing to the page but the
// chart's accessible name (which names the figures), a longer figure growing its box with the boxes after it drawn at
// their new places, a hidden series' figures muted, and click and shift-click still hiding and isolating.
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { expect, test } from "vitest";
import { bundledPages } from "../e2e/bundled-page.ts";

// The chart and the page's stylesheet, bundled as the page bundles them; the test drives it through window.legendTest.
const ENTRY = `
import "../styles.css";
import "uplot/dist/uPlot.min.css";
import { TimeseriesChart } from "./uplot-timeseries.ts";
import { drawFigure } from "./figure-text.ts";
import { figureStyle } from "./legend-figures.ts";
const el = document.getElementById("el");
let chart;
const series = (last) => ["host-a", "host-b"].map((key, s) => ({
  key,
  points: Array.from({ length: 60 }, (_, i) => [1_700_000_000_000 + i * 5000, i === 59 ? last[s] : 10 + s * 10 + (i % 7)]),
}));
const hidden = new Set();
const opts = (legend) => ({ title: "Load", unit: "%", range: null, height: 200, syncKey: "t", hidden, dark: false, legend });
window.legendTest = {
  // Each text drawn whole by fillText and by drawFigure (digits one by one, words whole): the pixels that differ.
  compare(texts, ratio) {
    const box = document.createElement("span");
    box.className = "legend-val";
    document.body.append(box);
    const { font } = figureStyle(box);
    box.remove();
    const widths = new Map();
    return texts.map((t) => {
      const pixels = (draw) => {
        const c = document.createElement("canvas");
        c.width = 200 * ratio;
        c.height = 30 * ratio;
        const ctx = c.getContext("2d");
        ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
        ctx.font = font;
        draw(ctx);
        return ctx.getImageData(0, 0, c.width, c.height).data;
      };
      const whole = pixels((ctx) => {
        ctx.textAlign = "center";
        ctx.fillText(t, 100.25, 20);
      });
      const runs = pixels((ctx) => {
        ctx.textAlign = "left";
        drawFigure(ctx, t, 100.25, 20, widths);
      });
      let differ = 0;
      for (let i = 3; i < whole.length; i += 4) if (whole[i] !== runs[i]) differ++;
      return differ;
    });
  },
  draw(last, legend) {
    chart ??= new TimeseriesChart(el, opts(legend));
    chart.update(series(last), opts(legend));
  },
};
`;

const pages = bundledPages(ENTRY, fileURLToPath(new URL(".", import.meta.url)), "legendTest");
const open = () => pages.open({ viewport: { width: 700, height: 500 }, colorScheme: "light" }, '<div id="el" class="panel-body"></div>');

/** Draws, then waits for a frame (the legend's resize observer may redraw after layout). */
async function draw(page: Page, last: [number, number], legend?: unknown): Promise<void> {
  await page.evaluate(([l, lg]) => (window as unknown as { legendTest: { draw(a: unknown, b: unknown): void } }).legendTest.draw(l, lg), [
    last,
    legend,
  ] as const);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
}

interface Ink {
  /** Per figure box: painted pixels inside it, and the darkest colour there. */
  boxes: { inside: number; darkest: [number, number, number] }[];
  /** Painted pixels of the canvas outside every box. */
  outside: number;
}

/** Where the legend's canvas has ink, by the figure boxes' places in the layout. */
function ink(page: Page): Promise<Ink> {
  return page.evaluate(() => {
    const canvas = document.querySelector<HTMLCanvasElement>(".legend-figures canvas")!;
    const c = canvas.getBoundingClientRect();
    const sx = canvas.width / c.width;
    const sy = canvas.height / c.height;
    const px = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height).data;
    const rects = [...document.querySelectorAll(".legend-num")].map((b) => b.getBoundingClientRect());
    const boxes = rects.map(() => ({ inside: 0, darkest: [255, 255, 255] as [number, number, number], sum: 999 }));
    let outside = 0;
    for (let y = 0; y < canvas.height; y++)
      for (let x = 0; x < canvas.width; x++) {
        const k = (y * canvas.width + x) * 4;
        const a = px[k + 3]!;
        if (a === 0) continue;
        const cx = c.left + (x + 0.5) / sx;
        const cy = c.top + (y + 0.5) / sy;
        // A glyph's antialiasing may reach a pixel past its box's edge.
        const i = rects.findIndex((r) => cx >= r.left - 1 && cx <= r.right + 1 && cy >= r.top - 1 && cy <= r.bottom + 3);
        if (i < 0) {
          outside++;
          continue;
        }
        const b = boxes[i]!;
        b.inside++;
        if (a === 255 && px[k]! + px[k + 1]! + px[k + 2]! < b.sum) {
          b.sum = px[k]! + px[k + 1]! + px[k + 2]!;
          b.darkest = [px[k]!, px[k + 1]!, px[k + 2]!];
        }
      }
    return { boxes: boxes.map(({ inside, darkest }) => ({ inside, darkest })), outside };
  });
}

const label = (page: Page) => page.locator("#el").getAttribute("aria-label");

test("the figures are drawn in their boxes only, and named in the chart's accessible name", async () => {
  const page = await open();
  await draw(page, [12.5, 40], { values: ["last", "max"] });
  const first = await ink(page);
  expect(first.boxes).toHaveLength(4);
  for (const b of first.boxes) expect(b.inside).toBeGreaterThan(10);
  expect(first.outside).toBe(0);
  expect(await label(page)).toContain("host-a: last 12.5%, max 16%; host-b: last 40%, max 40%");
  // The names and the value labels stay text; the figures are not (the canvas is aria-hidden).
  expect(await page.locator(".legend-item").first().innerText()).toMatch(/^host-a\s+last\s+max\s*$/);
  expect(await page.locator(".legend-figures").getAttribute("aria-hidden")).toBe("true");
  await page.close();
});

test("a tick writes nothing to the page but the accessible name, and the canvas shows the new figures", async () => {
  const page = await open();
  await draw(page, [12.5, 40]);
  const before = await page.locator(".legend-figures canvas").evaluate((c: HTMLCanvasElement) => c.toDataURL());
  await page.evaluate(() => {
    const w = window as unknown as { records: string[] };
    w.records = [];
    new MutationObserver((list) => {
      for (const m of list) w.records.push(m.type === "attributes" ? `${m.type} ${m.attributeName}` : m.type);
    }).observe(document.getElementById("el")!, { subtree: true, childList: true, attributes: true, characterData: true });
  });
  await draw(page, [13.5, 41]);
  expect(await page.evaluate(() => (window as unknown as { records: string[] }).records)).toEqual(["attributes aria-label"]);
  expect(await page.locator(".legend-figures canvas").evaluate((c: HTMLCanvasElement) => c.toDataURL())).not.toBe(before);
  expect(await label(page)).toContain("last: host-a 13.5%, host-b 41%");
  await page.close();
});

test("a longer figure grows its box, and the figures after it are drawn at their new places", async () => {
  const page = await open();
  await draw(page, [1, 2]);
  const x = () =>
    page
      .locator(".legend-num")
      .nth(1)
      .evaluate((b) => b.getBoundingClientRect().left);
  const was = await x();
  await draw(page, [123.45, 2]);
  expect(await x()).toBeGreaterThan(was);
  const after = await ink(page);
  for (const b of after.boxes) expect(b.inside).toBeGreaterThan(5);
  expect(after.outside).toBe(0);
  await page.close();
});

test("a hidden series' figure is muted; click hides, shift-click shows one alone", async () => {
  const page = await open();
  await draw(page, [12.5, 40]);
  const items = page.locator(".legend-item");
  await items.nth(1).click();
  expect(await items.nth(1).getAttribute("aria-pressed")).toBe("false");
  expect(await label(page)).not.toContain("host-b");
  const muted = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--muted").trim());
  const text = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--text").trim());
  const hex = ([r, g, b]: [number, number, number]) => `#${[r, g, b].map((v) => v.toString(16).padStart(2, "0")).join("")}`;
  const shown = await ink(page);
  expect(hex(shown.boxes[1]!.darkest)).toBe(muted);
  expect(hex(shown.boxes[0]!.darkest)).toBe(text);
  // Shown again, then shift-click: that series alone; again: everything.
  await items.nth(1).click();
  await items.nth(1).click({ modifiers: ["Shift"] });
  expect(await items.nth(0).getAttribute("aria-pressed")).toBe("false");
  expect(await items.nth(1).getAttribute("aria-pressed")).toBe("true");
  expect(hex((await ink(page)).boxes[0]!.darkest)).toBe(muted);
  await items.nth(1).click({ modifiers: ["Shift"] });
  expect(await items.nth(0).getAttribute("aria-pressed")).toBe("true");
  expect(hex((await ink(page)).boxes[0]!.darkest)).toBe(text);
  await page.close();
});

test("a figure drawn a digit at a time is pixel-equal to the whole text drawn at once", async () => {
  const page = await open();
  const texts = ["12.3 req/min", "954 MiB", "60%", "\u22121.25 ms", "-0.417 s", "1,234", "7.03 GiB", "41.7/s", "12 ½ µs", "٣٫٥ م"];
  for (const ratio of [1, 2]) {
    const differ = await page.evaluate(
      ([t, r]) => (window as unknown as { legendTest: { compare(t: string[], r: number): number[] } }).legendTest.compare(t, r),
      [texts, ratio] as const,
    );
    expect(differ).toEqual(texts.map(() => 0));
  }
  await page.close();
});
