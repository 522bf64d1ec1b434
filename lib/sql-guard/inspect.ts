// The guard's semantic pass over libpg-query's JSON parse tree. It resolves names the way PostgreSQL does
// (query levels, FROM items with their columns, CTE scope), so a column, a field selection, a function, an
// operator, a cast and every read of a time-column table is checked for what it is. Every field of every node
// is visited: structured handlers take the keys they understand and hand every other key to the generic walk,
// so a call or a relation cannot hide in a field this file does not know about. Findings are collected per
// check so the guard answers in its fixed order (keyword, function, catalog, time) whatever order the tree is
// in. The rules are documented in docs/sql-guard.md.
import type { Catalog, CatalogTable } from "../catalog/types.ts";
import { SYNTAX_ONLY_FUNCTIONS } from "./allowlist.ts";
import { FUNCTION_DECLARATION_MAP, OPERATOR_DECLARATION_MAP, coversArity } from "./declarations.ts";
import { intervalLiteralMs, TRUNCATION_MS } from "./interval.ts";
import { safeName } from "./macros.ts";
import type { MacroParam, SeriesBound } from "./verdict.ts";
import { numberConst, stringConst, sval } from "./nodes.ts";
import { operatorProblem } from "./operators.ts";
import { MAX_SERIES_ROWS } from "./series.ts";
import {
  AGGREGATE,
  type Arg,
  type CallVerdict,
  FIXED,
  ONE_ROW,
  type Size,
  UNBOUNDED,
  bounded,
  callSize,
  literalSize,
  numericLiteralProblem,
  pick,
  sortProblem,
  sum,
} from "./sizes.ts";
import { SERVER_STATE_COLUMN_TYPES, typeProblem } from "./types.ts";

export interface Findings {
  /** Offending keyword (e.g. "INSERT", "FOR UPDATE"); "" means "use the statement's first word". */
  keyword: string | null;
  /** Message of the first function-check finding. */
  func: string | null;
  /** Character offset (in the expanded SQL) of the node of the first function-check finding, when known. */
  funcLocation: number | null;
  /** Message of the first catalog-check finding. */
  catalog: string | null;
  /** Message of the first time-check finding. */
  time: string | null;
  /** Character offset (in the expanded SQL) of the node of the first time-check finding, when known. */
  timeLocation: number | null;
  /** The time series the runner checks against the range (series.ts). */
  series: SeriesBound[];
  paramRefs: number;
  maxParam: number;
}

/** Statements that may sit inside a SELECT (data-modifying CTEs) named by their keyword. */
const NESTED_STATEMENT: Record<string, string> = {
  InsertStmt: "INSERT",
  UpdateStmt: "UPDATE",
  DeleteStmt: "DELETE",
  MergeStmt: "MERGE",
};

const LOCK_STRENGTH: Record<string, string> = {
  LCS_FORKEYSHARE: "FOR KEY SHARE",
  LCS_FORSHARE: "FOR SHARE",
  LCS_FORNOKEYUPDATE: "FOR NO KEY UPDATE",
  LCS_FORUPDATE: "FOR UPDATE",
};

/** SQL value functions that leak who or where the session is. */
const DENIED_VALUE_FUNCTIONS: Record<string, string> = {
  SVFOP_CURRENT_ROLE: "current_role",
  SVFOP_CURRENT_USER: "current_user",
  SVFOP_USER: "user",
  SVFOP_SESSION_USER: "session_user",
  SVFOP_CURRENT_CATALOG: "current_catalog",
  SVFOP_CURRENT_SCHEMA: "current_schema",
};

/** Output column names PostgreSQL gives SQL value functions. */
const VALUE_FUNCTION_NAMES: Record<string, string> = {
  SVFOP_CURRENT_DATE: "current_date",
  SVFOP_CURRENT_TIME: "current_time",
  SVFOP_CURRENT_TIME_N: "current_time",
  SVFOP_CURRENT_TIMESTAMP: "current_timestamp",
  SVFOP_CURRENT_TIMESTAMP_N: "current_timestamp",
  SVFOP_LOCALTIME: "localtime",
  SVFOP_LOCALTIME_N: "localtime",
  SVFOP_LOCALTIMESTAMP: "localtimestamp",
  SVFOP_LOCALTIMESTAMP_N: "localtimestamp",
};

const XML_OPS: Record<string, string> = {
  IS_XMLCONCAT: "xmlconcat",
  IS_XMLELEMENT: "xmlelement",
  IS_XMLFOREST: "xmlforest",
  IS_XMLPARSE: "xmlparse",
  IS_XMLPI: "xmlpi",
  IS_XMLROOT: "xmlroot",
  IS_XMLSERIALIZE: "xmlserialize",
  IS_DOCUMENT: "xml is document",
};

const JSON_OPS: Record<string, string> = {
  JSON_EXISTS_OP: "json_exists",
  JSON_QUERY_OP: "json_query",
  JSON_VALUE_OP: "json_value",
  JSON_TABLE_OP: "json_table",
};

/** SQL-syntax constructs that are function calls under another name; allowed only if allowlisted. */
const SYNTAX_FUNCTIONS: Record<string, string> = {
  XmlSerialize: "xmlserialize",
  RangeTableFunc: "xmltable",
  JsonTable: "json_table",
  JsonObjectConstructor: "json_object",
  JsonArrayConstructor: "json_array",
  JsonArrayQueryConstructor: "json_array",
  JsonObjectAgg: "json_objectagg",
  JsonArrayAgg: "json_arrayagg",
  JsonParseExpr: "json",
  JsonScalarExpr: "json_scalar",
  JsonSerializeExpr: "json_serialize",
  MergeSupportFunc: "merge_action",
};

/** System columns every table has; information_schema (and so the catalog) does not list them. */
const SYSTEM_COLUMNS = new Set(["tableoid", "xmin", "cmin", "xmax", "cmax", "ctid"]);

/** Casts that keep a time bound a time bound (a cast to date would widen it by up to a day). */
const TIME_BOUND_CASTS = new Set(["timestamptz", "timestamp"]);
const INTERVAL_CASTS = new Set(["interval"]);
/** How far before the range start a time bound may reach beyond one range or one $__interval (truncation, literal offset). */
export const MAX_BOUND_WIDENING_MS = 24 * 3600_000;
/** How far a generate_series end may reach beyond the range by truncation or a literal offset (its rows are checked too). */
export const MAX_SERIES_WIDENING_MS = 366 * 24 * 3600_000;

/** How far a time derived from the range can lie outside it: milliseconds, `$__interval`s and whole ranges. */
interface Widening {
  ms: number;
  intervals: number;
  ranges: number;
}

/** The length of an interval literal (`interval '1 minute'`, `'5 minutes'::interval`, `'1 hour'`) in ms. */
function intervalLiteral(v: unknown): number | undefined {
  const cast = bodyOf(v, "TypeCast");
  if (cast) {
    const t = cast.typeName as Obj | undefined;
    const names = stringParts(t?.names);
    // interval '1' hour and interval(0) carry modifiers that change the meaning of the text: not read.
    if (names?.[names.length - 1] !== "interval" || (Array.isArray(t?.typmods) && t.typmods.length > 0)) return undefined;
    return intervalLiteral(cast.arg);
  }
  const text = stringConst(v);
  return text === undefined ? undefined : intervalLiteralMs(text);
}

/** A column a FROM item provides: its name, for a catalog table its catalog type, and its size class. */
interface Column {
  name: string;
  type: string | null;
  size: Size;
  /** Its values are at or after a lower bound from the range start (a generate_series over the range). */
  timeFloor?: true;
}

/** One FROM item of a query level (a table, CTE, sub-select, function or join alias). */
interface Item {
  /** The name the query refers to it by; null for an unaliased sub-select. */
  name: string | null;
  /** For an unaliased catalog table: its schema, so `schema.table.column` resolves. */
  schema: string | null;
  /** Its columns, or null when they cannot be known (then nothing is resolved against it). */
  columns: readonly Column[] | null;
  /** The catalog table read here, with the column that bounds it (under this item's column names). */
  timeColumn: string | null;
  /** Set once a conjunct of the WHERE or JOIN ... ON that scopes it bounds the time column. */
  bounded: boolean;
  /** How messages name it: "http_requests AS r". */
  shown: string;
  /** Where the statement names it (character offset), for a catalog table. */
  location?: number;
}

/** One query level: its FROM items, and (in ORDER BY, GROUP BY, DISTINCT ON) its output column names. */
class Level {
  readonly items: Item[] = [];
  /** Set while ORDER BY, GROUP BY or DISTINCT ON of this level is walked: its output columns. */
  outputs: readonly Column[] | null = null;
  constructor(readonly parent: Level | null) {}
}

/** CTE names in scope, innermost first; a null column list means the CTE's columns are not known. */
interface CteScope {
  readonly names: Map<string, readonly Column[] | null>;
  readonly parent: CteScope | null;
}

interface Ctx {
  level: Level | null;
  ctes: CteScope | null;
}

interface CatalogIndex {
  tables: unknown;
  count: number;
  qualified: Map<string, CatalogTable>;
  unqualified: Map<string, CatalogTable>;
  /** Schema of a non-public catalog table by name, for the hint to qualify it. */
  elsewhere: Map<string, string>;
  /** Each table's columns as the analysis sees them (row-sized), built on first read and never changed. */
  columns: Map<CatalogTable, readonly Column[]>;
}

const indexes = new WeakMap<Catalog, CatalogIndex>();

