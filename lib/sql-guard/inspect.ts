// One generic walk over libpg-query's JSON parse tree. It visits every field of every node, so a
// function call or relation cannot hide in a field this file does not know about; the node types
// below only decide what a visited node means. Findings are collected per check so the guard can
// answer in DESIGN order (keyword, function, catalog, time) whatever order the tree is in.
import type { Catalog, CatalogTable } from "../catalog/types.ts";
import { safeName } from "./macros.ts";

export interface Findings {
  /** Offending keyword (e.g. "INSERT", "FOR UPDATE"); "" means "use the statement's first word". */
  keyword: string | null;
  /** Offending function, as written (qualified when it was). */
  func: string | null;
  /** The message for `func` when "function X is not allowed" would not say why. */
  funcMessage?: string;
  /** Catalog-check message for the first relation or cast outside the catalog. */
  catalog: string | null;
  /** First catalog table read that has a time column. */
  timeTable: string | null;
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

/**
 * Functions the grammar itself writes, always as pg_catalog.<name>, for SQL syntax such as
 * `x SIMILAR TO y`, `x LIKE y ESCAPE z`, `(a, b) OVERLAPS (c, d)`, `OVERLAY(...)`, `x IS NORMALIZED`.
 */
const SYNTAX_ONLY_FUNCTIONS = new Set(["like_escape", "similar_to_escape", "overlaps", "overlay", "normalize", "is_normalized"]);

/**
 * pg_catalog functions PostgreSQL also calls through attribute notation (`t.f` or `(expr).f` is `f(t)`
 * when `t` is a row and `f` takes one record, "any" or polymorphic argument). The parser cannot tell
 * such a field from a column, so a field of this name is treated as the call it may be. Listed from
 * PostgreSQL 18's pg_proc (one required argument of type record, "any", anyelement, anycompatible,
 * anynonarray) plus the hstore extension's hstore(record).
 */
const ATTRIBUTE_CALLABLE = new Set([
  "any_out",
  "any_value",
  "anycompatible_out",
  "anycompatiblenonarray_out",
  "anyelement_out",
  "anynonarray_out",
  "array_agg",
  "concat",
  "count",
  "cume_dist",
  "dense_rank",
  "first_value",
  "hash_record",
  "hstore",
  "json_agg",
  "json_agg_strict",
  "json_build_array",
  "json_build_object",
  "jsonb_agg",
  "jsonb_agg_strict",
  "jsonb_build_array",
  "jsonb_build_object",
  "lag",
  "last_value",
  "lead",
  "max",
  "min",
  "mode",
  "num_nonnulls",
  "num_nulls",
  "percent_rank",
  "pg_collation_for",
  "pg_column_compression",
  "pg_column_size",
  "pg_column_toast_chunk_id",
  "pg_restore_attribute_stats",
  "pg_restore_relation_stats",
  "pg_typeof",
  "quote_literal",
  "quote_nullable",
  "rank",
  "record_out",
  "record_send",
  "row_to_json",
  "to_json",
  "to_jsonb",
]);

/** System columns every table has; information_schema (and so the catalog) does not list them. */
const SYSTEM_COLUMNS = new Set(["tableoid", "xmin", "cmin", "xmax", "cmax", "ctid"]);

/** Types whose input functions look names up in the system catalogs. */
const CATALOG_LOOKUP_TYPES = new Set([
  // aclitem's input looks up both role names (a probe for which roles exist, like regrole).
  "aclitem",
  "regclass",
  "regcollation",
  "regconfig",
  "regdictionary",
  "regnamespace",
  "regoper",
  "regoperator",
  "regproc",
  "regprocedure",
  "regrole",
  "regtype",
]);

interface CatalogIndex {
  tables: unknown;
  count: number;
  qualified: Map<string, CatalogTable>;
  unqualified: Map<string, CatalogTable>;
  /** Schema of a non-public catalog table by name, for the hint to qualify it. */
  elsewhere: Map<string, string>;
}

const indexes = new WeakMap<Catalog, CatalogIndex>();

/**
 * Unqualified names resolve in `public` only: source connections start with search_path=public
 * (lib/query/pools.ts startupOptions), so a bare `deploys` runs as public.deploys even when the catalog only lists
 * metrics.deploys, and public.deploys may be a table the catalog (narrowed by the source's schema
 * list) leaves out.
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
  idx = { tables: catalog.tables, count: tables.length, qualified, unqualified, elsewhere };
  indexes.set(catalog, idx);
  return idx;
}

function isSystemSchema(schema: string): boolean {
  return schema === "information_schema" || schema.startsWith("pg_");
}

function stringParts(list: unknown[]): string[] | null {
  const parts: string[] = [];
  for (const item of list) {
    const sval = (item as { String?: { sval?: unknown } } | null)?.String?.sval;
    if (typeof sval !== "string") return null;
    parts.push(sval);
  }
  return parts;
}

type Obj = Record<string, unknown>;

/** Walks a parse tree and records what each guard check needs. */
export function inspect(
  tree: unknown,
  catalog: Catalog | null,
  allowed: ReadonlySet<string>,
  allowedQualified: ReadonlySet<string>,
): Findings {
  const w = new Walker(catalog ? indexOf(catalog) : null, allowed, allowedQualified);
  w.visit(tree);
  return w.findings;
}

class Walker {
  readonly findings: Findings = { keyword: null, func: null, catalog: null, timeTable: null, paramRefs: 0, maxParam: 0 };
  /** CTE names in scope, innermost last. */
  private readonly scopes: string[][] = [];
  /** FROM-item names of each enclosing query level, innermost last: a catalog table, or null for anything else. */
  private readonly fromScopes: Map<string, CatalogTable | null>[] = [];

