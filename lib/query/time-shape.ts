import type { MacroParam } from "../sql-guard/verdict.ts";
import { fixedIntervalMs } from "../sql-guard/interval.ts";

/**
 * What the runner learns of a guarded statement from its parse tree, once per statement text: the result
 * column that holds its time bucket, how the bucket step is written, and whether rows are keyed by time
 * (docs/query-runner.md, "Newest rows first").
 */
export interface TimeShape {
  /** 1-based position of the time column in the result; null when it cannot be told (a `*` before it). */
  position: number | null;
  /** The bucket step: a fixed width, the `$n` of `$__interval`, or null for a statement that does not bucket. */
  step: { ms: number } | { param: number } | null;
  /** Epoch ms the buckets are aligned to (date_bin's origin, TimescaleDB's default, the Unix epoch). */
  originMs: number;
  /** True when the rows are keyed by the time column: a bucket, or an ORDER BY on the time-filtered column. */
  timeKeyed: boolean;
}

type Parse = (sql: string) => unknown;
let parseSync: Parse | null = null;
let loading: Promise<void> | null = null;

/** Loads the parser (libpg-query, the guard's), once; shapeOf answers null until it has loaded. */
export function loadShapeParser(): Promise<void> {
  loading ??= import("libpg-query").then(async (imported) => {
    const mod = typeof imported.loadModule === "function" ? imported : (imported as unknown as { default: typeof imported }).default;
    await mod.loadModule();
    parseSync = mod.parseSync;
  });
  return loading;
}

const MAX_SHAPES = 1000;
const shapes = new Map<string, TimeShape | null>();

/** TimescaleDB's default time_bucket origin (a Monday), which also aligns every step dividing a week. */
const TIMESCALE_ORIGIN_MS = Date.UTC(2000, 0, 3);
/** date_trunc('week') starts weeks on Monday; 1970-01-05 was one. */
const MONDAY_MS = Date.UTC(1970, 0, 5);

/**
 * Milliseconds of a PostgreSQL interval text of fixed length ("1 minute", "5 mins", "1 hour 30 minutes",
 * "00:05:00", "5m"); null for months and years (their length varies) or anything else.
 */
export function intervalMs(text: string): number | null {
  return fixedIntervalMs(text) ?? null;
}

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