/**
 * Lookup maps for a catalog, built once per catalog object. Unqualified names resolve in `public` only: the
 * runner starts source connections with search_path=public, so a bare name of another schema would run
 * against public's table of that name.
 */
function indexOf(catalog: Catalog): CatalogIndex {
  const tables = Array.isArray(catalog.tables) ? catalog.tables : [];
  let idx = indexes.get(catalog);
  // Rebuilt when the catalog object got a new or resized table list (callers should pass a fresh object).
  if (idx && idx.tables === catalog.tables && idx.count === tables.length) return idx;
  const qualified = new Map<string, CatalogTable>();
  const unqualified = new Map<string, CatalogTable>();
  const elsewhere = new Map<string, string>();
  for (const t of tables) {
    if (!t || typeof t.name !== "string" || typeof t.schema !== "string") continue;
    qualified.set(`${t.schema}\u0000${t.name}`, t);
    if (t.schema === "public") unqualified.set(t.name, t);
    else if (!elsewhere.has(t.name)) elsewhere.set(t.name, t.schema);
  }
  idx = { tables: catalog.tables, count: tables.length, qualified, unqualified, elsewhere, columns: new Map() };
  indexes.set(catalog, idx);
  return idx;
}

function isSystemSchema(schema: string): boolean {
  return schema === "information_schema" || schema.startsWith("pg_");
}

type Obj = Record<string, unknown>;

function stringParts(list: unknown): string[] | null {
  if (!Array.isArray(list)) return null;
  const parts: string[] = [];
  for (const item of list) {
    const s = sval(item);
    if (s === undefined) return null;
    parts.push(s);
  }
  return parts;
}

/**
 * The last part of a name list, as `stringParts(list)?.at(-1)` without building the list: null when it is not a
 * list of String nodes, undefined when it is empty.
 */
function lastName(list: unknown): string | null | undefined {
  if (!Array.isArray(list)) return null;
  for (let i = 0; i < list.length; i++) if (sval(list[i]) === undefined) return null;
  return list.length === 0 ? undefined : sval(list[list.length - 1]);
}

/** The type a TypeCast body names, as lastName of its names. */
function castType(cast: Obj): string | null | undefined {
  return lastName((cast.typeName as Obj | undefined)?.names);
}

/**
 * The node type of a wrapper object ({"ColumnRef": {...}}): its first key, when that holds an object body;
 * else undefined. Its body is then `v[type]`. Nothing is allocated: this runs for most nodes several times.
 */
function nodeType(v: unknown): string | undefined {
  if (!v || typeof v !== "object" || Array.isArray(v)) return undefined;
  for (const key in v as Obj) {
    const body = (v as Obj)[key];
    return body && typeof body === "object" && !Array.isArray(body) ? key : undefined;
  }
  return undefined;
}

/** The body of a wrapper object of any node type (nodeType), or undefined. */
function nodeBody(v: unknown): Obj | undefined {
  const type = nodeType(v);
  return type === undefined ? undefined : ((v as Obj)[type] as Obj);
}

/** The body of a wrapper object when its node type is `type`, else undefined. */
function bodyOf(v: unknown, type: string): Obj | undefined {
  return nodeType(v) === type ? ((v as Obj)[type] as Obj) : undefined;
}

function aliasOf(node: Obj): { name: string | null; colnames: string[] | null } {
  const a = node.alias as { aliasname?: unknown; colnames?: unknown } | undefined;
  const name = typeof a?.aliasname === "string" ? a.aliasname : null;
  const colnames = a?.colnames !== undefined ? stringParts(a.colnames) : null;
  return { name, colnames };
}

/** Columns renamed positionally by a column alias list (`AS t(a, b)`). */
function renamed(columns: readonly Column[] | null, colnames: string[] | null): readonly Column[] | null {
  if (!colnames) return columns;
  if (!columns) return colnames.map((name) => ({ name, type: null, size: ONE_ROW }));
  return columns.map((c, i) => (i < colnames.length ? { ...c, name: colnames[i] } : c));
}

/** A call whose ORDER BY, DISTINCT or window sorts an unbounded value. */
function unsortable(shown: string): CallVerdict {
  return { size: AGGREGATE, problem: sortProblem(AGGREGATE, `${shown}'s ORDER BY, DISTINCT or window`) };
}

/** The columns of a function in FROM, by name, all of its size. */
function functionColumns(names: readonly string[], size: Size, timeFloor: boolean): Column[] {
  const out: Column[] = new Array(names.length);
  for (let i = 0; i < names.length; i++) {
    out[i] = timeFloor ? { name: names[i], type: null, size, timeFloor: true } : { name: names[i], type: null, size };
  }
  return out;
}

/** The column of that name, or undefined. */
function columnNamed(columns: readonly Column[] | null | undefined, name: string): Column | undefined {
  if (!columns) return undefined;
  for (let i = 0; i < columns.length; i++) if (columns[i].name === name) return columns[i];
  return undefined;
}

/** Adds a FROM item to its level; the items one FROM entry added. */
function added(level: Level, item: Item): Item[] {
  level.items.push(item);
  return [item];
}

/** Output names a catalog-less derivation cannot be sure of are left out (never matched, never called). */
const UNKNOWN_NAME = "?column?";

/** Walks one parsed statement and records what each guard check needs. */
export function inspect(
  tree: unknown,
  catalog: Catalog | null,
  allowed: ReadonlySet<string>,
  allowedQualified: ReadonlySet<string>,
  params: readonly MacroParam[] = [],
  extraTypes: ReadonlySet<string> = new Set(),
): Findings {
  const w = new Analyzer(catalog ? indexOf(catalog) : null, allowed, allowedQualified, params, extraTypes);
  w.expr(tree, { level: null, ctes: null });
  return w.findings;
}

class Analyzer {
  readonly findings: Findings = {
    keyword: null,
    func: null,
    funcLocation: null,
    catalog: null,
    time: null,
    timeLocation: null,
    series: [],
    paramRefs: 0,
    maxParam: 0,
  };
  /** Sizes of calls and operators, computed once when the walk checks them (by node body). */
  private readonly sizes = new Map<object, Size>();
  /** Output columns of each SELECT body, as the walk found them. */
  private readonly outputs = new Map<object, Column[] | null>();

  constructor(
    private readonly catalog: CatalogIndex | null,
    private readonly allowed: ReadonlySet<string>,
    private readonly allowedQualified: ReadonlySet<string>,
    private readonly params: readonly MacroParam[],
    private readonly extraTypes: ReadonlySet<string>,
  ) {}

  // ---- findings -------------------------------------------------------------------------------------

  private keyword(name: string): void {
    if (this.findings.keyword === null) this.findings.keyword = name;
  }

  private deny(message: string, location?: unknown): void {
    if (this.findings.func !== null) return;
    this.findings.func = message;
    if (typeof location === "number") this.findings.funcLocation = location;
  }

  private denyName(name: string): void {
    this.deny(`function ${safeName(name)} is not allowed`);
  }

  private catalogProblem(message: string): void {
    if (this.findings.catalog === null) this.findings.catalog = message;
  }

  // ---- the generic walk -------------------------------------------------------------------------------