  constructor(
    private readonly catalog: CatalogIndex | null,
    private readonly allowed: ReadonlySet<string>,
    private readonly allowedQualified: ReadonlySet<string>,
  ) {}

  visit(v: unknown): void {
    if (typeof v !== "object" || v === null) return;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) this.visit(v[i]);
      return;
    }
    this.fields(v as Obj, false);
  }

  /**
   * Visits every field of a node. What a field means is read from its key in the same pass (one
   * lookup per key instead of probing every object for every interesting property).
   */
  private fields(o: Obj, withEntered: boolean): void {
    for (const key in o) {
      const child = o[key];
      if (typeof child !== "object" || child === null) {
        if (key === "relname" && typeof child === "string") this.relation(o);
        continue;
      }
      const c0 = key.charCodeAt(0);
      if (c0 >= 65 && c0 <= 90) {
        if (this.node(key, child as Obj)) continue;
      } else if (key === "funcname") {
        if (Array.isArray(child)) this.call(child);
      } else if (key === "useOp" || key === "operName") {
        // ORDER BY x USING op, x op ANY (sub-select): the operator can be schema-qualified too.
        if (Array.isArray(child)) this.operator(child);
      } else if (key === "intoClause") {
        this.keyword("INTO");
      } else if (key === "typeName") {
        this.typeName(child as Obj);
      } else if (key === "withClause") {
        if (withEntered) continue;
        // Not seen through its statement node: visit it anyway (its names then scope nothing, stricter).
        this.enterWith(child as Obj);
        this.scopes.pop();
        continue;
      }
      this.visit(child);
    }
  }

  /** A statement body: its WITH names are in scope for all of it, whatever the key order. */
  private statement(body: Obj): void {
    const w = body.withClause;
    if (w && typeof w === "object") {
      this.enterWith(w as Obj);
      this.fromScopes.push(this.fromItems(body.fromClause));
      this.fields(body, true);
      this.fromScopes.pop();
      this.scopes.pop();
    } else {
      this.fromScopes.push(this.fromItems(body.fromClause));
      this.fields(body, false);
      this.fromScopes.pop();
    }
  }

  /** The names a query level's FROM list binds (after its WITH names are in scope). */
  private fromItems(fromClause: unknown): Map<string, CatalogTable | null> {
    const names = new Map<string, CatalogTable | null>();
    const bind = (name: unknown, table: CatalogTable | null) => {
      if (typeof name !== "string") return;
      // The same name twice at one level is an error in PostgreSQL; never guess which one is meant.
      names.set(name, names.has(name) ? null : table);
    };
    const item = (v: unknown): void => {
      if (!v || typeof v !== "object") return;
      const o = v as Obj;
      const alias = (x: unknown) => (x as { aliasname?: unknown; colnames?: unknown } | undefined) ?? undefined;
      if (o.RangeVar) {
        const r = o.RangeVar as Obj;
        const a = alias(r.alias);
        // Column aliases rename the columns, so the catalog's names no longer apply.
        const table = a?.colnames ? null : this.catalogTableOf(r);
        bind(a?.aliasname ?? r.relname, table);
      } else if (o.JoinExpr) {
        const j = o.JoinExpr as Obj;
        item(j.larg);
        item(j.rarg);
        bind(alias(j.alias)?.aliasname, null);
      } else if (o.RangeTableSample) {
        item((o.RangeTableSample as Obj).relation);
      } else {
        const body = Object.values(o)[0] as Obj | undefined;
        bind(alias(body?.alias)?.aliasname, null);
      }
    };
    if (Array.isArray(fromClause)) for (const f of fromClause) item(f);
    return names;
  }

  /** The catalog table a RangeVar reads, or null for a CTE, a table outside the catalog or no catalog. */
  private catalogTableOf(r: Obj): CatalogTable | null {
    if (this.catalog === null || typeof r.relname !== "string" || typeof r.catalogname === "string") return null;
    if (typeof r.schemaname === "string") return this.catalog.qualified.get(`${r.schemaname}\u0000${r.relname}`) ?? null;
    if (this.inCteScope(r.relname)) return null;
    return this.catalog.unqualified.get(r.relname) ?? null;
  }

  /**
   * `q.f` where `q` names a catalog table of an enclosing query level: `f` must be one of its columns,
   * because otherwise PostgreSQL reads it as `f(q)`, a call of any function taking the table's row,
   * including one someone created in the source database.
   */
  private qualifiedField(qualifier: string, field: string): void {
    for (let i = this.fromScopes.length - 1; i >= 0; i--) {
      const scope = this.fromScopes[i];
      if (!scope.has(qualifier)) continue;
      const table = scope.get(qualifier);
      if (!table || table.columns.length === 0 || SYSTEM_COLUMNS.has(field)) return;
      if (!table.columns.some((c) => c.name === field)) {
        if (this.findings.func === null) {
          const [q, f] = [safeName(qualifier), safeName(field)];
          this.findings.func = f;
          this.findings.funcMessage = `${q}.${f}: ${f} is not a column of ${safeName(table.name)} in the catalog, so it would call a function ${f}(${q})`;
        }
      }
      return;
    }
  }

  /** A node wrapper key (node type name) and its body; true when the body has been visited here. */
  private node(type: string, body: Obj): boolean {
    switch (type) {
      case "ParamRef": {
        this.findings.paramRefs++;
        const n = typeof body.number === "number" ? body.number : 0;
        if (n > this.findings.maxParam) this.findings.maxParam = n;
        return false;
      }
      case "SQLValueFunction": {
        const name = DENIED_VALUE_FUNCTIONS[String(body.op)];
        if (name) this.deny(name);
        return false;
      }
      case "LockingClause":
        this.keyword(LOCK_STRENGTH[String(body.strength)] ?? "FOR UPDATE");
        return false;
      case "IntoClause":
        this.keyword("INTO");
        return false;
      case "TypeName":
        this.typeName(body);
        return false;
      case "A_Expr":
        if (Array.isArray(body.name)) this.operator(body.name);
        return false;
      case "ColumnRef":
        // The first field is a column or relation; a later one may be attribute notation for a call.
        if (Array.isArray(body.fields)) {
          this.fieldSelections(body.fields, 1);
          const parts = body.fields.length === 2 ? stringParts(body.fields) : null;
          if (parts) this.qualifiedField(parts[0], parts[1]);
        }
        return false;
      case "A_Indirection":
        if (Array.isArray(body.indirection)) {
          this.fieldSelections(body.indirection, 0);
          // (q).f and (q.*).f on a whole row of a FROM item.
          const fields = (body.arg as { ColumnRef?: { fields?: unknown[] } } | undefined)?.ColumnRef?.fields;
          const first = (body.indirection[0] as { String?: { sval?: unknown } } | undefined)?.String?.sval;
          const q = Array.isArray(fields) ? (fields[0] as { String?: { sval?: unknown } } | undefined)?.String?.sval : undefined;
          const wholeRow = Array.isArray(fields) && (fields.length === 1 || (fields.length === 2 && (fields[1] as Obj)?.A_Star !== undefined));
          if (wholeRow && typeof q === "string" && typeof first === "string") this.qualifiedField(q, first);
        }
        return false;
      case "XmlExpr":
        this.syntaxFunction(XML_OPS[String(body.op)] ?? "xml");
        return false;
      case "JsonFuncExpr":
        this.syntaxFunction(JSON_OPS[String(body.op)] ?? "json_query");
        return false;
      case "RangeTableSample": {
        const method = Array.isArray(body.method) ? stringParts(body.method) : null;
        const name = method ? method.join(".") : "tablesample";
        if (method?.length !== 1 || !this.allowed.has(method[0])) this.deny(`TABLESAMPLE ${name}`);
        return false;
      }
      case "SelectStmt":
        this.statement(body);
        return true;
      default: {
        const fn = SYNTAX_FUNCTIONS[type];
        if (fn) {
          this.syntaxFunction(fn);
          return false;
        }
        if (type.endsWith("Stmt")) {
          this.keyword(NESTED_STATEMENT[type] ?? "");
          this.statement(body);
          return true;
        }
        return false;
      }
    }
  }

  /** `x.f` / `(x).f` with `f` a function that attribute notation would call: allowed only when `f` is. */
  private fieldSelections(list: unknown[], from: number): void {
    for (let i = from; i < list.length; i++) {
      const sval = (list[i] as { String?: { sval?: unknown } } | null)?.String?.sval;
      if (typeof sval === "string" && ATTRIBUTE_CALLABLE.has(sval) && !this.allowed.has(sval)) this.deny(sval);
    }
  }

  /** OPERATOR(schema.op) outside pg_catalog can run any function the schema's owner defined. */
  private operator(list: unknown[]): void {
    const name = stringParts(list);
    if (name && name.length > 1 && name[0] !== "pg_catalog") this.deny(`OPERATOR(${name.join(".")})`);
  }

  private keyword(name: string): void {
    if (this.findings.keyword === null) this.findings.keyword = name;
  }

  private deny(name: string): void {
    if (this.findings.func === null) this.findings.func = safeName(name);
  }

  private syntaxFunction(name: string): void {
    if (!this.allowed.has(name)) this.deny(name);
  }

  private call(funcname: unknown[]): void {
    const parts = stringParts(funcname);
    if (!parts || parts.length === 0) {
      this.deny("?");
      return;
    }
    if (parts.length === 1 && this.allowed.has(parts[0])) return;
    if (parts.length === 2 && parts[0] === "pg_catalog") {
      if (this.allowed.has(parts[1]) || SYNTAX_ONLY_FUNCTIONS.has(parts[1])) return;
    }
    if (parts.length > 1 && this.allowedQualified.has(parts.join("."))) return;
    this.deny(parts.join("."));
  }

  private typeName(t: Obj): void {
    if (!Array.isArray(t.names)) return;
    const parts = stringParts(t.names);
    const last = parts?.[parts.length - 1];
    // A cast to xml parses the text as an XML document, like XMLPARSE.
    if (last === "xml" && !this.allowed.has("xml")) this.deny("xml");
    if (last && CATALOG_LOOKUP_TYPES.has(last) && this.findings.catalog === null) {
      this.findings.catalog = `casts to ${last} read the system catalogs`;
    }
  }

  private enterWith(w: Obj): void {
    const names: string[] = [];
    this.scopes.push(names);
    const ctes = Array.isArray(w.ctes) ? w.ctes : [];
    const recursive = w.recursive === true;
    const nameOf = (cte: unknown): string | null => {
      const n = (cte as { CommonTableExpr?: { ctename?: unknown } } | null)?.CommonTableExpr?.ctename;
      return typeof n === "string" ? n : null;
    };
    if (recursive) {
      for (const cte of ctes) {
        const n = nameOf(cte);
        if (n !== null) names.push(n);
      }
    }
    // Without RECURSIVE a CTE sees only the CTEs before it, never itself.
    for (const cte of ctes) {
      this.visit(cte);
      const n = nameOf(cte);
      if (!recursive && n !== null) names.push(n);
    }
    for (const key in w) if (key !== "ctes") this.visit(w[key]);
  }

  private inCteScope(name: string): boolean {
    for (let i = this.scopes.length - 1; i >= 0; i--) if (this.scopes[i].includes(name)) return true;
    return false;
  }

  private relation(r: Obj): void {
    const name = r.relname as string;
    const schema = typeof r.schemaname === "string" ? r.schemaname : undefined;
    const db = typeof r.catalogname === "string" ? r.catalogname : undefined;
    if (schema === undefined && db === undefined && this.inCteScope(name)) return;
    if (this.catalog === null || this.findings.catalog !== null) return;
    const shown = safeName([db, schema, name].filter((p) => p !== undefined).join("."));
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
      this.findings.catalog =
        other === undefined
          ? `table ${shown} is not in the source's catalog`
          : `table ${shown} is not in the source's catalog; write ${safeName(`${other}.${name}`)}`;
      return;
    }
    if (table.timeColumn && this.findings.timeTable === null) this.findings.timeTable = shown;
  }
}
