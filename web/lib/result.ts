import type { PanelUpdate, QueryResult } from "../../lib/live/frames.ts";
import type { Point } from "./rolling-window.ts";

/** The wire types, declared once in lib/live/frames.ts (timestamps are epoch milliseconds). */
export type { PanelUpdate, QueryResult };

/** What the helpers below read of a result: its columns and rows, and the step and partial bucket when sent. */
export type ResultData = Pick<QueryResult, "columns"> & { rows: readonly (readonly unknown[])[] } & Partial<
    Pick<QueryResult, "stepMs" | "partialFrom">
  >;

const TIME_TYPES = new Set(["timestamptz", "timestamp", "date"]);
const NUMERIC_TYPES = new Set(["int2", "int4", "int8", "float4", "float8", "numeric", "oid", "money"]);
const TIME_NAMES = new Set(["time", "ts", "timestamp", "bucket", "t", "at", "date"]);

/** A cell as a number: numbers as they are, numeric strings (big int8/numeric) parsed, anything else null. */
export function toNumber(cell: unknown): number | null {
  if (typeof cell === "number") return Number.isFinite(cell) ? cell : null;
  if (typeof cell === "string" && cell.trim() !== "" && /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(cell.trim())) {
    const n = Number(cell);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** Column roles inferred from the declared types, with the values as a fallback for "unknown" types. */
export interface ColumnRoles {
  time: number | null;
  values: number[];
  labels: number[];
}

export function columnRoles(result: ResultData): ColumnRoles {
  const cols = result.columns;
  const sample = result.rows.slice(0, 20);
  const allNumeric = (i: number) => sample.length > 0 && sample.every((r) => r[i] === null || toNumber(r[i]) !== null);
  const isNumeric = (i: number) => NUMERIC_TYPES.has(cols[i].type) || (cols[i].type === "unknown" && allNumeric(i));

  let time: number | null = cols.findIndex((c) => TIME_TYPES.has(c.type));
  if (time === -1) {
    // An epoch-millisecond number column named like a time column.
    time = cols.findIndex((c, i) => TIME_NAMES.has(c.name.toLowerCase()) && allNumeric(i));
  }
  if (time === -1) time = null;
  const values: number[] = [];
  const labels: number[] = [];
  cols.forEach((_, i) => {
    if (i === time) return;
    (isNumeric(i) ? values : labels).push(i);
  });
  return { time, values, labels };
}

export interface Series {
  key: string;
  /** Sorted by time; a null value is a gap (a missing bucket), where a line breaks. */
  points: Point[];
  /** Points at or after this epoch ms are the still-filling bucket: drawn distinctly, left out of "last" values. */
  partialFrom?: number;
}

/**
 * Points with a null inserted one step after every point followed by a missing bucket (the next point more
 * than one step later), so a line breaks there instead of bridging the hole. Sorted by time.
 */
export function withGaps(points: readonly Point[], stepMs: number | undefined): Point[] {
  let inOrder = true;
  for (let i = 1; i < points.length && inOrder; i++) inOrder = points[i - 1][0] <= points[i][0];
  // Rows usually come in time order: then no sort, and no copy but the one returned.
  const sorted = inOrder ? points : [...points].sort((a, b) => a[0] - b[0]);
  if (stepMs === undefined || !(stepMs > 0)) return sorted === points ? points.slice() : (sorted as Point[]);
  const out: Point[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const p = sorted[i];
    out.push(p);
    const next = sorted[i + 1];
    if (next !== undefined && next[0] - p[0] > stepMs) out.push([p[0] + stepMs, null]);
  }
  return out;
}

/** Whether a point belongs to the still-filling bucket. */
export function isPartial(t: number, partialFrom: number | undefined): boolean {
  return partialFrom !== undefined && t >= partialFrom;
}

/**
 * The value a stat or a legend's "last" shows: the last point with a value in a complete bucket; the
 * partial bucket only when there is nothing else.
 */
export function lastComplete(points: readonly Point[], partialFrom?: number): Point | null {
  let fallback: Point | null = null;
  for (let i = points.length - 1; i >= 0; i--) {
    const p = points[i];
    if (p[1] === null) continue;
    if (!isPartial(p[0], partialFrom)) return p;
    fallback ??= p;
  }
  return fallback;
}

/**
 * Turns a result into time series: one per combination of label columns (e.g. `service`) and value
 * column. A single value column is named by the labels alone; without labels, by the column name.
 * Returns null when the result has no time column or no numeric column.
 */
export function toSeries(result: ResultData): Series[] | null {
  const roles = columnRoles(result);
  if (roles.time === null || roles.values.length === 0) return null;
  return seriesOfRows(result, roles, result.rows);
}

/**
 * The series of some of a result's rows (all of them, or the tail an incremental tick changed), named as
 * toSeries names them; `roles` are the whole result's, so a few rows cannot change what a column is.
 */
export function seriesOfRows(result: ResultData, roles: ColumnRoles, rows: readonly (readonly unknown[])[]): Series[] {
  const t = roles.time!;
  const byKey = new Map<string, Point[]>();
  const values = roles.values;
  const names = values.map((v) => result.columns[v].name);
  // The common shape (one value column, one label column, numbers as numbers) without a call per cell: this runs
  // over every row of a snapshot's result before its first chart is drawn, while the code is still cold.
  const oneLabel = roles.labels.length === 1 ? roles.labels[0]! : -1;
  for (const row of rows) {
    const tc = row[t];
    const at = typeof tc === "number" ? (Number.isFinite(tc) ? tc : null) : toNumber(tc);
    if (at === null) continue;
    let label: string;
    if (oneLabel >= 0) {
      const c = row[oneLabel];
      label = typeof c === "string" ? c : String(c ?? "∅");
    } else label = seriesLabel(row, roles.labels);
    for (let k = 0; k < values.length; k++) {
      const name = values.length === 1 && label ? label : label ? `${label} · ${names[k]}` : names[k];
      let list = byKey.get(name);
      if (!list) {
        list = [];
        byKey.set(name, list);
      }
      const vc = row[values[k]];
      list.push([at, typeof vc === "number" ? (Number.isFinite(vc) ? vc : null) : toNumber(vc)]);
    }
  }
  return [...byKey.entries()].map(([key, points]) => ({
    key,
    points: withGaps(points, result.stepMs),
    ...(result.partialFrom !== undefined ? { partialFrom: result.partialFrom } : {}),
  }));
}

/** The label part of a row's series names: its label columns joined by " · " ("" without labels). */
export function seriesLabel(row: readonly unknown[], labels: readonly number[]): string {
  if (labels.length === 0) return "";
  if (labels.length === 1) return String(row[labels[0]] ?? "∅");
  return labels.map((i) => String(row[i] ?? "∅")).join(" · ");
}

/** The series names of a result's rows, without building their points. */
export function seriesKeys(result: ResultData, roles: ColumnRoles): Set<string> {
  const keys = new Set<string>();
  const t = roles.time!;
  const names = roles.values.map((v) => result.columns[v].name);
  for (const row of result.rows) {
    if (toNumber(row[t]) === null) continue;
    const label = seriesLabel(row, roles.labels);
    for (const name of names) keys.add(names.length === 1 && label ? label : label ? `${label} · ${name}` : name);
  }
  return keys;
}

/**
 * The single figure a stat panel shows: the latest row's first numeric column (by time when there is one),
 * in the last complete bucket; `partial` when only the still-filling bucket had a row.
 */
export function statValue(result: ResultData): { value: number | null; column: string | null; at: number | null; partial: boolean } {
  const roles = columnRoles(result);
  const v = roles.values[0];
  if (v === undefined || result.rows.length === 0) return { value: null, column: null, at: null, partial: false };
  const time = roles.time;
  // The still-filling bucket counts only when it is all there is.
  const complete =
    time === null || result.partialFrom === undefined
      ? result.rows
      : result.rows.filter((r) => !isPartial(toNumber(r[time]) ?? Number.NEGATIVE_INFINITY, result.partialFrom));
  const rows = complete.length > 0 ? complete : result.rows;
  let row = rows[0];
  let at: number | null = null;
  if (time !== null) {
    for (const r of rows) {
      const t = toNumber(r[time]);
      // The latest time wins; among rows at that time, the first with a value.
      if (t !== null && (at === null || t > at || (t === at && toNumber(row[v]) === null))) {
        at = t;
        row = r;
      }
    }
  }
  return { value: toNumber(row[v]), column: result.columns[v].name, at, partial: at !== null && isPartial(at, result.partialFrom) };
}

/** Categories and values for a bar panel: the first label (or time) column against the first numeric one. */
export function barData(result: ResultData): { label: string; value: number | null }[] | null {
  const roles = columnRoles(result);
  const v = roles.values[0];
  const c = roles.labels[0] ?? roles.time ?? undefined;
  if (v === undefined) return null;
  return result.rows.map((r, i) => ({ label: c === undefined ? String(i + 1) : String(r[c] ?? "∅"), value: toNumber(r[v]) }));
}

/** Whether a column holds timestamps (rendered as dates in tables). */
export function isTimeColumn(result: ResultData, index: number): boolean {
  return columnRoles(result).time === index;
}