  /** Visits any value: arrays element by element, nodes by their type. */
  expr(v: unknown, ctx: Ctx): void {
    if (typeof v !== "object" || v === null) return;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) this.expr(v[i], ctx);
      return;
    }
    const o = v as Obj;
    for (const key in o) {
      const child = o[key];
      if (typeof child !== "object" || child === null) continue;
      const c0 = key.charCodeAt(0);
      if (c0 >= 65 && c0 <= 90 && !Array.isArray(child)) this.node(key, child as Obj, ctx);
      else if (key === "typeName" && !Array.isArray(child)) this.typeName(child as Obj, ctx);
      else this.expr(child, ctx);
    }
  }

  /** Visits every field of a node body except those in `skip`. */
  private rest(body: Obj, ctx: Ctx, skip: readonly string[]): void {
    const skipping = skip.length > 0;
    for (const key in body) {
      if (skipping && skip.includes(key)) continue;
      const child = body[key];
      if (typeof child !== "object" || child === null) continue;
      // A TypeName sits unwrapped under `typeName` (casts, column definitions).
      if (key === "typeName" && !Array.isArray(child)) this.typeName(child as Obj, ctx);
      else this.expr(child, ctx);
    }
  }

  /** A node wrapper key (node type name) and its body. */
  private node(type: string, body: Obj, ctx: Ctx): void {
    switch (type) {
      case "SelectStmt":
        this.select(body, ctx);
        return;
      case "ParamRef": {
        this.findings.paramRefs++;
        const n = typeof body.number === "number" ? body.number : 0;
        if (n > this.findings.maxParam) this.findings.maxParam = n;
        return;
      }
      case "ColumnRef":
        this.columnRef(body, ctx);
        return;
      case "A_Indirection":
        this.indirection(body, ctx);
        return;
      case "FuncCall":
        this.funcCall(body, ctx);
        return;
      case "A_Expr":
        this.aExpr(body, ctx);
        return;
      case "SubLink": {
        const op = stringParts(body.operName);
        if (op) this.operator(op, body.location);
        this.rest(body, ctx, SKIP_OPERNAME);
        if (body.subLinkType === "ARRAY_SUBLINK") {
          // ARRAY(SELECT ...) concatenates its rows, as array_agg does.
          const sub = nodeBody(body.subselect);
          const column = sub ? this.outputs.get(sub)?.[0] : undefined;
          if (column && column.size.cls === UNBOUNDED) {
            this.deny("ARRAY(SELECT ...) over an unbounded value (an aggregate that concatenates rows) is not allowed", body.location);
          }
        }
        return;
      }
      case "A_Const": {
        const f = (body.fval as { fval?: unknown } | undefined)?.fval;
        if (typeof f === "string") {
          const problem = numericLiteralProblem(f);
          if (problem) this.deny(problem, body.location);
        }
        return;
      }
      case "TypeCast":
        this.typeCast(body, ctx);
        return;
      case "SortBy": {
        // ORDER BY x USING op
        const op = stringParts(body.useOp);
        if (op) this.operator(op);
        this.rest(body, ctx, SKIP_USEOP);
        return;
      }
      case "TypeName":
        this.typeName(body, ctx);
        return;
      case "SQLValueFunction": {
        const name = DENIED_VALUE_FUNCTIONS[String(body.op)];
        if (name) this.denyName(name);
        return;
      }
      case "LockingClause":
        this.keyword(LOCK_STRENGTH[String(body.strength)] ?? "FOR UPDATE");
        this.rest(body, ctx, NO_SKIP);
        return;
      case "IntoClause":
        this.keyword("INTO");
        return;
      case "RangeVar":
        // A relation outside a FROM list (only in statements the keyword check refuses): still checked.
        this.relation(body, ctx);
        return;
      case "XmlExpr":
        this.syntaxFunction(XML_OPS[String(body.op)] ?? "xml");
        this.rest(body, ctx, NO_SKIP);
        return;
      case "JsonFuncExpr":
        this.syntaxFunction(JSON_OPS[String(body.op)] ?? "json_query");
        this.rest(body, ctx, NO_SKIP);
        return;
      case "RangeTableSample":
        this.tableSampleMethod(body);
        this.rest(body, ctx, SKIP_METHOD);
        return;
      case "String":
        // An identifier part: its body holds only its text (sval), nothing for the walk to visit.
        return;
      default: {
        const fn = SYNTAX_FUNCTIONS[type];
        if (fn) this.syntaxFunction(fn);
        else if (type.endsWith("Stmt")) {
          this.keyword(NESTED_STATEMENT[type] ?? "");
          if (body.withClause) {
            // A data-modifying statement's own WITH: its names scope the statement.
            const ctes = this.withClause(body.withClause as Obj, ctx);
            this.rest(body, { level: ctx.level, ctes }, SKIP_WITHCLAUSE);
            return;
          }
        }
        this.rest(body, ctx, NO_SKIP);
      }
    }
  }

  // ---- query levels -----------------------------------------------------------------------------------

  /**
   * One SELECT (or VALUES, or set operation) at any depth. Returns its output columns (null when they cannot
   * be known), which name the columns of a sub-select or CTE that reads it.
   */
  private select(body: Obj, outer: Ctx): Column[] | null {
    const out = this.selectLevel(body, outer);
    this.outputs.set(body, out);
    return out;
  }

  private selectLevel(body: Obj, outer: Ctx): Column[] | null {
    let ctx: Ctx = outer;
    if (body.withClause && typeof body.withClause === "object") {
      ctx = { level: ctx.level, ctes: this.withClause(body.withClause as Obj, ctx) };
    }

    // A set operation: each branch is a query level of its own; ORDER BY and LIMIT see the output names.
    if (body.op !== undefined && body.op !== "SETOP_NONE") {
      // The branches are SelectStmt bodies without the node wrapper.
      const left = this.branch(body.larg, ctx);
      const right = this.branch(body.rarg, ctx);
      const level = new Level(ctx.level);
      level.outputs = left ?? [];
      const setCtx: Ctx = { level, ctes: ctx.ctes };
      this.rest(body, setCtx, SKIP_WITHCLAUSE_LARG_RARG);
      // A column of a set operation is either branch's value; UNION, INTERSECT and EXCEPT without ALL sort them.
      // Unnamed targets are left out of a branch's columns, so positions line up only when no branch lost one.
      const aligned = left !== null && right !== null && left.length === right.length;
      const anyRight = pick((right ?? [ONE_ROW]).map((c) => ("size" in c ? c.size : c)));
      const columns =
        left?.map((c, i) => ({ name: c.name, type: c.type, size: pick([c.size, aligned ? right[i].size : anyRight]) })) ?? null;
      if (body.all !== true) {
        for (const c of columns ?? [{ name: "", type: null, size: ONE_ROW }]) {
          const p = sortProblem(c.size, String(body.op).replace("SETOP_", ""));
          if (p) this.deny(p);
        }
      }
      if (Array.isArray(body.sortClause)) this.sortKeys(body.sortClause, columns, setCtx, "ORDER BY");
      return columns;
    }

    const level = new Level(ctx.level);
    const inner: Ctx = { level, ctes: ctx.ctes };
    const joinQuals: { quals: unknown; restricts: Item[] }[] = [];
    if (Array.isArray(body.fromClause)) {
      for (const f of body.fromClause) this.fromItem(f, inner, level, joinQuals);
    }

    let output: Column[] | null = [];
    // ORDER BY, GROUP BY and DISTINCT keys are checked once the output columns are known.
    const sorts: [unknown[], string][] = [];
    for (const key in body) {
      const child = body[key];
      if (typeof child !== "object" || child === null) continue;
      switch (key) {
        case "withClause":
        case "fromClause":
          break;
        case "targetList":
          output = this.targetList(child as unknown[], inner);
          break;
        case "valuesLists": {
          const valuesCtx: Ctx = { level: ctx.level, ctes: ctx.ctes };
          this.expr(child, valuesCtx);
          const rows = (child as { List?: { items?: unknown[] } }[]).map((r) => (Array.isArray(r?.List?.items) ? r.List.items : []));
          const n = rows[0]?.length ?? 0;
          output = Array.from({ length: n }, (_, i) => ({
            name: `column${i + 1}`,
            type: null,
            size: pick(rows.map((r) => this.sizeOf(r[i], valuesCtx))),
          }));
          break;
        }
        case "sortClause":
        case "groupClause":
        case "distinctClause": {
          // ORDER BY, GROUP BY and DISTINCT ON may name output columns as well as input columns.
          level.outputs = output ?? [];
          this.expr(child, inner);
          level.outputs = null;
          sorts.push([child as unknown[], key === "sortClause" ? "ORDER BY" : key === "groupClause" ? "GROUP BY" : "DISTINCT"]);
          break;
        }
        case "intoClause":
          this.keyword("INTO");
          break;
        default:
          this.expr(child, inner);
      }
    }

    for (const [keys, what] of sorts) this.sortKeys(keys, output, inner, what);
    this.timeBounds(level, body.whereClause, joinQuals);
    return output;
  }

  /** A set operation's branch: a SelectStmt body without the node wrapper. */
  private branch(b: unknown, ctx: Ctx): Column[] | null {
    return b && typeof b === "object" ? this.select(b as Obj, ctx) : null;
  }

  /**
   * ORDER BY, GROUP BY and DISTINCT sort or hash their keys, spilling to temp files: never over an unbounded
   * value. A key is an expression, an output column's name or position, or (plain DISTINCT) every output column.
   */
  private sortKeys(keys: unknown[], output: Column[] | null, ctx: Ctx, what: string): void {
    for (const k of keys) {
      const type = nodeType(k);
      let node: unknown = k;
      if (type === "SortBy") node = ((k as Obj).SortBy as Obj).node;
      if (type === undefined) {
        // SELECT DISTINCT: an empty list item means every output column.
        for (const c of output ?? []) {
          const p = sortProblem(c.size, what);
          if (p) {
            this.deny(p);
            return;
          }
        }
        continue;
      }
      let size: Size = this.sizeOf(node, ctx);
      const position = numberConst(node);
      if (position !== undefined && output && Number.isInteger(position)) size = output[position - 1]?.size ?? size;
      const keyBody = nodeBody(node);
      if (output && nodeType(node) === "ColumnRef") {
        const names = stringParts(keyBody?.fields);
        const named = names?.length === 1 ? columnNamed(output, names[0]) : undefined;
        if (named) size = pick([size, named.size]);
      }
      const p = sortProblem(size, what);
      if (p) {
        this.deny(p, keyBody?.location);
        return;
      }
    }
  }

  /** A SelectStmt wrapper (set-operation branch, sub-select, CTE body); other statements are walked. */
  private selectNode(v: unknown, ctx: Ctx): Column[] | null {
    const select = bodyOf(v, "SelectStmt");
    if (select) return this.select(select, ctx);
    this.expr(v, ctx);
    return null;
  }

  /** The output columns of a target list, visiting every expression. */
  private targetList(list: unknown[], ctx: Ctx): Column[] | null {
    let out: Column[] | null = [];
    for (const t of list) {
      const rt = bodyOf(t, "ResTarget");
      if (!rt) {
        this.expr(t, ctx);
        out = null;
        continue;
      }
      this.expr(rt, ctx);
      if (out === null) continue;
      if (typeof rt.name === "string") {
        out.push(this.outputColumn(rt.name, rt.val, ctx));
        continue;
      }
      const star = this.starColumns(rt.val, ctx);
      if (star !== undefined) {
        if (star === null) out = null;
        else out.push(...star);
        continue;
      }
      const name = figureName(rt.val);
      if (name !== UNKNOWN_NAME) out.push(this.outputColumn(name, rt.val, ctx));
    }
    return out;
  }

  private outputColumn(name: string, val: unknown, ctx: Ctx): Column {
    const ref = bodyOf(val, "ColumnRef");
    if (ref) return this.refColumn(name, ref, ctx);
    const column: Column = { name, type: this.typeOf(val, ctx), size: this.sizeOf(val, ctx) };
    if (this.timeFloorColumn(val, ctx)) column.timeFloor = true;
    return column;
  }

  /**
   * An output column that is a column reference: its type (typeOf), size (columnSize) and time floor
   * (fromBound) all follow from the one column or whole row it names, so it is resolved once.
   */
  private refColumn(name: string, body: Obj, ctx: Ctx): Column {
    const names = stringParts(body.fields);
    if (!names || names.length === 0) return { name, type: null, size: ONE_ROW };
    let found: Column | undefined;
    let type: string | null;
    if (names.length === 1) {
      const r = this.resolveName(names[0], ctx.level);
      if (r === null || r === "unknown") return { name, type: null, size: ONE_ROW };
      // A whole-row reference holds every column of its item.
      if (!r.column) return { name, type: "record", size: r.item.columns ? sum(r.item.columns.map((c) => c.size)) : ONE_ROW };
      found = r.column;
      type = found.type;
    } else {
      found = columnNamed(this.qualifiedItem(names.slice(0, -1), ctx.level)?.columns, names[names.length - 1]);
      if (!found) return { name, type: null, size: ONE_ROW };
      type = found.type ?? null;
    }
    const column: Column = { name, type, size: found.size };
    if (found.timeFloor === true) column.timeFloor = true;
    return column;
  }

  /** `*` or `q.*` in a target list: the columns it expands to (null: not known); undefined if not a star. */
  private starColumns(val: unknown, ctx: Ctx): readonly Column[] | null | undefined {
    const ref = bodyOf(val, "ColumnRef");
    if (!ref || !Array.isArray(ref.fields)) return undefined;
    const fields = ref.fields as unknown[];
    if (nodeType(fields[fields.length - 1]) !== "A_Star") return undefined;
    const level = ctx.level;
    if (!level) return null;
    if (fields.length === 1) {
      const cols: Column[] = [];
      for (const item of level.items) {
        if (!item.columns) return null;
        cols.push(...item.columns);
      }
      return cols;
    }
    const q = fields.length === 2 ? sval(fields[0]) : undefined;
    const item = q === undefined ? undefined : this.findItem(q, level);
    return item?.columns ?? null;
  }

  /** A WITH list: each CTE body is a query of its own; returns the scope with the CTE names. */
  private withClause(w: Obj, ctx: Ctx): CteScope {
    const scope: CteScope = { names: new Map(), parent: ctx.ctes };
    if (w.recursive === true) {
      // A recursive term can grow a value every round (s || s doubles it) with no bound the guard can prove.
      this.keyword("WITH RECURSIVE");
    }
    const ctes = Array.isArray(w.ctes) ? w.ctes : [];
    const recursive = w.recursive === true;
    if (recursive) {
      for (const cte of ctes) {
        const name = nodeBody(cte)?.ctename;
        if (typeof name === "string") scope.names.set(name, null);
      }
    }
    for (const cte of ctes) {
      const body = bodyOf(cte, "CommonTableExpr");
      if (!body) {
        this.expr(cte, ctx);
        continue;
      }
      // Without RECURSIVE a CTE sees only the CTEs before it, never itself.
      const bodyCtx: Ctx = { level: ctx.level, ctes: recursive ? scope : { names: new Map(scope.names), parent: ctx.ctes } };
      const columns = this.selectNode(body.ctequery, bodyCtx);
      this.rest(body, bodyCtx, SKIP_CTEQUERY_ALIASCOLNAMES);
      const colnames = body.aliascolnames !== undefined ? stringParts(body.aliascolnames) : null;
      if (typeof body.ctename === "string") scope.names.set(body.ctename, renamed(columns, colnames));
    }
    this.rest(w, ctx, SKIP_CTES);
    return scope;
  }

  private cteColumns(name: string, ctes: CteScope | null): readonly Column[] | null | undefined {
    for (let s = ctes; s; s = s.parent) if (s.names.has(name)) return s.names.get(name) ?? null;
    return undefined;
  }

  // ---- FROM --------------------------------------------------------------------------------------------

  /** Adds the items of one FROM entry to `level`; JOIN ... ON conditions are recorded with what they scope. */
  private fromItem(v: unknown, ctx: Ctx, level: Level, joins: { quals: unknown; restricts: Item[] }[]): Item[] {
    const type = nodeType(v);
    if (type === undefined) return [];
    const body = (v as Obj)[type] as Obj;
    switch (type) {
      case "RangeVar":
        return added(level, this.relation(body, ctx));
      case "RangeTableSample": {
        this.tableSampleMethod(body);
        const items = this.fromItem(body.relation, ctx, level, joins);
        this.rest(body, ctx, SKIP_RELATION_METHOD);
        return items;
      }
      case "RangeSubselect": {
        const { name, colnames } = aliasOf(body);
        // A LATERAL sub-select sees the FROM items before it; a plain one sees only the enclosing levels.
        const subCtx: Ctx = body.lateral === true ? ctx : { level: level.parent, ctes: ctx.ctes };
        const columns = this.selectNode(body.subquery, subCtx);
        this.rest(body, ctx, SKIP_SUBQUERY_ALIAS);
        return added(level, this.derivedItem(name, renamed(columns, colnames), name ?? "a sub-select"));
      }
      case "RangeFunction":
        return added(level, this.rangeFunction(body, ctx));
      case "JoinExpr": {
        const left = this.fromItem(body.larg, ctx, level, joins);
        const right = this.fromItem(body.rarg, ctx, level, joins);
        const jt = String(body.jointype);
        const restricts = jt === "JOIN_INNER" ? [...left, ...right] : jt === "JOIN_LEFT" ? right : jt === "JOIN_RIGHT" ? left : [];
        if (body.quals !== undefined) joins.push({ quals: body.quals, restricts });
        this.rest(body, ctx, SKIP_LARG_RARG_ALIAS);
        const { name } = aliasOf(body);
        const all = [...left, ...right];
        if (name !== null) {
          const columns = all.every((i) => i.columns) ? all.flatMap((i) => i.columns ?? []) : null;
          added(level, this.derivedItem(name, columns, name));
        }
        return all;
      }
      default:
        // XMLTABLE, JSON_TABLE and anything newer: checked by the generic walk, columns unknown.
        this.node(type, body, ctx);
        return added(level, this.derivedItem(aliasOf(body).name, null, "a table function"));
    }
  }

  private derivedItem(name: string | null, columns: readonly Column[] | null, shown: string): Item {
    return { name, schema: null, columns, timeColumn: null, bounded: true, shown };
  }

  /** A function in FROM (implicitly LATERAL): checked like any call; its columns from its alias. */
  private rangeFunction(body: Obj, ctx: Ctx): Item {
    const { name, colnames } = aliasOf(body);
    const functions = Array.isArray(body.functions) ? body.functions : [];
    let firstName: string | null = null;
    let defs: string[] | null = null;
    const sizes: Size[] = [];
    let timeFloor = false;
    for (const f of functions) {
      const pair = (f as { List?: { items?: unknown[] } } | null)?.List?.items;
      if (!Array.isArray(pair)) {
        this.expr(f, ctx);
        continue;
      }
      const call = bodyOf(pair[0], "FuncCall");
      if (call) {
        const parts = stringParts(call.funcname);
        if (firstName === null && parts) firstName = parts[parts.length - 1];
      }
      this.expr(pair, ctx);
      if (call) {
        const parts = stringParts(call.funcname);
        const fname = parts?.[parts.length - 1];
        const size = this.sizeOf(pair[0], ctx);
        // unnest gives one element per row, whatever the array's size.
        sizes.push(fname === "unnest" && size.cls === UNBOUNDED ? ONE_ROW : size);
        const args = Array.isArray(call.args) ? call.args : [];
        if (functions.length === 1 && fname === "generate_series" && this.fromBound(args[0], ctx.level)) timeFloor = true;
      } else sizes.push(this.sizeOf(pair[0], ctx));
      // A column definition list (`AS t(x int)`) names the columns; its types are checked by the walk.
      const cols = Array.isArray(pair[1]) ? pair[1] : null;
      if (cols) defs = cols.map((c) => nodeBody(c)?.colname).filter((c): c is string => typeof c === "string");
    }
    this.rest(body, ctx, SKIP_FUNCTIONS_ALIAS);
    const itemName = name ?? firstName;
    let columns: Column[] | null = null;
    const size = pick(sizes);
    if (colnames) columns = functionColumns(colnames, size, timeFloor);
    else if (defs) columns = functionColumns(defs, size, timeFloor);
    else if (functions.length === 1 && body.is_rowsfrom !== true && itemName !== null) {
      // A function returning a scalar gives one column named after the alias (or the function).
      columns = functionColumns([itemName], size, timeFloor);
    }
    if (columns && body.ordinality === true) columns = [...columns, { name: "ordinality", type: null, size: FIXED }];
    return this.derivedItem(itemName, columns, itemName ?? "a function");
  }

  /** A relation: a CTE in scope or a table of the source's catalog; anything else is a catalog finding. */
  private relation(r: Obj, ctx: Ctx): Item {
    const name = typeof r.relname === "string" ? r.relname : "";
    const schema = typeof r.schemaname === "string" ? r.schemaname : undefined;
    const db = typeof r.catalogname === "string" ? r.catalogname : undefined;
    const { name: alias, colnames } = aliasOf(r);
    // Raw names: messages pass them through safeName, only when a finding is made.
    const shownName =
      db !== undefined ? [db, schema, name].filter((p) => p !== undefined).join(".") : schema !== undefined ? `${schema}.${name}` : name;
    const shown = alias !== null && alias !== name ? `${shownName} AS ${alias}` : shownName;
    if (schema === undefined && db === undefined) {
      const cte = this.cteColumns(name, ctx.ctes);
      if (cte !== undefined) return this.derivedItem(alias ?? name, renamed(cte, colnames), shown);
    }
    const unknown = this.derivedItem(alias ?? name, null, shown);
    if (this.catalog === null) return unknown;
    let table: CatalogTable | undefined;
    if (db === undefined) {
      if (schema !== undefined) {
        if (!isSystemSchema(schema)) table = this.catalog.qualified.get(`${schema}\u0000${name}`);
      } else if (!name.startsWith("pg_")) {
        // pg_catalog is searched before public, so an unqualified pg_* name is a system relation.
        table = this.catalog.unqualified.get(name);
      }
    }
    if (!table) {
      const other = db === undefined && schema === undefined ? this.catalog.elsewhere.get(name) : undefined;
      this.catalogProblem(
        other === undefined
          ? `table ${safeName(shownName)} is not in the source's catalog`
          : `table ${safeName(shownName)} is not in the source's catalog; write ${safeName(`${other}.${name}`)}`,
      );
      return unknown;
    }
    let base = this.catalog.columns.get(table);
    if (base === undefined) {
      base = Object.freeze(
        Array.isArray(table.columns) ? table.columns.map((c) => Object.freeze({ name: c.name, type: c.type, size: ONE_ROW })) : [],
      );
      this.catalog.columns.set(table, base);
    }
    const columns = renamed(base, colnames) ?? base;
    let timeColumn: string | null = null;
    if (table.timeColumn) {
      const i = base.findIndex((c) => c.name === table.timeColumn);
      timeColumn = i >= 0 ? columns[i].name : table.timeColumn;
    }
    return {
      name: alias ?? name,
      schema: alias === null ? (schema ?? "public") : null,
      columns,
      timeColumn,
      bounded: timeColumn === null,
      shown,
      location: typeof r.location === "number" ? r.location : undefined,
    };
  }

  private tableSampleMethod(body: Obj): void {
    const method = stringParts(body.method);
    const name = method ? method.join(".") : "tablesample";
    if (method?.length !== 1 || !this.allowed.has(method[0])) this.denyName(`TABLESAMPLE ${name}`);
  }

  // ---- names ---------------------------------------------------------------------------------------------

  /** The innermost visible FROM item named `name`, searching enclosing levels outwards. */
  private findItem(name: string, level: Level | null): Item | undefined {
    for (let l = level; l; l = l.parent) {
      let found: Item | undefined;
      for (const item of l.items) {
        if (item.name !== name) continue;
        // The same name twice at one level is an error in PostgreSQL; never guess which one is meant.
        if (found) return this.derivedItem(name, null, name);
        found = item;
      }
      if (found) return found;
    }
    return undefined;
  }

  /**
   * What an unqualified name means at `level`: a column (with its item), a whole-row reference, or
   * "unknown" when some FROM item's columns cannot be known; null when it names nothing.
   */
  private resolveName(name: string, level: Level | null): { item: Item; column: Column | null } | "unknown" | null {
    // A system column name is never taken on trust: an item of unknown columns cannot be its owner, and a
    // catalog table's system columns are not in its column list.
    const system = SYSTEM_COLUMNS.has(name);
    for (let l = level; l; l = l.parent) {
      let uncertain = false;
      for (const item of l.items) {
        if (!item.columns) {
          if (!system) uncertain = true;
          continue;
        }
        // The first item with the column owns it, whatever follows.
        const column = columnNamed(item.columns, name);
        if (column) return { item, column };
      }
      if (columnNamed(l.outputs, name)) return "unknown";
      if (uncertain) return "unknown";
      for (const item of l.items) if (item.name === name) return { item, column: null };
    }
    return null;
  }

  /** A column reference: `c`, `q.c`, `schema.table.c`, `*`, `q.*`. */
  private columnRef(body: Obj, ctx: Ctx): void {
    const fields = Array.isArray(body.fields) ? body.fields : [];
    const star = nodeType(fields[fields.length - 1]) === "A_Star";
    const names = stringParts(star ? fields.slice(0, -1) : fields);
    if (!names) {
      this.catalogProblem("a column reference could not be read");
      return;
    }
    if (names.length === 0) return; // SELECT *
    if (this.catalog === null) return;
    if (names.length === 1 && !star) {
      const [c] = names;
      const r = this.resolveName(c, ctx.level);
      if (r === null) {
        this.catalogProblem(
          SYSTEM_COLUMNS.has(c) ? `system column ${c} is not allowed` : `column ${safeName(c)} is not in the source's catalog or the query`,
        );
      }
      return;
    }
    const qualifier = names.slice(0, star ? names.length : -1);
    const field = star ? null : names[names.length - 1];
    const item = this.qualifiedItem(qualifier, ctx.level);
    if (!item) {
      this.catalogProblem(`${safeName(qualifier.join("."))} is not a table of the query`);
      return;
    }
    if (field === null) return;
    if (!item.columns) {
      // Without known columns, q.f may be the call f(q).
      const shownQ = safeName(qualifier.join("."));
      const f = safeName(field);
      this.deny(`${shownQ}.${f}: the columns of ${shownQ} are not known, so it may call a function ${f}(${shownQ})`);
      return;
    }
    this.fieldOf(item, field, qualifier);
  }

  /** The FROM item a qualifier names: `q` (alias or table name) or `schema.table` of an unaliased table. */
  private qualifiedItem(qualifier: string[], level: Level | null): Item | undefined {
    if (qualifier.length === 1) return this.findItem(qualifier[0], level);
    if (qualifier.length !== 2) return undefined;
    const [schema, table] = qualifier;
    for (let l = level; l; l = l.parent) {
      for (const item of l.items) if (item.schema === schema && item.name === table) return item;
    }
    return undefined;
  }

  /**
   * `q.f` / `(q).f` on a FROM item with known columns: `f` must be one of them, because otherwise PostgreSQL
   * reads it as the call `f(q)`, of any function taking the row, including one created in the source.
   */
  private fieldOf(item: Item, field: string, qualifier: readonly string[]): void {
    if (columnNamed(item.columns, field)) return;
    // Messages only: worked out once a finding is made.
    const shownQ = safeName(qualifier.join("."));
    const f = safeName(field);
    if (SYSTEM_COLUMNS.has(field)) {
      this.catalogProblem(`system column ${shownQ}.${f} is not allowed`);
      return;
    }
    this.deny(`${shownQ}.${f}: ${f} is not a column of ${safeName(item.shown)}, so it would call a function ${f}(${shownQ})`);
  }

  /**
   * `(expr).f`: PostgreSQL runs it as `f(expr)` unless `expr` is a row with a column `f`. Allowed only on a
   * whole-row reference of a FROM item whose columns are known, and only for one of those columns.
   */
  private indirection(body: Obj, ctx: Ctx): void {
    this.expr(body.arg, ctx);
    const list = Array.isArray(body.indirection) ? body.indirection : [];
    for (let i = 0; i < list.length; i++) {
      const field = sval(list[i]);
      const kind = nodeType(list[i]);
      if (kind === "A_Indices") {
        this.expr(list[i], ctx);
        continue;
      }
      if (kind === "A_Star" || field === undefined) continue;
      const row = i === 0 ? this.wholeRow(body.arg, ctx) : undefined;
      if (!row?.item.columns) {
        this.deny(`(...).${safeName(field)} is a field selection PostgreSQL would run as the call ${safeName(field)}(...)`);
        continue;
      }
      this.fieldOf(row.item, field, row.qualifier);
    }
  }

  /** A whole-row reference (`q` naming a FROM item, or `q.*`), or undefined. */
  private wholeRow(arg: unknown, ctx: Ctx): { item: Item; qualifier: readonly string[] } | undefined {
    const ref = bodyOf(arg, "ColumnRef");
    if (!ref || !Array.isArray(ref.fields)) return undefined;
    const fields = ref.fields as unknown[];
    const star = nodeType(fields[fields.length - 1]) === "A_Star";
    const names = stringParts(star ? fields.slice(0, -1) : fields);
    if (!names || names.length === 0) return undefined;
    if (star) {
      const item = this.qualifiedItem(names, ctx.level);
      return item ? { item, qualifier: names } : undefined;
    }
    if (names.length !== 1) return undefined;
    const r = this.resolveName(names[0], ctx.level);
    if (r === null || r === "unknown" || r.column !== null) return undefined;
    return { item: r.item, qualifier: names };
  }

  /** The catalog type of a plain column reference, "record" for a whole row, else null. */
  private typeOf(v: unknown, ctx: Ctx): string | null {
    const type = nodeType(v);
    if (type === undefined) return null;
    const body = (v as Obj)[type] as Obj;
    if (type === "TypeCast") return castType(body) as string | null;
    if (type !== "ColumnRef" || !Array.isArray(body.fields)) return null;
    const names = stringParts(body.fields);
    if (!names || names.length === 0) return null;
    if (names.length === 1) {
      const r = this.resolveName(names[0], ctx.level);
      if (r === null || r === "unknown") return null;
      return r.column ? r.column.type : "record";
    }
    const item = this.qualifiedItem(names.slice(0, -1), ctx.level);
    return columnNamed(item?.columns, names[names.length - 1])?.type ?? null;
  }

  // ---- functions, operators, types ------------------------------------------------------------------------

  private syntaxFunction(name: string): void {
    if (!this.allowed.has(name)) this.denyName(name);
  }

  private callAllowed(parts: string[]): boolean {
    if (parts.length === 1) return this.allowed.has(parts[0]);
    if (parts.length === 2 && parts[0] === "pg_catalog") {
      if (this.allowed.has(parts[1]) || SYNTAX_ONLY_FUNCTIONS.has(parts[1])) return true;
    }
    return parts.length > 1 && this.allowedQualified.has(parts.join("."));
  }

  private funcCall(body: Obj, ctx: Ctx): void {
    const parts = stringParts(body.funcname);
    if (!parts || parts.length === 0) {
      this.denyName("?");
      this.rest(body, ctx, SKIP_FUNCNAME);
      return;
    }
    const name = parts[parts.length - 1];
    if (!this.callAllowed(parts)) this.deny(`function ${safeName(parts.join("."))} is not allowed`, body.location);
    const args = Array.isArray(body.args) ? body.args : [];
    // count() only counts; every other function reads the values it is given.
    for (const a of name === "count" ? [] : args) {
      const t = this.typeOf(a, ctx);
      if (t !== null && SERVER_STATE_COLUMN_TYPES.has(t.endsWith("[]") ? t.slice(0, -2) : t)) {
        this.deny(`${safeName(name)} over type ${safeName(t)} is not allowed: values of that type read server state`, body.location);
      }
    }
    // The arguments first: their sizes (sub-selects, nested calls) are known once they have been walked.
    this.rest(body, ctx, SKIP_FUNCNAME);
    this.sizes.set(body, this.callSizeOf(name, body, ctx, true));
  }

  /**
   * The size of a call's value from its declaration and its arguments' sizes (sizes.ts); with `report`, the
   * first problem becomes a function finding naming the function.
   */
  private callSizeOf(name: string, body: Obj, ctx: Ctx, report: boolean): Size {
    const verdict = this.callProblem(name, body, ctx);
    if (verdict.problem !== null && report) this.deny(verdict.problem, body.location);
    if (report && name === "generate_series") this.seriesCall(Array.isArray(body.args) ? body.args : NO_NODES, body.location);
    return verdict.size;
  }

  private callProblem(name: string, body: Obj, ctx: Ctx): CallVerdict {
    const decl = FUNCTION_DECLARATION_MAP.get(name);
    if (!decl) {
      return { size: AGGREGATE, problem: `function ${safeName(name)} has no size declaration, so it is not allowed` };
    }
    // A declared name is short and printable, so safeName would return it as it is.
    const shown = name;
    if (body.func_variadic === true) {
      return { size: AGGREGATE, problem: `VARIADIC arguments to ${shown} are not allowed: the guard must see every argument` };
    }
    const direct: readonly unknown[] = Array.isArray(body.args) ? body.args : NO_NODES;
    const order = Array.isArray(body.agg_order) ? body.agg_order.map(sortKeyNode) : NO_NODES;
    const within = body.agg_within_group === true;
    // An ordered-set aggregate's WITHIN GROUP (ORDER BY x) is its aggregated argument.
    const nodes = within ? [...direct, ...order] : direct;
    if (!coversArity(decl, nodes.length)) {
      return { size: AGGREGATE, problem: `${shown} with ${nodes.length} arguments has no size declaration, so it is not allowed` };
    }
    const args: Arg[] = new Array(nodes.length);
    for (let i = 0; i < nodes.length; i++) args[i] = { node: nodes[i], size: this.sizeOf(nodes[i], ctx) };
    const aggregate = decl.kind === "a" || (decl.kind === "wa" && within);
    if (body.over !== undefined && decl.size === "concatenates") {
      return { size: AGGREGATE, problem: `${shown} as a window function is not allowed: it builds a value per row of its frame` };
    }
    // DISTINCT and ORDER BY inside an aggregate sort their values, and a window sorts its partition: the
    // first unbounded key, in that order, is the problem.
    if (!within && this.unboundedKey(order, false, ctx)) return unsortable(shown);
    if (body.agg_distinct === true && this.unboundedKey(direct, false, ctx)) return unsortable(shown);
    const over = (body.over === undefined ? undefined : (nodeBody(body.over) ?? body.over)) as Obj | undefined;
    if (over && typeof over === "object") {
      if (Array.isArray(over.partitionClause) && this.unboundedKey(over.partitionClause, false, ctx)) return unsortable(shown);
      if (Array.isArray(over.orderClause) && this.unboundedKey(over.orderClause, true, ctx)) return unsortable(shown);
    }
    return callSize(shown, decl, args, aggregate);
  }

  /** Whether any of these sort keys (`sortBy`: SortBy items, read through to their expressions) is unbounded. */
  private unboundedKey(keys: readonly unknown[], sortBy: boolean, ctx: Ctx): boolean {
    for (const k of keys) if (this.sizeOf(sortBy ? sortKeyNode(k) : k, ctx).cls === UNBOUNDED) return true;
    return false;
  }

  /**
   * generate_series: over numbers, literal bounds and step giving at most MAX_SERIES_ROWS rows; over times,
   * ends taken from the dashboard's range and a step of `$__interval` or a literal interval, whose row count
   * the runner checks against the range before the statement runs (series.ts).
   */
  private seriesCall(args: readonly unknown[], location: unknown): void {
    const [a, b, step] = args;
    const start = this.timeExpr(a, "series");
    const end = this.timeExpr(b, "series");
    if (start && end) {
      let stepMs: number | null = null;
      if (!this.param(step, "interval", INTERVAL_CASTS)) {
        const ms = intervalLiteral(step);
        if (ms === undefined) {
          this.deny("generate_series over times needs $__interval or a literal interval as its step", location);
          return;
        }
        stepMs = ms;
      }
      this.findings.series.push({
        ranges: 1 + start.ranges + end.ranges,
        widenMs: start.ms + end.ms,
        intervals: start.intervals + end.intervals,
        stepMs,
      });
      return;
    }
    const lo = numberConst(a);
    const hi = numberConst(b);
    const by = step === undefined ? 1 : numberConst(step);
    const rows = lo !== undefined && hi !== undefined && by !== undefined && by !== 0 ? Math.floor((hi - lo) / by) + 1 : Number.NaN;
    if (!(rows <= MAX_SERIES_ROWS)) {
      this.deny(
        `generate_series needs number literals giving at most ${MAX_SERIES_ROWS} rows, or ends from $__timeFrom() and $__timeTo()`,
        location,
      );
    }
  }

  private operator(parts: string[], location?: unknown): void {
    if (operatorProblem(parts)) this.deny(operatorProblem(parts.map((p) => safeName(p))) ?? "operator ? is not allowed", location);
  }

  private aExpr(body: Obj, ctx: Ctx): void {
    const name = stringParts(body.name);
    if (name) this.operator(name, body.location);
    else this.deny("operator ? is not allowed", body.location);
    this.rest(body, ctx, SKIP_NAME);
    this.sizes.set(body, this.aExprSize(body, ctx, true));
  }

  /** The sizes of an operator expression's operands, left first (a prefix operator has only the right). */
  private operandSizes(body: Obj, ctx: Ctx): Size[] {
    const sizes: Size[] = [];
    if (body.lexpr !== undefined) sizes.push(this.sizeOf(body.lexpr, ctx));
    if (body.rexpr !== undefined) sizes.push(this.sizeOf(body.rexpr, ctx));
    return sizes;
  }

  /** The size of an operator expression, from the operator's declaration; `report` makes its problem a finding. */
  private aExprSize(body: Obj, ctx: Ctx, report: boolean): Size {
    const kind = String(body.kind);
    if (kind === "AEXPR_NULLIF") return pick(this.operandSizes(body, ctx));
    if (kind === "AEXPR_IN" || kind.startsWith("AEXPR_BETWEEN") || kind.startsWith("AEXPR_NOT_BETWEEN")) return FIXED;
    const op = lastName(body.name) ?? undefined;
    const decl = op === undefined ? undefined : OPERATOR_DECLARATION_MAP.get(op);
    if (!decl) return FIXED; // refused by the operator allowlist, or IS DISTINCT FROM (a comparison)
    const args: Arg[] = [];
    if (body.lexpr !== undefined) args.push({ node: body.lexpr, size: this.sizeOf(body.lexpr, ctx) });
    if (body.rexpr !== undefined) args.push({ node: body.rexpr, size: this.sizeOf(body.rexpr, ctx) });
    // A declared operator's name is short and printable (safeName would return it as it is).
    const verdict = callSize(op as string, decl, args, false);
    if (verdict.problem && report) this.deny(verdict.problem, body.location);
    // x op ANY (array) compares elements: a boolean.
    return kind === "AEXPR_OP" ? verdict.size : FIXED;
  }

  private typeName(body: Obj, ctx: Ctx): void {
    const problem = typeProblem(body, this.extraTypes);
    if (problem) {
      if (problem.reason === "catalog") this.catalogProblem(problem.message);
      else this.deny(problem.message, body.location);
    }
    this.rest(body, ctx, SKIP_NAMES);
  }

  /** A cast: a string literal cast to numeric is a number literal and has its digit cap. */
  private typeCast(body: Obj, ctx: Ctx): void {
    const type = castType(body);
    const text = type === "numeric" || type === "_numeric" ? stringConst(body.arg) : undefined;
    if (text !== undefined) {
      // An array literal ('{1,2}'::numeric[]) holds one number per element.
      for (const part of text.replace(/^\s*\{|\}\s*$/g, "").split(",")) {
        const problem = numericLiteralProblem(part);
        if (problem) this.deny(problem, body.location);
      }
    }
    this.rest(body, ctx, NO_SKIP);
  }

  // ---- sizes ------------------------------------------------------------------------------------------------

  /** The size class of an expression (sizes.ts), through columns of CTEs, sub-selects and FROM functions. */
  private sizeOf(v: unknown, ctx: Ctx): Size {
    const type = nodeType(v);
    if (type === undefined) return Array.isArray(v) ? sum(v.map((x) => this.sizeOf(x, ctx))) : bounded(0);
    const body = (v as Obj)[type] as Obj;
    // Only calls and operators are remembered: the walk sizes each of them once, children first, so a
    // parent's question finds its arguments here and no subtree is sized twice. Every other node is sized by
    // its single parent (or once by a target, key or FROM function), and remembering it would cost more (an
    // identity hash on each fresh parse-tree object) than working it out.
    if (type !== "FuncCall" && type !== "A_Expr") return this.computeSize(type, body, ctx);
    const known = this.sizes.get(body);
    if (known) return known;
    const size = this.computeSize(type, body, ctx);
    this.sizes.set(body, size);
    return size;
  }

  private computeSize(type: string, body: Obj, ctx: Ctx): Size {
    switch (type) {
      case "A_Const":
        return body.isnull === true ? bounded(0) : literalSize(body);
      case "ParamRef":
        return bounded(32);
      case "ColumnRef":
        return this.columnSize(body, ctx);
      case "TypeCast":
      case "CollateClause":
      case "NamedArgExpr":
      case "A_Indirection":
        // A cast copies its value; a subscript or field is part of it.
        return this.sizeOf(body.arg, ctx);
      case "FuncCall": {
        const parts = stringParts(body.funcname);
        return parts ? this.callSizeOf(parts[parts.length - 1], body, ctx, false) : AGGREGATE;
      }
      case "A_Expr":
        return this.aExprSize(body, ctx, false);
      case "BoolExpr":
      case "NullTest":
      case "BooleanTest":
      case "SQLValueFunction":
      case "GroupingFunc":
        return FIXED;
      case "CaseExpr": {
        const results = (Array.isArray(body.args) ? body.args : []).map((w) => nodeBody(w)?.result);
        return pick([...results, body.defresult].map((r) => this.sizeOf(r, ctx)));
      }
      case "CoalesceExpr":
      case "MinMaxExpr":
        return pick((Array.isArray(body.args) ? body.args : []).map((a) => this.sizeOf(a, ctx)));
      case "A_ArrayExpr":
        return sum((Array.isArray(body.elements) ? body.elements : []).map((a) => this.sizeOf(a, ctx)));
      case "RowExpr":
        return sum((Array.isArray(body.args) ? body.args : []).map((a) => this.sizeOf(a, ctx)));
      case "SubLink": {
        const kind = String(body.subLinkType);
        if (kind === "ARRAY_SUBLINK") return AGGREGATE;
        if (kind !== "EXPR_SUBLINK") return FIXED;
        const sub = nodeBody(body.subselect);
        const columns = sub ? this.outputs.get(sub) : undefined;
        return columns?.[0]?.size ?? ONE_ROW;
      }
      default:
        return ONE_ROW;
    }
  }

  /** A column's size: a catalog column is row-sized, a CTE's or sub-select's column has its expression's size. */
  private columnSize(body: Obj, ctx: Ctx): Size {
    const names = stringParts(body.fields);
    if (!names || names.length === 0) return ONE_ROW;
    let column: Column | undefined;
    let item: Item | undefined;
    if (names.length === 1) {
      const r = this.resolveName(names[0], ctx.level);
      if (r === null || r === "unknown") return ONE_ROW;
      if (r.column) column = r.column;
      else item = r.item;
    } else {
      const q = this.qualifiedItem(names.slice(0, -1), ctx.level);
      column = columnNamed(q?.columns, names[names.length - 1]);
    }
    if (column) return column.size;
    // A whole row holds every column of its item.
    return item?.columns ? sum(item.columns.map((c) => c.size)) : ONE_ROW;
  }

  /** An output expression whose values are at or after a lower bound from the range start. */
  private timeFloorColumn(val: unknown, ctx: Ctx): boolean {
    const type = nodeType(val);
    if (type === undefined) return false;
    // Cheap tests first: this runs for every output column.
    if (type === "FuncCall") {
      const f = ((val as Obj).FuncCall as Obj).funcname as unknown[];
      const last = Array.isArray(f) ? sval(f[f.length - 1]) : undefined;
      if (last !== "date_trunc" && last !== "date_bin") return false;
    } else if (type !== "ColumnRef" && type !== "TypeCast" && type !== "ParamRef" && type !== "A_Expr") return false;
    return this.fromBound(val, ctx.level);
  }

  // ---- the time bound ---------------------------------------------------------------------------------------

  /** Is `v` the `n`-th macro parameter of kind `kind` (through casts to a time type)? */
  private param(v: unknown, kind: MacroParam, casts: ReadonlySet<string>): boolean {
    let x = v;
    let type = nodeType(x);
    while (type === "TypeCast") {
      const cast = (x as Obj).TypeCast as Obj;
      const t = castType(cast);
      if (t === null || !casts.has(t as string)) return false;
      x = cast.arg;
      type = nodeType(x);
    }
    if (type !== "ParamRef") return false;
    const n = ((x as Obj).ParamRef as Obj).number;
    const i = typeof n === "number" ? n : 0;
    return this.params[i - 1] === kind;
  }

  private isOp(v: unknown, op: string): Obj | undefined {
    const e = bodyOf(v, "A_Expr");
    if (!e || e.kind !== "AEXPR_OP") return undefined;
    return operatorName(e.name) === op ? e : undefined;
  }

  /**
   * A lower bound taken from the range start: $__timeFrom() (cast to a timestamp type), optionally truncated
   * (date_trunc up to 'day', date_bin by $__interval or a literal up to a day), with at most one offset: one
   * $__interval, one range ($__timeTo() - $__timeFrom()) or a literal interval up to a day. Or a column whose
   * values are such bounds (a generate_series over the range, read through LATERAL).
   */
  private fromBound(v: unknown, level: Level | null): boolean {
    if (this.timeExpr(v, "bound") !== null) return true;
    let x = v;
    let type = nodeType(x);
    while (type === "TypeCast") {
      const cast = (x as Obj).TypeCast as Obj;
      const t = castType(cast);
      if (t === null || !TIME_BOUND_CASTS.has(t as string)) return false;
      x = cast.arg;
      type = nodeType(x);
    }
    if (type !== "ColumnRef") return false;
    const names = stringParts(((x as Obj).ColumnRef as Obj).fields);
    if (!names || names.length === 0) return false;
    if (names.length === 1) {
      const r = this.resolveName(names[0], level);
      return r !== null && r !== "unknown" && r.column?.timeFloor === true;
    }
    const item = this.qualifiedItem(names.slice(0, -1), level);
    return columnNamed(item?.columns, names[names.length - 1])?.timeFloor === true;
  }

  /**
   * A time derived from the range with one truncation and at most one offset, and how far before the range
   * (or after it) it can lie; null for anything else. A bound (`bound`) starts from $__timeFrom() and may
   * widen by at most a day or one range; a series end (`series`) may start from either end and widen by up to
   * a year, its rows checked against the range when it runs.
   */
  private timeExpr(v: unknown, mode: "bound" | "series"): Widening | null {
    const type = nodeType(v);
    if (type === undefined) return null;
    const body = (v as Obj)[type] as Obj;
    if (type === "TypeCast") {
      const t = castType(body);
      return t !== null && TIME_BOUND_CASTS.has(t as string) ? this.timeExpr(body.arg, mode) : null;
    }
    const base = this.truncated(v, mode);
    if (base) return base;
    if (type !== "A_Expr" || body.kind !== "AEXPR_OP" || body.lexpr === undefined) return null;
    const op = operatorName(body.name);
    if (op !== "-" && op !== "+") return null;
    const left = this.truncated(body.lexpr, mode);
    const offset = left ? this.offset(body.rexpr, mode) : null;
    if (left && offset)
      return { ms: left.ms + offset.ms, intervals: left.intervals + offset.intervals, ranges: left.ranges + offset.ranges };
    return null;
  }

  /** An end of the range, cast, or truncated once (date_trunc, date_bin). */
  private truncated(v: unknown, mode: "bound" | "series"): Widening | null {
    const casts = TIME_BOUND_CASTS;
    if (this.rangeEnd(v, mode)) return { ms: 0, intervals: 0, ranges: 0 };
    let x = v;
    let type = nodeType(x);
    while (type === "TypeCast") {
      const cast = (x as Obj).TypeCast as Obj;
      const t = castType(cast);
      if (t === null || !casts.has(t as string)) return null;
      x = cast.arg;
      type = nodeType(x);
    }
    if (type !== "FuncCall") return null;
    const call = (x as Obj).FuncCall as Obj;
    const fn = lastName(call.funcname);
    const args: readonly unknown[] = Array.isArray(call.args) ? call.args : NO_NODES;
    const end = this.rangeEnd(args[1], mode);
    const cap = mode === "bound" ? MAX_BOUND_WIDENING_MS : MAX_SERIES_WIDENING_MS;
    if (fn === "date_trunc" && (args.length === 2 || args.length === 3) && end) {
      const unit = stringConst(args[0])?.toLowerCase();
      const ms = unit === undefined ? undefined : TRUNCATION_MS[unit];
      return ms !== undefined && ms <= cap ? { ms, intervals: 0, ranges: 0 } : null;
    }
    if (fn === "date_bin" && args.length === 3 && end) {
      if (this.param(args[0], "interval", INTERVAL_CASTS)) return { ms: 0, intervals: 1, ranges: 0 };
      const ms = intervalLiteral(args[0]);
      return ms !== undefined && ms <= cap ? { ms, intervals: 0, ranges: 0 } : null;
    }
    return null;
  }

  /** $__timeFrom() (for a series also $__timeTo()), cast to a timestamp type. */
  private rangeEnd(x: unknown, mode: "bound" | "series"): boolean {
    return this.param(x, "from", TIME_BOUND_CASTS) || (mode === "series" && this.param(x, "to", TIME_BOUND_CASTS));
  }

  /** One offset: $__interval, one range ($__timeTo() - $__timeFrom()), or a literal interval under the cap. */
  private offset(v: unknown, mode: "bound" | "series"): Widening | null {
    if (this.param(v, "interval", INTERVAL_CASTS)) return { ms: 0, intervals: 1, ranges: 0 };
    const span = this.isOp(v, "-");
    if (span && this.param(span.lexpr, "to", TIME_BOUND_CASTS) && this.param(span.rexpr, "from", TIME_BOUND_CASTS)) {
      return { ms: 0, intervals: 0, ranges: 1 };
    }
    const ms = intervalLiteral(v);
    const cap = mode === "bound" ? MAX_BOUND_WIDENING_MS : MAX_SERIES_WIDENING_MS;
    return ms !== undefined && ms <= cap ? { ms, intervals: 0, ranges: 0 } : null;
  }

  /** Does `c` name `item`'s time column at `level` (qualified by its name, or unqualified and unique)? */
  private isTimeColumn(c: unknown, item: Item, level: Level): boolean {
    const ref = bodyOf(c, "ColumnRef");
    if (!ref || item.timeColumn === null) return false;
    const names = stringParts(ref.fields);
    if (!names) return false;
    const col = item.timeColumn;
    if (names.length === 1) {
      if (names[0] !== col) return false;
      // The only item at this level that has (or may have) a column of that name.
      for (const i of level.items) if (i !== item && (i.columns === null || columnNamed(i.columns, col))) return false;
      return item.columns === null || columnNamed(item.columns, col) !== undefined;
    }
    if (names[names.length - 1] !== col) return false;
    return this.qualifiedItem(names.slice(0, -1), level) === item;
  }

  /** Does one conjunct bound `item`'s time column from below by the range start? */
  private bounds(conjunct: unknown, item: Item, level: Level): boolean {
    const e = bodyOf(conjunct, "A_Expr");
    if (!e) return false;
    if (e.kind === "AEXPR_BETWEEN") {
      const range = (e.rexpr as { List?: { items?: unknown[] } } | undefined)?.List?.items;
      return Array.isArray(range) && this.isTimeColumn(e.lexpr, item, level) && this.fromBound(range[0], level);
    }
    // col >= bound, col > bound, bound <= col, bound < col: one operator name, read once.
    const op = e.kind === "AEXPR_OP" ? operatorName(e.name) : undefined;
    const columnLeft = op === ">=" || op === ">";
    if (!columnLeft && op !== "<=" && op !== "<") return false;
    const [col, bound] = columnLeft ? [e.lexpr, e.rexpr] : [e.rexpr, e.lexpr];
    return this.isTimeColumn(col, item, level) && this.fromBound(bound, level);
  }

  /** Does one of these conjuncts bound `item`'s time column? */
  private boundedBy(terms: readonly unknown[], item: Item, level: Level): boolean {
    for (const c of terms) if (this.bounds(c, item, level)) return true;
    return false;
  }

  /**
   * Every catalog table with a time column read at this level must be bounded by a conjunct AND-ed at the top
   * of the WHERE, or of a JOIN ... ON that restricts it (both sides of an inner join, the inner side of an
   * outer join). Never under OR, NOT, CASE or any function: those do not restrict the scan.
   */
  private timeBounds(level: Level, where: unknown, joins: { quals: unknown; restricts: Item[] }[]): void {
    let whereConjuncts: unknown[] | null = null;
    for (const item of level.items) {
      if (item.bounded) continue;
      whereConjuncts ??= conjuncts(where);
      if (this.boundedBy(whereConjuncts, item, level)) {
        item.bounded = true;
        continue;
      }
      for (const j of joins) {
        if (j.restricts.includes(item) && this.boundedBy(conjuncts(j.quals), item, level)) {
          item.bounded = true;
          break;
        }
      }
      if (!item.bounded && this.findings.time === null) {
        const ref = safeName(item.name ?? "");
        const col = safeName(item.timeColumn ?? "");
        if (typeof item.location === "number") this.findings.timeLocation = item.location;
        this.findings.time = `table ${safeName(item.shown)} is not bounded by time: AND $__timeFilter(${ref}.${col}) into its WHERE or JOIN ON`;
      }
    }
  }
}

