/**
 * Incremental ticks (docs/stream-host.md, "Incremental ticks"): which panel statements may re-query only
 * their newest buckets, and how such a re-query is spliced into the last result.
 *
 * A statement qualifies when every output row is one group of one time bucket: a single catalog table, a
 * bucket expression over its time column (`$__timeGroup`, `date_bin`, `time_bucket`, or `date_trunc` to the
 * second or minute) in the select list and in GROUP BY, the range bound only by `$__timeFilter` on that
 * column (or `>= $__timeFrom()` with an optional `< $__timeTo()`), and nothing that reads across buckets: no window function, sub-query, CTE, set operation,
 * DISTINCT, LIMIT/OFFSET, grouping sets, or ORDER BY other than the bucket. Anything unsure is refused,
 * with the reason, and the panel runs its full query as before.
 */
import type { Catalog } from "../catalog/types.ts";
import type { MacroParam } from "../sql-guard/verdict.ts";
import { bucketStart, kindOf, nameParts, timeBucketOf } from "../sql-guard/time-bucket.ts";
import type { Cell } from "./frames.ts";

/** How a qualifying statement buckets time. Bucket starts are computed here exactly as PostgreSQL does. */
export type BucketStep =
  /** A fixed step: a literal interval, or `$__interval` (`fromInterval`: the value is the range's interval). */
  { kind: "fixed"; stepMs: number; originMs: number } | { kind: "interval"; originMs: number };

/** A statement that may tick incrementally: the output column holding the bucket, and its step. */
export interface IncrementalPlan {
  ok: true;
  /** Index of the bucket column in the result's columns (the select list's position). */
  bucketColumn: number;
  step: BucketStep;
}

export type IncrementalVerdict = IncrementalPlan | { ok: false; reason: string };

type Node = Record<string, unknown>;

