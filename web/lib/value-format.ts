/**
 * Value formatting with a panel's options: its unit and, when set, a fixed number of decimals; binary-unit tick
 * steps for bytes (axis ticks on 256 MiB, 512 MiB, 1 GiB rather than 954 MiB), and the legend's statistics.
 */
import { formatValue } from "./format.ts";

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

export function isBytes(unit: string | undefined): boolean {
  const u = unit?.trim();
  return u === "bytes" || u === "B";
}

/** A formatter for one panel: formatValue, or `decimals` fixed digits with the same unit handling. */
export function valueFormatter(unit: string | undefined, decimals: number | undefined): (n: number | null) => string {
  if (decimals === undefined) return (n) => formatValue(n, unit);
  const u = unit?.trim();
  return (n) => {
    if (n === null || !Number.isFinite(n)) return "–";
    if (isBytes(u)) {
      let v = Math.abs(n);
      let i = 0;
      while (v >= 1024 && i < BYTE_UNITS.length - 1) {
        v /= 1024;
        i++;
      }
      return `${n < 0 ? "-" : ""}${v.toFixed(decimals)} ${BYTE_UNITS[i]}`;
    }
    const text = n.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
    if (!u) return text;
    return u === "%" ? `${text}%` : `${text} ${u}`;
  };
}

/** Axis tick steps on binary round values: 1, 2, 4 … 512 of B, KiB, MiB, GiB, TiB, PiB. */
export const BINARY_INCRS: readonly number[] = (() => {
  const out: number[] = [];
  for (let k = 0; k < BYTE_UNITS.length; k++) for (let m = 1; m < 1024; m *= 2) out.push(m * 1024 ** k);
  return out;
})();

/** The legend statistics of a series over its non-null values. */
export function legendStats(values: readonly (number | null)[]): {
  last: number | null;
  min: number | null;
  max: number | null;
  mean: number | null;
} {
  let last: number | null = null;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let sum = 0;
  let n = 0;
  for (const v of values) {
    if (v === null || !Number.isFinite(v)) continue;
    last = v;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    n++;
  }
  return n === 0 ? { last: null, min: null, max: null, mean: null } : { last, min, max, mean: sum / n };
}

/** A threshold step as the spec holds it: from `value` up (null: from minus infinity). */
export interface Threshold {
  value: number | null;
  color: string;
}

/** The colour of the step a value falls in (the highest step whose value it reaches), or null without steps. */
export function thresholdColor(value: number | null, thresholds: readonly Threshold[] | undefined): string | null {
  if (value === null || !thresholds?.length) return null;
  let color: string | null = null;
  let best = Number.NEGATIVE_INFINITY;
  for (const t of thresholds) {
    const from = t.value ?? Number.NEGATIVE_INFINITY;
    if (value >= from && from >= best) {
      best = from;
      color = t.color;
    }
  }
  return color;
}
