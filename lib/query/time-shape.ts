import { guardParserLoaded, parseTree } from "../sql-guard/index.ts";
import { fixedIntervalMs } from "../sql-guard/interval.ts";
import { kindOf, nameParts, stripCasts, timeBucketOf, uncast } from "../sql-guard/time-bucket.ts";
import type { MacroParam } from "../sql-guard/verdict.ts";

export { bucketStart } from "../sql-guard/time-bucket.ts";

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

const MAX_SHAPES = 1000;
const shapes = new Map<string, TimeShape | null>();

/**
 * Milliseconds of a PostgreSQL interval text of fixed length ("1 minute", "5 mins", "1 hour 30 minutes",
 * "00:05:00", "5m"); null for months and years (their length varies) or anything else.
 */
export function intervalMs(text: string): number | null {
  return fixedIntervalMs(text) ?? null;
}

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

function lastName(fields: unknown): string | null {
  const parts = nameParts(fields);
  const last = parts.at(-1);
  return last === undefined || last === "\u0000" ? null : last;
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
      const b = timeBucketOf(stripCasts(val), params);
      if (b) bucket = { index: i, step: b.step, originMs: b.originMs };
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
 * by statement text. Null when the statement has no time column the runner can use, or before the guard's
 * parser has loaded (loadGuardParser).
 */
export function shapeOf(sql: string, params: readonly MacroParam[]): TimeShape | null {
  const key = `${params.map((p) => (typeof p === "string" ? p : "v")).join(",")}\u0000${sql}`;
  const hit = shapes.get(key);
  if (hit !== undefined) return hit;
  if (!guardParserLoaded()) return null;
  let shape: TimeShape | null;
  try {
    shape = shapeOfTree(parseTree(sql), params);
  } catch {
    shape = null;
  }
  if (shapes.size >= MAX_SHAPES) shapes.delete(shapes.keys().next().value!);
  shapes.set(key, shape);
  return shape;
}
