import { h, replace, s } from "../lib/dom.ts";
import { formatValue } from "../lib/format.ts";
import { barData, type QueryResult } from "../lib/result.ts";
import { linear } from "../lib/scale.ts";
import { measure, seriesClass } from "./common.ts";

const MAX_BARS = 40;

/** Horizontal bars: one per row, labelled on the left, value at the end. */
export function renderBar(el: HTMLElement, result: QueryResult, opts: { unit?: string }): void {
  const data = barData(result);
  if (!data || data.length === 0) {
    replace(el, h("div", { class: "chart-empty" }, data ? "No rows" : "No numeric column to show"));
    return;
  }
  const shown = data.slice(0, MAX_BARS);
  const { width } = measure(el, { width: 480, height: 220 });
  const rowH = 24;
  // Labels are cut at 24 characters; the label column fits the longest one shown (about 7 px per character).
  const longest = Math.max(...shown.map((d) => Math.min(24, d.label.length)));
  const labelW = Math.min(Math.round(width * 0.4), 16 + longest * 7);
  const valueW = 64;
  const height = shown.length * rowH + 4;
  const vals = shown.map((d) => d.value ?? 0);
  const hi = Math.max(0, ...vals);
  const lo = Math.min(0, ...vals);
  const x = linear([lo, hi === lo ? lo + 1 : hi], [labelW, width - valueW]);
  const bars = shown.map((d, i) => {
    const v = d.value ?? 0;
    const y = i * rowH + 2;
    const x0 = x(Math.min(0, v));
    const w = Math.max(d.value === null ? 0 : 1, Math.abs(x(v) - x(0)));
    return s(
      "g",
      null,
      s("title", null, `${d.label}: ${formatValue(d.value, opts.unit)}`),
      s(
        "text",
        { x: labelW - 8, y: y + rowH / 2, dy: "0.32em", "text-anchor": "end", class: "bar-label" },
        d.label.length > 24 ? `${d.label.slice(0, 23)}…` : d.label,
      ),
      s("rect", { x: x0, y: y + 3, width: w, height: rowH - 8, rx: 3, class: `bar ${seriesClass(0)}` }),
      s("text", { x: Math.max(x(v), x(0)) + 6, y: y + rowH / 2, dy: "0.32em", class: "bar-value" }, formatValue(d.value, opts.unit)),
    );
  });
  replace(
    el,
    s(
      "svg",
      { viewBox: `0 0 ${width} ${height}`, width, height, class: "chart", role: "img", "aria-label": `Bar chart of ${shown.length} rows` },
      bars,
    ),
    data.length > MAX_BARS ? h("p", { class: "muted small" }, `Showing ${MAX_BARS} of ${data.length} rows.`) : null,
  );
}