/** A node's single wrapped kind: `{ FuncCall: {...} }` → ["FuncCall", {...}]. */
function kindOf(v: unknown): [string, Node] | null {
  if (!isNode(v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== 1) return null;
  const inner = v[keys[0]];
  return isNode(inner) ? [keys[0], inner] : null;
}

/** Strips type casts: `x::timestamptz` is x. */
function uncast(v: unknown): [string, Node] | null {
  let k = kindOf(v);
  while (k && k[0] === "TypeCast") k = kindOf(k[1].arg);
  return k;
}

function stringConst(v: unknown): string | null {
  const k = uncast(v);
  if (!k || k[0] !== "A_Const") return null;
  const s = k[1].sval;
  return isNode(s) && typeof s.sval === "string" ? s.sval : null;
}

function lastName(fields: unknown): string | null {
  if (!Array.isArray(fields) || fields.length === 0) return null;
  const last = kindOf(fields[fields.length - 1]);
  return last && last[0] === "String" && typeof last[1].sval === "string" ? last[1].sval : null;
}

function funcName(call: Node): string | null {
  return lastName(call.funcname)?.toLowerCase() ?? null;
}

/** The step of a bucket call's first argument: a literal interval, or the `$n` of `$__interval`. */
function stepOf(arg: unknown, params: readonly MacroParam[]): TimeShape["step"] {
  const k = uncast(arg);
  if (k && k[0] === "ParamRef" && typeof k[1].number === "number") {
    return params[k[1].number - 1] === "interval" ? { param: k[1].number } : null;
  }
  const text = stringConst(arg);
  if (text === null) return null;
  const ms = intervalMs(text);
  return ms === null ? null : { ms };
}

/** A bucket call (date_bin, time_bucket, date_trunc) and its step and origin; null for any other expression. */
function bucketOf(v: unknown, params: readonly MacroParam[]): { step: NonNullable<TimeShape["step"]>; originMs: number } | null {
  const k = uncast(v);
  if (!k || k[0] !== "FuncCall") return null;
  const name = funcName(k[1]);
  const args = Array.isArray(k[1].args) ? k[1].args : [];
  if ((name === "date_bin" || name === "time_bucket") && args.length >= 2) {
    const step = stepOf(args[0], params);
    if (!step) return null;
    let originMs = name === "date_bin" ? Number.NaN : TIMESCALE_ORIGIN_MS;
    if (name === "date_bin") {
      const origin = stringConst(args[2]);
      originMs = origin === null ? Number.NaN : origin === "epoch" ? 0 : Date.parse(origin);
    }
    if (!Number.isFinite(originMs)) return null;
    return { step, originMs };
  }
  if (name === "date_trunc" && args.length === 2) {
    const unit = stringConst(args[0])?.toLowerCase();
    const ms =
      unit === undefined ? undefined : { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 }[unit];
    if (ms === undefined) return null;
    return { step: { ms }, originMs: unit === "week" ? MONDAY_MS : 0 };
  }
  return null;
}

/** The column a `$__timeFilter` expansion compares: `col BETWEEN $from AND $to`. */
function timeFilterColumns(where: unknown, params: readonly MacroParam[], out: Set<string>) {
  const k = kindOf(where);
  if (!k) return;
  if (k[0] === "BoolExpr" && Array.isArray(k[1].args)) {
    for (const a of k[1].args) timeFilterColumns(a, params, out);
    return;
  }
  if (k[0] === "A_Expr" && k[1].kind === "AEXPR_BETWEEN") {
    const col = uncast(k[1].lexpr);
    const bounds = Array.isArray(k[1].rexpr) ? k[1].rexpr : kindOf(k[1].rexpr)?.[1].items;
    const isFromTo =
      Array.isArray(bounds) &&
      bounds.map((b) => {
        const p = uncast(b);
        return p && p[0] === "ParamRef" ? params[Number(p[1].number) - 1] : undefined;
      });
    if (col && col[0] === "ColumnRef" && Array.isArray(isFromTo) && isFromTo[0] === "from" && isFromTo[1] === "to") {
      const name = lastName(col[1].fields);
      if (name) out.add(name);
    }
  }
}

function shapeOfTree(tree: unknown, params: readonly MacroParam[]): TimeShape | null {
  const stmts = isNode(tree) && Array.isArray(tree.stmts) ? tree.stmts : [];
  const select = kindOf(isNode(stmts[0]) ? stmts[0].stmt : null);
  if (!select || select[0] !== "SelectStmt") return null;
  const s = select[1];
  const targets = Array.isArray(s.targetList) ? s.targetList : [];
  if (targets.length === 0) return null;
  let star = false;
  let bucket: { index: number; step: NonNullable<TimeShape["step"]>; originMs: number } | null = null;
  const names: (string | null)[] = [];
  targets.forEach((t, i) => {
    const rt = kindOf(t);
    const val = rt && rt[0] === "ResTarget" ? rt[1].val : null;
    const col = uncast(val);
    if (col && col[0] === "ColumnRef" && Array.isArray(col[1].fields) && col[1].fields.some((f) => kindOf(f)?.[0] === "A_Star"))
      star = true;
    const alias = rt && typeof rt[1].name === "string" ? rt[1].name : null;
    names.push(alias ?? (col && col[0] === "ColumnRef" ? lastName(col[1].fields) : null));
    if (!bucket) {
      const b = bucketOf(val, params);
      if (b) bucket = { index: i, ...b };
    }
  });
  const found = bucket as { index: number; step: NonNullable<TimeShape["step"]>; originMs: number } | null;
  if (found) {
    return { position: star ? null : found.index + 1, step: found.step, originMs: found.originMs, timeKeyed: true };
  }
  // Raw points: keyed by time when the statement orders first by the column its $__timeFilter bounds.
  const filtered = new Set<string>();
  timeFilterColumns(s.whereClause, params, filtered);
  const sort = Array.isArray(s.sortClause) ? kindOf(s.sortClause[0]) : null;
  const sortCol = sort && sort[0] === "SortBy" ? uncast(sort[1].node) : null;
  const sortName = sortCol && sortCol[0] === "ColumnRef" ? lastName(sortCol[1].fields) : null;
  const ascending =
    sort !== null && (sort[1].sortby_dir === undefined || sort[1].sortby_dir === "SORTBY_DEFAULT" || sort[1].sortby_dir === "SORTBY_ASC");
  if (star || sortName === null || !ascending || !filtered.has(sortName)) return null;
  const index = names.indexOf(sortName);
  if (index === -1) return null;
  return { position: index + 1, step: null, originMs: 0, timeKeyed: true };
}

/**
 * The time shape of a guarded statement (its expanded SQL and bind list), from the parser's tree; cached
 * by statement text. Null when the statement has no time column the runner can use, or before the parser
 * has loaded (loadShapeParser).
 */
export function shapeOf(sql: string, params: readonly MacroParam[]): TimeShape | null {
  const key = `${params.map((p) => (typeof p === "string" ? p : "v")).join(",")}\u0000${sql}`;
  const hit = shapes.get(key);
  if (hit !== undefined) return hit;
  if (parseSync === null) return null;
  let shape: TimeShape | null;
  try {
    shape = shapeOfTree(parseSync(sql), params);
  } catch {
    shape = null;
  }
  if (shapes.size >= MAX_SHAPES) shapes.delete(shapes.keys().next().value!);
  shapes.set(key, shape);
  return shape;
}

/** Start (epoch ms) of the bucket of width `stepMs` aligned to `originMs` that holds `t`. */
export function bucketStart(t: number, stepMs: number, originMs: number): number {
  return originMs + Math.floor((t - originMs) / stepMs) * stepMs;
}
