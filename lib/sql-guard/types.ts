// The type allowlist: the target of every cast, typed literal and column definition list must be a plain
// value type. Types outside it reach other parsers and lookups (xml's parser, the reg* name lookups,
// geometric input functions, system row types whose input runs regproc lookups) or pad values to a size
// chosen by the statement. See docs/sql-guard.md, "Types".
import { safeName } from "./macros.ts";
import { numberConst, sval } from "./nodes.ts";

/** Value types a panel may cast to, by their pg_catalog names (the parser writes `integer` as int4, etc.). */
export const ALLOWED_TYPES: ReadonlySet<string> = new Set([
  "bool",
  "int2",
  "int4",
  "int8",
  "float4",
  "float8",
  "numeric",
  "text",
  "varchar",
  "bpchar",
  "char",
  "date",
  "time",
  "timetz",
  "timestamp",
  "timestamptz",
  "interval",
  "json",
  "jsonb",
  "uuid",
]);

/** Types whose input functions look names up in the system catalogs (a probe for roles, tables, functions). */
const CATALOG_LOOKUP_TYPES: ReadonlySet<string> = new Set([
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

/**
 * pg_catalog types named pg_* that are not the row type of a system relation. Every other pg_* type name is
 * a system relation's row type (pg_authid, pg_aggregate, ...), whose input reads the catalogs.
 */
const PG_PREFIXED_VALUE_TYPES: ReadonlySet<string> = new Set([
  "pg_brin_bloom_summary",
  "pg_brin_minmax_multi_summary",
  "pg_ddl_command",
  "pg_dependencies",
  "pg_lsn",
  "pg_mcv_list",
  "pg_ndistinct",
  "pg_node_tree",
  "pg_snapshot",
]);

/** Largest type modifier allowed (`varchar(n)`, `char(n)`, `numeric(p, s)`): char(n) pads every value to n. */
export const MAX_TYPE_MODIFIER = 1000;

export type TypeProblem = { reason: "function" | "catalog"; message: string };

type Obj = Record<string, unknown>;

/** Whether a type is readable by the catalog check: the reg* family, aclitem, system row types. */
function readsCatalog(schema: string | undefined, name: string): boolean {
  if (schema === "information_schema") return true;
  if (CATALOG_LOOKUP_TYPES.has(name)) return true;
  return name.startsWith("pg_") && !PG_PREFIXED_VALUE_TYPES.has(name);
}

/** A type name as a message shows it; worked out only when a message is written. */
function shown(parts: readonly string[]): string {
  return safeName(parts.join("."));
}

/**
 * Checks one TypeName node: its name (plain, `name[]` or `_name`, unqualified or in pg_catalog) must be on
 * ALLOWED_TYPES; its modifiers must be integer literals up to MAX_TYPE_MODIFIER (interval field masks
 * written by the grammar excepted). `extra` holds names a deployment added.
 */
export function typeProblem(t: Obj, extra: ReadonlySet<string>): TypeProblem | null {
  const list: readonly unknown[] = Array.isArray(t.names) ? t.names : [];
  const parts: string[] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const part = sval(list[i]);
    if (part === undefined) return { reason: "function", message: "casts must name a type" };
    parts[i] = part;
  }
  if (parts.length === 0) return { reason: "function", message: "casts must name a type" };
  if (t.pct_type === true) return { reason: "function", message: "%TYPE casts are not allowed" };
  const last = parts[parts.length - 1];
  const schema = parts.length > 1 ? parts[parts.length - 2] : undefined;
  const base = last.startsWith("_") ? last.slice(1) : last;
  if (parts.length > 2) return { reason: "function", message: `casts to ${shown(parts)} are not allowed` };
  if (readsCatalog(schema, last) || readsCatalog(schema, base)) {
    return { reason: "catalog", message: `casts to ${shown(parts)} read the system catalogs` };
  }
  const inCatalogSchema = schema === undefined || schema === "pg_catalog";
  if (!inCatalogSchema || !(ALLOWED_TYPES.has(base) || extra.has(base))) {
    return { reason: "function", message: `casts to type ${shown(parts)} are not allowed` };
  }
  if (Array.isArray(t.typmods) && t.typmods.length > 0) {
    const interval = base === "interval";
    for (const m of t.typmods) {
      const v = numberConst(m);
      if (v === undefined || !Number.isInteger(v))
        return { reason: "function", message: `the modifier of ${shown(parts)} must be a number literal` };
      if (!interval && (v < 0 || v > MAX_TYPE_MODIFIER)) {
        return { reason: "function", message: `the modifier of ${shown(parts)} must be at most ${MAX_TYPE_MODIFIER}` };
      }
    }
  }
  return null;
}

/**
 * Catalog column types (as lib/catalog-refresh/refresh.ts spells them) that identify server state rather than
 * hold a value: an allowlisted function over one of them reads that state (`age(xid)` reads the
 * transaction counter). Passing such a column to a function is refused; selecting or comparing it is not.
 */
export const SERVER_STATE_COLUMN_TYPES: ReadonlySet<string> = new Set([
  ...CATALOG_LOOKUP_TYPES,
  "xid",
  "xid8",
  "cid",
  "tid",
  "oid",
  "pg_lsn",
  "pg_snapshot",
  "txid_snapshot",
  "pg_node_tree",
]);