function isNode(v: unknown): v is Node {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** A copy of a tree without `location` fields, for structural comparison. */
function shape(v: unknown): string {
  return JSON.stringify(v, (k, val) => (k === "location" ? undefined : val));
}

/** Every node of a tree, depth first, with its kind. */
function* walk(v: unknown): Generator<[string, Node]> {
  if (Array.isArray(v)) {
    for (const x of v) yield* walk(x);
    return;
  }
  if (!isNode(v)) return;
  const u = kindOf(v);
  if (u) yield u;
  for (const val of Object.values(u ? u[1] : v)) if (typeof val === "object" && val !== null) yield* walk(val);
}

function paramNumber(node: unknown): number | undefined {
  let u = kindOf(node);
  if (u && u[0] === "TypeCast") u = kindOf(u[1].arg);
  return u && u[0] === "ParamRef" && typeof u[1].number === "number" ? u[1].number : undefined;
}

/** The column a ColumnRef names (its last field) and its qualifier, if any. */
function columnRef(node: unknown): { name: string; qualifier?: string } | undefined {
  const u = kindOf(node);
  if (!u || u[0] !== "ColumnRef") return undefined;
  const f = nameParts(u[1].fields);
  if (f.length === 1) return { name: f[0] };
  if (f.length === 2) return { qualifier: f[0], name: f[1] };
  return undefined;
}

/**
 * The bucket a select-list expression computes over the time column, when PostgreSQL's buckets are
 * exactly the grid this module reproduces (lib/sql-guard/time-bucket.ts decides both for every analysis).
 */
function bucketOf(expr: unknown, timeColumn: (c: unknown) => boolean, params: readonly MacroParam[]): BucketStep | undefined {
  const b = timeBucketOf(expr, params);
  if (!b || !b.exact || !timeColumn(b.column)) return undefined;
  return "param" in b.step ? { kind: "interval", originMs: b.originMs } : { kind: "fixed", stepMs: b.step.ms, originMs: b.originMs };
}

/** Conjuncts of a WHERE clause (AND at the top only). */
function conjuncts(where: unknown): unknown[] {
  const u = kindOf(where);
  if (u && u[0] === "BoolExpr" && u[1].boolop === "AND_EXPR") return list(u[1].args).flatMap(conjuncts);
  return where === undefined ? [] : [where];
}

/**
 * Decides once per statement (the guard's expanded SQL and its parameters) whether it may tick
 * incrementally. `parse` is libpg-query's parseSync; `catalog` the source's catalog.
 */
export function planIncremental(
  expandedSql: string,
  params: readonly MacroParam[],
  catalog: Catalog,
  parse: (sql: string) => unknown,
): IncrementalVerdict {
  const no = (reason: string): IncrementalVerdict => ({ ok: false, reason });
  let tree: unknown;
  try {
    tree = parse(expandedSql);
  } catch {
    return no("the statement does not parse");
  }
  const stmts = isNode(tree) ? list(tree.stmts) : [];
  if (stmts.length !== 1 || !isNode(stmts[0])) return no("not one statement");
  const top = kindOf(stmts[0].stmt);
  if (!top || top[0] !== "SelectStmt") return no("not a SELECT");
  const s = top[1];
  if (s.op !== undefined && s.op !== "SETOP_NONE") return no("a set operation");
  if (s.withClause) return no("a WITH clause");
  if (s.limitCount || s.limitOffset) return no("LIMIT or OFFSET");
  if (s.distinctClause) return no("DISTINCT");
  if (s.windowClause) return no("a window clause");
  if (s.valuesLists) return no("VALUES");
  for (const [kind, body] of walk(s)) {
    if (kind === "SubLink" || kind === "RangeSubselect" || kind === "RangeFunction" || kind === "CommonTableExpr")
      return no("a sub-query or a function in FROM");
    if (kind === "FuncCall" && body.over) return no("a window function");
    if (kind === "GroupingSet") return no("grouping sets");
  }

  const from = list(s.fromClause);
  const rel = from.length === 1 ? kindOf(from[0]) : null;
  if (!rel || rel[0] !== "RangeVar") return no("not exactly one table in FROM");
  const relname = String(rel[1].relname);
  const schema = typeof rel[1].schemaname === "string" ? rel[1].schemaname : undefined;
  const alias = isNode(rel[1].alias) && typeof rel[1].alias.aliasname === "string" ? rel[1].alias.aliasname : undefined;
  const table = catalog.tables.find((t) => t.name === relname && (schema === undefined || t.schema === schema));
  if (!table?.timeColumn) return no("the table has no time column");
  const timeCol = table.timeColumn;
  const isTimeColumn = (c: unknown): boolean => {
    const ref = columnRef(c);
    return ref !== undefined && ref.name === timeCol && (ref.qualifier === undefined || ref.qualifier === (alias ?? relname));
  };

  // The range reaches the statement only through one `col BETWEEN $from AND $to` on the time column.
  const rangeParams = new Set<number>();
  params.forEach((p, i) => {
    if (p === "from" || p === "to") rangeParams.add(i + 1);
  });
  let lower = 0;
  let upper = 0;
  const param = (n: unknown) => params[(paramNumber(n) ?? 0) - 1];
  for (const c of conjuncts(s.whereClause)) {
    const u = kindOf(c);
    if (!u || u[0] !== "A_Expr" || !isTimeColumn(u[1].lexpr)) continue;
    if (u[1].kind === "AEXPR_BETWEEN") {
      const bounds = kindOf(u[1].rexpr);
      const items = bounds && bounds[0] === "List" ? list(bounds[1].items) : [];
      if (items.length === 2 && param(items[0]) === "from" && param(items[1]) === "to") {
        lower++;
        upper++;
      }
    } else if (u[1].kind === "AEXPR_OP") {
      const op = nameParts(u[1].name).join("");
      if ((op === ">=" || op === ">") && param(u[1].rexpr) === "from") lower++;
      if ((op === "<" || op === "<=") && param(u[1].rexpr) === "to") upper++;
    }
  }
  let rangeUses = 0;
  for (const [kind, body] of walk(s)) if (kind === "ParamRef" && rangeParams.has(body.number as number)) rangeUses++;
  if (lower !== 1 || upper > 1 || rangeUses !== lower + upper)
    return no("the range is used other than as one lower (and upper) bound on the time column");

  const targets = list(s.targetList).map((t) => kindOf(t));
  let bucketColumn = -1;
  let step: BucketStep | undefined;
  targets.forEach((t, i) => {
    if (!t || t[0] !== "ResTarget" || bucketColumn >= 0) return;
    const b = bucketOf(t[1].val, isTimeColumn, params);
    if (b) {
      bucketColumn = i;
      step = b;
    }
  });
  if (bucketColumn < 0 || !step) return no("no time bucket over the time column in the select list");
  const bucketTarget = targets[bucketColumn] as [string, Node];
  const bucketShape = shape(bucketTarget[1].val);
  const bucketName = typeof bucketTarget[1].name === "string" ? bucketTarget[1].name : undefined;
  if (
    targets.some(
      (t) => t && t[0] === "ResTarget" && isNode(t[1].val) && kindOf(t[1].val)?.[0] === "ColumnRef" && columnRef(t[1].val) === undefined,
    )
  )
    return no("a * in the select list");
  const isBucketRef = (n: unknown): boolean => {
    const u = kindOf(n);
    if (u && u[0] === "A_Const" && isNode(u[1].ival)) return u[1].ival.ival === bucketColumn + 1;
    const ref = columnRef(n);
    if (ref && bucketName !== undefined && ref.qualifier === undefined && ref.name === bucketName) return true;
    return shape(n) === bucketShape;
  };
  if (!list(s.groupClause).some(isBucketRef)) return no("GROUP BY does not group by the time bucket");
  for (const sort of list(s.sortClause)) {
    const u = kindOf(sort);
    if (!u || u[0] !== "SortBy" || !isBucketRef(u[1].node)) return no("ORDER BY other than the time bucket");
  }
  return { ok: true, bucketColumn, step };
}

export { bucketStart };

/** The windows an incremental tick queries, and what it keeps of the last result. */
export interface TickWindows {
  /** The first bucket of the range: re-read from the range start to its end (the range cuts it). */
  first: { fromMs: number; toMs: number; bucket: number };
  /** From the oldest bucket that may have changed since the last query, to now. */
  newest: { fromMs: number; toMs: number; fromBucket: number };
}

/**
 * The windows of an incremental tick over [fromMs, toMs], given when the last result was read
 * (`lastToMs`) and how late a row may arrive (`lateMs`). Null when the windows would cover the range
 * anyway: run the full query.
 */
export function tickWindows(
  range: { fromMs: number; toMs: number },
  lastToMs: number,
  stepMs: number,
  originMs: number,
  lateMs: number,
): TickWindows | null {
  const firstBucket = bucketStart(range.fromMs, stepMs, originMs);
  const fromBucket = bucketStart(Math.min(lastToMs, range.toMs) - lateMs, stepMs, originMs);
  if (fromBucket <= firstBucket + stepMs) return null;
  return {
    first: { fromMs: range.fromMs, toMs: Math.min(firstBucket + stepMs, range.toMs), bucket: firstBucket },
    newest: { fromMs: fromBucket, toMs: range.toMs, fromBucket },
  };
}

/**
 * Splices an incremental tick into the last result: rows of the first bucket come from `firstRows`, rows
 * of buckets from `windows.newest.fromBucket` on from `newestRows`, rows in between from `last`; rows
 * before the first bucket slid out of the range. Rows stay in bucket order (each window's own order
 * within a bucket). Also returns the buckets whose rows changed, for a delta frame.
 */
export function splice(
  last: readonly Cell[][],
  firstRows: readonly Cell[][],
  newestRows: readonly Cell[][],
  windows: TickWindows,
  bucketColumn: number,
): { rows: Cell[][]; changed: number[] } {
  const b = (row: readonly Cell[]) => row[bucketColumn] as number;
  const firstBucket = windows.first.bucket;
  const cut = windows.newest.fromBucket;
  const kept = last.filter((r) => b(r) > firstBucket && b(r) < cut);
  const first = firstRows.filter((r) => b(r) === firstBucket);
  const newest = newestRows.filter((r) => b(r) >= cut);
  const rows = [...first, ...kept, ...newest].map((r) => [...r]);
  rows.sort((x, y) => b(x) - b(y));

  // Buckets whose rows differ from the last result's (compared as multisets of rows).
  const byBucket = (rs: readonly Cell[][], pick: (bucket: number) => boolean) => {
    const m = new Map<number, string[]>();
    for (const r of rs) {
      if (!pick(b(r))) continue;
      const list = m.get(b(r)) ?? [];
      list.push(JSON.stringify(r));
      m.set(b(r), list);
    }
    return m;
  };
  const touched = (bucket: number) => bucket === firstBucket || bucket >= cut;
  const before = byBucket(last, touched);
  const after = byBucket(rows, touched);
  const changed: number[] = [];
  for (const bucket of new Set([...before.keys(), ...after.keys()])) {
    const x = (before.get(bucket) ?? []).sort().join("\n");
    const y = (after.get(bucket) ?? []).sort().join("\n");
    if (x !== y) changed.push(bucket);
  }
  changed.sort((x, y) => x - y);
  return { rows, changed };
}

/** The rows of the given buckets, for a delta frame. */
export function rowsOfBuckets(rows: readonly Cell[][], buckets: readonly number[], bucketColumn: number): Cell[][] {
  const set = new Set(buckets);
  return rows.filter((r) => set.has(r[bucketColumn] as number));
}
