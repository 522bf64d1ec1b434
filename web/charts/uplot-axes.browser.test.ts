// The time series chart's axes in Chromium (web/charts/uplot-axes.ts with axes-draw.ts): uPlot lays the axes out but
// draws nothing, and the chart draws them from that layout, on the page or in the chart worker. Here two uPlot
// charts with the chart's own axis options are drawn side by side, one by uPlot's own axis drawing and one by
// readAxes and drawAxes, over ranges of an hour, a day and a month, in UTC and another zone, for percent and
// bytes, in both themes, at device pixel ratios 1 and 2: their canvases are the same to the pixel. Threshold steps
// are drawn as a band over the plot and a line where a step starts.
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { bundledPages } from "../e2e/bundled-page.ts";

const ENTRY = `
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { valueFormatter } from "../lib/value-format.ts";
import { drawAxes, drawThresholds } from "./axes-draw.ts";
import { readAxes, readThresholds, timeseriesAxes } from "./uplot-axes.ts";
const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
function make(c, own) {
  const el = document.createElement("div");
  document.body.append(el);
  const colors = c.dark ? { muted: "#9aa4b2", grid: "#2a313c" } : { muted: "#5d6878", grid: "#e9ecf0" };
  const label = valueFormatter(c.unit, undefined);
  return new uPlot(
    {
      width: 640,
      height: 220,
      tzDate: c.tz ? (ts) => uPlot.tzDate(new Date(ts * 1000), c.tz) : (ts) => new Date(ts * 1000),
      legend: { show: false },
      drawOrder: own ? [] : ["axes", "series"],
      scales: { x: { time: true, range: () => [c.from / 1000, c.to / 1000] }, y: { range: () => [c.min, c.max] } },
      axes: timeseriesAxes(c.unit, colors, label),
      series: [{}, { stroke: "#000", paths: () => null, points: { show: false } }],
      hooks: own
        ? { draw: [(u) => { drawAxes(u.ctx, readAxes(u)); drawThresholds(u.ctx, readThresholds(u, c.thresholds)); }] }
        : {},
    },
    [[c.from / 1000, c.to / 1000], [c.min, c.max]],
    el,
  );
}
function pixels(u) {
  return u.ctx.getImageData(0, 0, u.ctx.canvas.width, u.ctx.canvas.height).data;
}
window.axesTest = {
  async compare(c) {
    const theirs = make(c, false);
    const ours = make(c, true);
    await frame();
    const [a, b] = [pixels(theirs), pixels(ours)];
    let max = 0, count = 0, painted = 0;
    for (let i = 0; i < a.length; i += 4) {
      let d = 0;
      for (let k = 0; k < 4; k++) d = Math.max(d, Math.abs(a[i + k] - b[i + k]));
      if (d > 0) count++;
      if (d > max) max = d;
      if (a[i + 3] > 0) painted++;
    }
    const labels = readAxes(ours).map((axis) => axis.labels.map((l) => l.text));
    theirs.destroy();
    ours.destroy();
    return { max, count, painted, labels };
  },
  async thresholds(c) {
    const ours = make(c, true);
    await frame();
    const steps = readThresholds(ours, c.thresholds);
    // Drawn alone on a canvas of the plot's size, so the grid does not tint what is read.
    const ctx = new OffscreenCanvas(ours.ctx.canvas.width, ours.ctx.canvas.height).getContext("2d");
    drawThresholds(ctx, steps);
    const at = (x, y) => Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data);
    const mid = (s) => [s.band.x + s.band.width / 2, s.band.y + s.band.height / 2];
    const out = {
      steps: steps.map((s) => ({ color: s.color, line: s.line !== null })),
      bands: steps.map((s) => at(...mid(s))),
      lines: steps.filter((s) => s.line).map((s) => at(s.line.x0 + 3, s.line.y)),
    };
    ours.destroy();
    return out;
  },
};
`;

