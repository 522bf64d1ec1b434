import { h, replace, s } from "../lib/dom.ts";
import { formatAxisValue, formatTime, formatTimestamp, formatValue } from "../lib/format.ts";
import type { Point } from "../lib/rolling-window.ts";
import { linear, niceTicks, timeTicks, valueDomain } from "../lib/scale.ts";
import { measure, seriesClass } from "./common.ts";

export interface LineSeries {
  key: string;
  points: readonly Point[];
}

const M = { top: 10, right: 12, bottom: 22 };

/**
 * A multi-series line chart in SVG with time and value axes, a legend and a hover read-out.
 * `range` is the dashboard's time range; without one the data's extent is used.
 */
export function renderTimeseries(
  el: HTMLElement,
  series: LineSeries[],
  opts: { unit?: string; range?: [number, number] | null; height?: number },
): void {
  const all = series.flatMap((x) => x.points);
  const values = all.map((p) => p[1]).filter((v): v is number => v !== null);
  if (values.length === 0) {
    replace(el, h("div", { class: "chart-empty" }, "No data in this time range"));
    return;
  }
  const times = all.map((p) => p[0]);
  const t0 = opts.range?.[0] ?? Math.min(...times);
  const t1 = opts.range?.[1] ?? Math.max(...times);
  const { width } = measure(el, { width: 480, height: 220 });
  const height = opts.height ?? 220;
  const [v0, v1] = valueDomain(values);
  const yTicks = niceTicks(v0, v1, 4).filter((v) => v >= v0 && v <= v1);
  const yLabels = yTicks.map((v) => formatAxisValue(v, opts.unit));
  // The left margin fits the longest value label (about 6.5 px per character at 11 px).
  const left = Math.min(90, 14 + Math.max(2, ...yLabels.map((l) => l.length)) * 6.5);
  const M2 = { ...M, left };
  const x = linear([t0, t1 > t0 ? t1 : t0 + 1], [M2.left, width - M.right]);
  const y = linear([v0, v1], [height - M.bottom, M.top]);

  const xTicks = timeTicks(t0, t1, Math.max(2, Math.floor(width / 90)));
  const span = t1 - t0;

  const grid = yTicks.map((v, i) =>
    s(
      "g",
      { class: "tick" },
      s("line", { x1: M2.left, x2: width - M.right, y1: y(v), y2: y(v), class: "grid" }),
      s("text", { x: M2.left - 6, y: y(v), dy: "0.32em", "text-anchor": "end" }, yLabels[i]),
    ),
  );
  const xAxis = xTicks.map((t) => s("text", { x: x(t), y: height - 6, "text-anchor": "middle", class: "tick" }, formatTime(t, span)));
  const lines = series.map((ser, i) => {
    let d = "";
    let pen = false;
    for (const [t, v] of ser.points) {
      if (v === null || t < t0 || t > t1) {
        pen = false;
        continue;
      }
      d += `${pen ? "L" : "M"}${x(t).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    }
    // A lone point between gaps would be invisible as a path: draw it as a dot.
    const dots =
      ser.points.length === 1 && ser.points[0][1] !== null
        ? s("circle", { cx: x(ser.points[0][0]), cy: y(ser.points[0][1]!), r: 2.5, class: `dot ${seriesClass(i)}` })
        : null;
    return s("g", null, s("path", { d, class: `line ${seriesClass(i)}`, fill: "none" }), dots);
  });

  const cursor = s("line", { class: "cursor", y1: M.top, y2: height - M.bottom, x1: 0, x2: 0, visibility: "hidden" });
  const svg = s(
    "svg",
    {
      viewBox: `0 0 ${width} ${height}`,
      width,
      height,
      class: "chart",
      role: "img",
      "aria-label": `Line chart of ${series.length} series`,
    },
    s("g", { class: "axis" }, grid, xAxis),
    s("g", null, lines),
    cursor,
  );
  const tip = h("div", { class: "tooltip", hidden: true, role: "presentation" });

  svg.addEventListener("pointermove", (ev) => {
    const box = svg.getBoundingClientRect();
    const px = ((ev.clientX - box.left) / box.width) * width;
    if (px < M2.left || px > width - M.right) return hide();
    const t = t0 + ((px - M2.left) / (width - M2.left - M.right)) * (t1 - t0);
    let best: number | null = null;
    for (const p of all) if (best === null || Math.abs(p[0] - t) < Math.abs(best - t)) best = p[0];
    if (best === null) return hide();
    const at = best;
    cursor.setAttribute("x1", String(x(at)));
    cursor.setAttribute("x2", String(x(at)));
    cursor.setAttribute("visibility", "visible");
    const rows = series
      .map((ser, i) => ({ ser, i, p: ser.points.find((q) => q[0] === at) }))
      .filter((r) => r.p !== undefined)
      .slice(0, 12)
      .map((r) =>
        h(
          "div",
          { class: "tip-row" },
          h("span", { class: `swatch ${seriesClass(r.i)}`, "aria-hidden": "true" }),
          h("span", { class: "tip-key" }, r.ser.key),
          h("strong", null, formatValue(r.p![1], opts.unit)),
        ),
      );
    replace(tip, h("div", { class: "tip-time" }, formatTimestamp(at)), ...rows);
    tip.hidden = false;
    tip.classList.toggle("left", px > width / 2);
  });
  svg.addEventListener("pointerleave", () => hide());
  function hide() {
    tip.hidden = true;
    cursor.setAttribute("visibility", "hidden");
  }

  const legend =
    series.length > 1 || series[0]?.key
      ? h(
          "ul",
          { class: "legend", "aria-label": "Series" },
          series.slice(0, 30).map((ser, i) => {
            const last = [...ser.points].reverse().find((p) => p[1] !== null);
            return h(
              "li",
              null,
              h("span", { class: `swatch ${seriesClass(i)}`, "aria-hidden": "true" }),
              h("span", { class: "legend-key" }, ser.key),
              h("span", { class: "legend-val" }, last ? formatValue(last[1], opts.unit) : "–"),
            );
          }),
          series.length > 30 ? h("li", { class: "muted" }, `+${series.length - 30} more`) : null,
        )
      : null;
  replace(el, h("div", { class: "chart-wrap" }, svg, tip), legend);
}

/** A small line without axes, for stat panels. */
export function sparkline(points: readonly Point[], width = 160, height = 36): SVGSVGElement | null {
  const pts = points.filter((p): p is [number, number] => p[1] !== null);
  if (pts.length < 2) return null;
  const ts = pts.map((p) => p[0]);
  const vs = pts.map((p) => p[1]);
  const x = linear([Math.min(...ts), Math.max(...ts)], [1, width - 1]);
  const lo = Math.min(...vs);
  const hi = Math.max(...vs);
  const y = linear([lo, hi === lo ? lo + 1 : hi], [height - 2, 2]);
  const d = pts.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join("");
  return s(
    "svg",
    { viewBox: `0 0 ${width} ${height}`, class: "sparkline", "aria-hidden": "true", preserveAspectRatio: "none" },
    s("path", { d, class: "line s0", fill: "none" }),
  );
}