const NO_NODES: readonly unknown[] = Object.freeze([]);

// Fields a structured handler walks itself, skipped by the generic walk of the rest of the node.
const NO_SKIP: readonly string[] = [];
const SKIP_OPERNAME: readonly string[] = ["operName"];
const SKIP_USEOP: readonly string[] = ["useOp"];
const SKIP_METHOD: readonly string[] = ["method"];
const SKIP_WITHCLAUSE: readonly string[] = ["withClause"];
const SKIP_WITHCLAUSE_LARG_RARG: readonly string[] = ["withClause", "larg", "rarg"];
const SKIP_CTEQUERY_ALIASCOLNAMES: readonly string[] = ["ctequery", "aliascolnames"];
const SKIP_CTES: readonly string[] = ["ctes"];
const SKIP_RELATION_METHOD: readonly string[] = ["relation", "method"];
const SKIP_SUBQUERY_ALIAS: readonly string[] = ["subquery", "alias"];
const SKIP_LARG_RARG_ALIAS: readonly string[] = ["larg", "rarg", "alias"];
const SKIP_FUNCTIONS_ALIAS: readonly string[] = ["functions", "alias"];
const SKIP_FUNCNAME: readonly string[] = ["funcname"];
const SKIP_NAME: readonly string[] = ["name"];
const SKIP_NAMES: readonly string[] = ["names"];

