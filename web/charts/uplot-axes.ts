/**
 * The time series chart's axes: their uPlot options, and what uPlot laid out for them read back as draws
 * (chart-worker-messages.ts' AxisDraw and ThresholdDraw) for axes-draw.ts. uPlot computes the axes (splits, labels,
 * sizes) on every commit as before, but draws nothing (`drawOrder: []`): the plot is drawn by the chart worker, off
 * the page's thread, or on the page by the same functions. readAxes reads what uPlot's own drawAxesGrid reads
 * (uPlot 1.6): its laid-out splits, values, position and found spacing. It reads the parts these charts use; an axis
 * title, rotated labels and an axis border are not read (the options below use none). A browser test draws uPlot's
 * own axes beside these and compares the pixels.
 */
import uPlot from "uplot";
import { BINARY_INCRS, isBytes, type Threshold } from "../lib/value-format.ts";
import type { AxisDraw, RulesDraw, ThresholdDraw } from "./chart-worker-messages.ts";

export const AXIS_FONT = "11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

/** 24-hour axis labels; a tick at a day boundary adds the date on a second line (uPlot's axis value table). */
const TIME_VALUES: uPlot.Axis.Values = [
  // tick step (s), label, then the second line when the year, month, day, hour, minute, second changes
  [3600 * 24 * 365, "{YYYY}", null, null, null, null, null, null, 1],
  [3600 * 24 * 28, "{MMM}", "\n{YYYY}", null, null, null, null, null, 1],
  [3600 * 24, "{D} {MMM}", "\n{YYYY}", null, null, null, null, null, 1],
  [3600, "{HH}:{mm}", "\n{D} {MMM} {YYYY}", null, "\n{D} {MMM}", null, null, null, 1],
  [60, "{HH}:{mm}", "\n{D} {MMM} {YYYY}", null, "\n{D} {MMM}", null, null, null, 1],
  [1, "{HH}:{mm}:{ss}", "\n{D} {MMM} {YYYY}", null, "\n{D} {MMM}", null, null, null, 1],
];

/** The x (time) and y axes' options: the theme's colours, the unit's tick labels (binary steps for bytes). */
export function timeseriesAxes(
  unit: string | undefined,
  colors: { muted: string; grid: string },
  label: (n: number) => string,
): uPlot.Axis[] {
  return [
    {
      stroke: colors.muted,
      font: AXIS_FONT,
      grid: { stroke: colors.grid, width: 1 },
      ticks: { stroke: colors.grid, width: 1, size: 4 },
      space: 70,
      values: TIME_VALUES,
    },
    {
      stroke: colors.muted,
      font: AXIS_FONT,
      grid: { stroke: colors.grid, width: 1 },
      ticks: { show: false },
      space: 36,
      ...(isBytes(unit) ? { incrs: BINARY_INCRS as number[] } : {}),
      values: (_u, ticks) => ticks.map(label),
      size: (_u, values) => 14 + Math.max(2, ...(values ?? []).map((v) => String(v).length)) * 6.5,
    },
  ];
}

type Filter = (u: uPlot, splits: number[], axis: number, space: number, incr: number) => (number | null)[];

/** A tick or grid option once uPlot has initialised it (its colour a function). */
interface LaidRules {
  show: boolean;
  size?: number;
  width: number;
  stroke: (u: uPlot, axis: number) => string;
  dash?: number[];
  cap?: CanvasLineCap;
  filter: Filter;
}

/** An axis once uPlot has initialised and laid it out: the fields its drawAxesGrid reads. */
interface LaidAxis {
  show: boolean;
  _show?: boolean;
  side: number;
  scale: string;
  /** The found increment and spacing (a spacing of 0: no room for ticks). */
  _found?: [number, number];
  _splits?: number[];
  _values?: (string | number | null)[];
  _pos: number;
  _size: number;
  /** The font at the device pixel ratio, and its size in device pixels. */
  font: [string, number];
  gap: number;
  lineGap: number;
  align?: number;
  alignTo?: number;
  stroke: (u: uPlot, axis: number) => string;
  ticks: LaidRules;
  grid: LaidRules;
}

