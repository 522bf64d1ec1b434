// Which time bucket an expression of a guarded statement computes, read from the parser's tree. One
// reading serves every analysis that needs it: the runner's newest-rows-first wrapping and bucket step
// (lib/query/time-shape.ts) and which panels may tick incrementally (lib/live/incremental.ts).
import { fixedIntervalMs } from "./interval.ts";
import type { MacroParam } from "./verdict.ts";

/** A bucket expression: `$__timeGroup` (date_bin), date_bin, time_bucket or date_trunc over one argument. */
export interface TimeBucket {
  /** The bucketed expression (the call's time argument), as a parse-tree node. */
  column: unknown;
  /** The step: a fixed width in milliseconds, or the `$n` bound to `$__interval`. */
  step: { ms: number } | { param: number };
  /** Epoch ms the buckets are aligned to (date_bin's origin, TimescaleDB's default, the Unix epoch, a Monday). */
  originMs: number;
  /**
   * True when PostgreSQL's buckets are exactly `originMs + k * step` whatever the session's time zone: a
   * whole-millisecond step of at most a week, and an origin written in UTC (date_bin) or implied
   * (time_bucket's two-argument form, date_trunc to the second or minute; no zone offset moves those).
   * Hour, day and week truncations follow the session's zone: their step is a good label, not an exact grid.
   */
  exact: boolean;
}

type Node = Record<string, unknown>;

const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

/** A node's single wrapped kind: `{ FuncCall: {...} }` → ["FuncCall", {...}]. */
export function kindOf(v: unknown): [string, Node] | null {
  if (!isNode(v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== 1) return null;
  const inner = v[keys[0]];
  return isNode(inner) ? [keys[0], inner] : null;
}

/** The strings of a name list (funcname, a ColumnRef's fields); a non-string part (`*`) is "\u0000". */
export function nameParts(v: unknown): string[] {
  return (Array.isArray(v) ? v : []).map((n) => {
    const k = kindOf(n);
    return k && k[0] === "String" && typeof k[1].sval === "string" ? k[1].sval : "\u0000";
  });
}

/** Strips type casts: `x::timestamptz` is x. */
export function stripCasts(v: unknown): unknown {
  let k = kindOf(v);
  while (k && k[0] === "TypeCast") {
    v = k[1].arg;
    k = kindOf(v);
  }
  return v;
}

/** The kind and body of a node under any casts. */
export function uncast(v: unknown): [string, Node] | null {
  return kindOf(stripCasts(v));
}

/** The text of a string literal, under any casts. */
function literalText(v: unknown): string | undefined {
  const k = uncast(v);
  if (!k || k[0] !== "A_Const" || !isNode(k[1].sval)) return undefined;
  return typeof k[1].sval.sval === "string" ? k[1].sval.sval : undefined;
}

/** The last name a cast gives its argument (`interval`, `timestamptz`), or undefined for no cast. */
function castName(v: unknown): string | undefined {
  const k = kindOf(v);
  if (!k || k[0] !== "TypeCast" || !isNode(k[1].typeName)) return undefined;
  return nameParts(k[1].typeName.names).at(-1);
}

const TIMESCALE_ORIGIN_MS = Date.UTC(2000, 0, 3);
/** date_trunc('week') starts weeks on Monday; 1970-01-05 was one. */
const MONDAY_MS = Date.UTC(1970, 0, 5);
/** date_trunc units by width; only second and minute are the same grid in every zone (offsets are whole minutes). */
const TRUNC_MS: Record<string, { ms: number; originMs: number; exact: boolean }> = {
  second: { ms: 1_000, originMs: 0, exact: true },
  minute: { ms: 60_000, originMs: 0, exact: true },
  hour: { ms: 3_600_000, originMs: 0, exact: false },
  day: { ms: 86_400_000, originMs: 0, exact: false },
  week: { ms: 604_800_000, originMs: MONDAY_MS, exact: false },
};
/** Longest exact step: a week. */
const MAX_EXACT_STEP_MS = 604_800_000;
/** A date_bin origin written in UTC: `2000-01-01 00:00:00+00`, `2000-01-01T00:00:00Z`. */
const UTC_INSTANT = /^\d{4}-\d{2}-\d{2}[T ][\d:.]+(Z|[+-]00(:?00)?)$/;

/** A bucket call's step argument, and whether it is written so PostgreSQL reads it as exactly that interval. */
function stepOf(arg: unknown, params: readonly MacroParam[]): { step: TimeBucket["step"]; exact: boolean } | null {
  const k = uncast(arg);
  if (k && k[0] === "ParamRef" && typeof k[1].number === "number") {
    return params[k[1].number - 1] === "interval" ? { step: { param: k[1].number }, exact: true } : null;
  }
  const text = literalText(arg);
  const ms = text === undefined ? undefined : fixedIntervalMs(text);
  if (ms === undefined) return null;
  // A typed interval literal, or an untyped one that PostgreSQL resolves to the parameter's type (interval).
  const plain = castName(arg) === "interval" || kindOf(arg)?.[0] === "A_Const";
  return { step: { ms }, exact: plain && Number.isInteger(ms) && ms <= MAX_EXACT_STEP_MS };
}

/**
 * The time bucket an expression computes, or null when it is not a call of date_bin (also as
 * `pg_catalog.date_bin`, which `$__timeGroup` expands to), time_bucket or date_trunc with a fixed step.
 * Casts around the call are the caller's to strip.
 */
export function timeBucketOf(expr: unknown, params: readonly MacroParam[]): TimeBucket | null {
  const k = kindOf(expr);
  if (!k || k[0] !== "FuncCall" || k[1].over || k[1].agg_star || k[1].agg_distinct) return null;
  const name = nameParts(k[1].funcname);
  const fn = name.length === 1 || (name.length === 2 && name[0] === "pg_catalog") ? name.at(-1) : undefined;
  const args = Array.isArray(k[1].args) ? k[1].args : [];
  if (fn === "date_bin" && args.length === 3) {
    const step = stepOf(args[0], params);
    const origin = literalText(args[2]);
    if (!step || origin === undefined) return null;
    const utc = origin === "epoch" || UTC_INSTANT.test(origin);
    // A zero offset is written as Z so Date.parse reads every spelling PostgreSQL takes (`+00`, `+0000`).
    const originMs = origin === "epoch" ? 0 : Date.parse(utc ? origin.replace(" ", "T").replace(/(Z|[+-]00(:?00)?)$/, "Z") : origin);
    if (!Number.isFinite(originMs)) return null;
    return { column: args[1], step: step.step, originMs, exact: step.exact && utc };
  }
  if (fn === "time_bucket" && name.length === 1 && args.length >= 2) {
    const step = stepOf(args[0], params);
    if (!step) return null;
    // The two-argument form's origin is 2000-01-03 (a Monday); later arguments (origin, zone, offset) move it.
    return { column: args[1], step: step.step, originMs: TIMESCALE_ORIGIN_MS, exact: step.exact && args.length === 2 };
  }
  if (fn === "date_trunc" && args.length === 2) {
    const unit = literalText(args[0])?.toLowerCase();
    const trunc = unit === undefined ? undefined : TRUNC_MS[unit];
    if (!trunc) return null;
    return { column: args[1], step: { ms: trunc.ms }, originMs: trunc.originMs, exact: trunc.exact };
  }
  return null;
}

/** The start (epoch ms) of the bucket of width `stepMs` aligned to `originMs` that holds `t`. */
export function bucketStart(t: number, stepMs: number, originMs: number): number {
  return originMs + Math.floor((t - originMs) / stepMs) * stepMs;
}