const pages = bundledPages(ENTRY, fileURLToPath(new URL(".", import.meta.url)), "axesTest");
const open = (deviceScaleFactor: number) => pages.open({ viewport: { width: 700, height: 300 }, deviceScaleFactor });

interface Case {
  from: number;
  to: number;
  min: number;
  max: number;
  unit?: string;
  tz?: string;
  dark?: boolean;
  thresholds?: { value: number | null; color: string }[];
}
type Api = {
  axesTest: {
    compare(c: Case): Promise<{ max: number; count: number; painted: number; labels: string[][] }>;
    thresholds(c: Case): Promise<{ steps: { color: string; line: boolean }[]; bands: number[][]; lines: number[][] }>;
  };
};

const END = Date.UTC(2026, 10, 28, 10, 0, 0);
const HOUR = 3_600_000;
const CASES: [string, Case][] = [
  ["last hour, percent", { from: END - HOUR, to: END, min: 0, max: 100, unit: "percent" }],
  ["last 24 hours across midnight, UTC", { from: END - 24 * HOUR, to: END, min: 0, max: 2.5, tz: "UTC" }],
  ["last 24 hours, New York, dark", { from: END - 24 * HOUR, to: END, min: -40, max: 60, tz: "America/New_York", dark: true }],
  ["last 30 days, bytes", { from: END - 30 * 24 * HOUR, to: END, min: 0, max: 3 * 1024 ** 3, unit: "bytes" }],
  ["five minutes, seconds, negative values", { from: END - 5 * 60_000, to: END, min: -0.75, max: 0.5, unit: "s" }],
];

for (const ratio of [1, 2]) {
  test(`at device pixel ratio ${ratio}, the axes drawn from uPlot's layout are uPlot's own, pixel for pixel`, async () => {
    const page = await open(ratio);
    const seen: string[][][] = [];
    for (const [name, c] of CASES) {
      const r = await page.evaluate((c) => (window as unknown as Api).axesTest.compare(c), c);
      expect(r.max, `${name}: ${r.count} pixels differ`).toBe(0);
      // Both drew axes: labels and grid lines cover thousands of pixels of the canvas.
      expect(r.painted, name).toBeGreaterThan(2000 * ratio);
      expect(r.labels[0]!.length, name).toBeGreaterThan(3);
      expect(r.labels[1]!.length, name).toBeGreaterThan(2);
      seen.push(r.labels);
    }
    // The day's axis names the date under the midnight tick; the zones differ; bytes step on binary units.
    expect(seen[1]![0]).toContain("28 Nov");
    expect(seen[2]![0].join(" ")).not.toBe(seen[1]![0].join(" "));
    expect(seen[3]![1]).toContain("1 GiB");
    await page.close();
  }, 60_000);
}

test("threshold steps: a faint band over each step's span, a dashed line where a step starts inside the plot", async () => {
  const page = await open(1);
  const c: Case = {
    from: END - HOUR,
    to: END,
    min: 0,
    max: 100,
    thresholds: [
      { value: 80, color: "#ff0000" },
      { value: null, color: "#00ff00" },
      { value: 120, color: "#0000ff" },
    ],
  };
  const r = await page.evaluate((c) => (window as unknown as Api).axesTest.thresholds(c), c);
  // Lowest first: the base step (from the bottom), the step at 80; the one at 120 is above the scale and not drawn.
  expect(r.steps).toEqual([
    { color: "#00ff00", line: false },
    { color: "#ff0000", line: true },
  ]);
  // A band is the step's colour at 7 % over the transparent canvas; the line at 90 %.
  expect(r.bands[0]!.slice(0, 3)).toEqual([0, 255, 0]);
  expect(r.bands[0]![3]).toBeGreaterThan(10);
  expect(r.bands[0]![3]).toBeLessThan(30);
  expect(r.bands[1]!.slice(0, 3)).toEqual([255, 0, 0]);
  expect(r.lines[0]![3]).toBeGreaterThan(200);
  await page.close();
}, 60_000);