/** uPlot's rounding of line widths to `dec` decimals (its roundDec). */
export function roundDec(v: number, dec: number): number {
  if (Number.isInteger(v)) return v;
  const p = 10 ** dec;
  return Math.round(v * p * (1 + Number.EPSILON)) / p;
}

/** Each shown axis as uPlot laid it out on its last commit, in canvas (device) pixels, in the order uPlot draws them. */
export function readAxes(u: uPlot): AxisDraw[] {
  const ratio = uPlot.pxRatio;
  const { left, top, width, height } = u.bbox;
  const out: AxisDraw[] = [];
  (u.axes as unknown as LaidAxis[]).forEach((axis, i) => {
    const found = axis._found;
    const splits = axis._splits;
    const values = axis._values;
    if (!axis.show || !axis._show || !found || found[1] === 0 || !splits || !values) return;
    const side = axis.side;
    const horizontal = side % 2 === 0;
    const outward = side === 0 || side === 3 ? -1 : 1;
    const tickCss = axis.ticks.show ? (axis.ticks.size ?? 0) : 0;
    const tick = Math.round(tickCss * ratio);
    const gap = Math.round((axis.alignTo === 2 ? axis._size - tickCss - axis.gap : axis.gap) * ratio);
    const base = Math.round(axis._pos * ratio);
    const at = base + (tick + gap) * outward;
    const offsets = splits.map((v) => Math.round(u.valToPos(v, axis.scale, true)));
    const lineHeight = axis.font[1] * axis.lineGap;
    const labels: AxisDraw["labels"] = [];
    values.forEach((value, k) => {
      if (value == null) return;
      const x = horizontal ? offsets[k]! : at;
      const y = horizontal ? at : offsets[k]!;
      const lines = String(value).split("\n");
      for (let j = 0; j < lines.length; j++) labels.push({ text: lines[j]!, x, y: y + j * lineHeight });
    });
    const rules: RulesDraw[] = [];
    const [incr, space] = found;
    const laid = (r: LaidRules, from: number, to: number) => {
      const shown = r.filter(u, splits, i, space, incr);
      rules.push({
        vertical: horizontal,
        at: offsets.filter((_, k) => shown[k] != null),
        from,
        to,
        width: roundDec(r.width * ratio, 3),
        color: r.stroke(u, i),
        dash: r.dash ?? [],
        cap: r.cap ?? "butt",
      });
    };
    if (axis.ticks.show) laid(axis.ticks, base, base + tick * outward);
    if (axis.grid.show) laid(axis.grid, horizontal ? top : left, horizontal ? top + height : left + width);
    out.push({
      font: axis.font[0],
      color: axis.stroke(u, i),
      align: axis.align === 1 ? "left" : axis.align === 2 ? "right" : horizontal ? "center" : side === 3 ? "right" : "left",
      baseline: horizontal ? (side === 2 ? "top" : "bottom") : "middle",
      labels,
      rules,
    });
  });
  return out;
}

/** The threshold steps over the y scale's range: a band where each step spans it, a line where a step starts inside. */
export function readThresholds(u: uPlot, thresholds: readonly Threshold[] | undefined): ThresholdDraw[] {
  const lo = u.scales.y?.min;
  const hi = u.scales.y?.max;
  if (!thresholds?.length || lo == null || hi == null) return [];
  const steps = [...thresholds].sort((a, b) => (a.value ?? Number.NEGATIVE_INFINITY) - (b.value ?? Number.NEGATIVE_INFINITY));
  const { left, top, width, height } = u.bbox;
  const out: ThresholdDraw[] = [];
  steps.forEach((t, i) => {
    const from = Math.max(lo, t.value ?? lo);
    const to = Math.min(hi, steps[i + 1]?.value ?? hi);
    if (to <= from) return;
    const yTop = Math.max(top, u.valToPos(to, "y", true));
    const yBottom = u.valToPos(from, "y", true);
    out.push({
      color: t.color,
      band: { x: left, y: yTop, width, height: Math.min(top + height, yBottom) - yTop },
      // On a whole device pixel (drawThresholds centres it in that pixel row), as uPlot aligns its grid: crisp, not two faint rows.
      line:
        t.value !== null && t.value > lo && t.value < hi
          ? { x0: left, x1: left + width, y: Math.round(yBottom), width: roundDec(uPlot.pxRatio, 3) }
          : null,
    });
  });
  return out;
}