/** The name of an operator written bare or as OPERATOR(pg_catalog.op); undefined for any other schema. */
function operatorName(name: unknown): string | undefined {
  const parts = stringParts(name);
  if (!parts || parts.length > 2 || (parts.length === 2 && parts[0] !== "pg_catalog")) return undefined;
  return parts[parts.length - 1];
}

/** The expression of an ORDER BY item (a SortBy node's), or the item itself. */
function sortKeyNode(o: unknown): unknown {
  const sortBy = bodyOf(o, "SortBy");
  return sortBy ? sortBy.node : o;
}

/** The top-level AND-ed terms of a condition. */
function conjuncts(v: unknown): unknown[] {
  const out: unknown[] = [];
  addConjuncts(v, out);
  return out;
}

function addConjuncts(x: unknown, out: unknown[]): void {
  const b = bodyOf(x, "BoolExpr");
  if (b && b.boolop === "AND_EXPR" && Array.isArray(b.args)) {
    for (const a of b.args) addConjuncts(a, out);
  } else if (x !== undefined) out.push(x);
}

/** The output column name PostgreSQL gives an unnamed target (parse_target.c FigureColname). */
function figureName(v: unknown): string {
  return figure(v)[0] ?? UNKNOWN_NAME;
}

/** A name and its strength: 2 a real name, 1 a fallback ("case"), 0 none. */
function figure(v: unknown): [string | null, number] {
  const type = nodeType(v);
  if (type === undefined) return [null, 0];
  const body = (v as Obj)[type] as Obj;
  switch (type) {
    case "ColumnRef": {
      const fields = Array.isArray(body.fields) ? body.fields : [];
      const s = sval(fields[fields.length - 1]);
      return s === undefined ? [null, 0] : [s, 2];
    }
    case "A_Indirection": {
      const list = Array.isArray(body.indirection) ? body.indirection : [];
      for (let i = list.length - 1; i >= 0; i--) {
        const s = sval(list[i]);
        if (s !== undefined) return [s, 2];
      }
      return figure(body.arg);
    }
    case "FuncCall": {
      const parts = stringParts(body.funcname);
      return parts ? [parts[parts.length - 1], 2] : [null, 0];
    }
    case "A_Expr":
      return body.kind === "AEXPR_NULLIF" ? ["nullif", 2] : [null, 0];
    case "TypeCast": {
      const inner = figure(body.arg);
      if (inner[1] > 1) return inner;
      const t = stringParts((body.typeName as Obj | undefined)?.names);
      return t ? [t[t.length - 1], 1] : inner;
    }
    case "CollateClause":
      return figure(body.arg);
    case "CaseExpr":
      return ["case", 1];
    case "A_ArrayExpr":
      return ["array", 2];
    case "RowExpr":
      return ["row", 2];
    case "CoalesceExpr":
      return ["coalesce", 2];
    case "MinMaxExpr":
      return [body.op === "IS_LEAST" ? "least" : "greatest", 2];
    case "GroupingFunc":
      return ["grouping", 2];
    case "SQLValueFunction": {
      const name = VALUE_FUNCTION_NAMES[String(body.op)];
      return name ? [name, 2] : [null, 0];
    }
    case "SubLink":
      if (body.subLinkType === "EXISTS_SUBLINK") return ["exists", 2];
      if (body.subLinkType === "ARRAY_SUBLINK") return ["array", 2];
      return [null, 0];
    default:
      return [null, 0];
  }
}
