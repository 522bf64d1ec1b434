import { h, replace, s } from "../lib/dom.ts";
import { type QueryResult, statValue } from "../lib/result.ts";
import { type Threshold, thresholdColor, valueFormatter } from "../lib/value-format.ts";

export interface GaugeOptions {
  title: string;
  unit?: string;
  decimals?: number;
  /** The ends of the dial; 0 and 100 when not set (Grafana's defaults). */
  min?: number;
  max?: number;
  thresholds?: readonly Threshold[];
  /** The figure to show (the last complete bucket's) when the caller has picked it; else the result's latest. */
  value?: number | null;
}

const W = 200;
const R = 80;
const CX = W / 2;
const CY = 96;

/** A point on the dial's arc: `f` 0 (left, min) … 1 (right, max). */
function at(f: number, r = R): [number, number] {
  const a = Math.PI * (1 - f);
  return [CX + r * Math.cos(a), CY - r * Math.sin(a)];
}

function arc(f0: number, f1: number): string {
  const [x0, y0] = at(f0);
  const [x1, y1] = at(f1);
  return `M${x0.toFixed(2)},${y0.toFixed(2)} A${R},${R} 0 0 1 ${x1.toFixed(2)},${y1.toFixed(2)}`;
}

/** A half-circle gauge: the threshold steps as coloured bands of the dial, the value as a filled arc and a figure. */
export function renderGauge(el: HTMLElement, result: QueryResult, o: GaugeOptions): void {
  const picked = statValue(result);
  if (picked.column === null) {
    replace(el, h("div", { class: "chart-empty" }, result.rows.length === 0 ? "No rows" : "No numeric column to show"));
    return;
  }
  const value = o.value !== undefined ? o.value : picked.value;
  const min = o.min ?? 0;
  const max = o.max ?? 100;
  const span = max > min ? max - min : 1;
  const f = (v: number) => Math.min(1, Math.max(0, (v - min) / span));
  const fmt = valueFormatter(o.unit, o.decimals);
  const color = thresholdColor(value, o.thresholds);
  const bands = (o.thresholds ?? [])
    .slice()
    .sort((a, b) => (a.value ?? Number.NEGATIVE_INFINITY) - (b.value ?? Number.NEGATIVE_INFINITY))
    .map((t, i, all) => {
      const f0 = t.value === null ? 0 : f(t.value);
      const next = all[i + 1];
      const f1 = next?.value == null ? 1 : f(next.value);
      return f1 > f0 ? s("path", { d: arc(f0, f1), class: "gauge-band", stroke: t.color, fill: "none" }) : null;
    });
  const text = fmt(value);
  const svg = s(
    "svg",
    { viewBox: `0 0 ${W} 120`, class: "gauge", role: "img", "aria-label": `${o.title}: ${text} on a dial from ${fmt(min)} to ${fmt(max)}` },
    s("path", { d: arc(0, 1), class: "gauge-track", fill: "none" }),
    bands,
    value === null
      ? null
      : s("path", { d: arc(0, Math.max(0.002, f(value))), class: "gauge-value", fill: "none", ...(color ? { stroke: color } : {}) }),
    s("text", { x: CX, y: CY - 8, "text-anchor": "middle", class: "gauge-text" }, text),
    s("text", { x: at(0)[0], y: CY + 16, "text-anchor": "middle", class: "gauge-end" }, fmt(min)),
    s("text", { x: at(1)[0], y: CY + 16, "text-anchor": "middle", class: "gauge-end" }, fmt(max)),
  );
  replace(el, h("div", { class: "gauge-wrap" }, svg, h("div", { class: "stat-label muted" }, picked.column)));
}
