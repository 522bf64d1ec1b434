import type pg from "pg";
import { AppError } from "../http/errors.ts";
import type { QueryRunner } from "../query/runner.ts";
import { SOURCE_LIMITS_SQL, sourceLimitsFromRow } from "../query/source-limits.ts";
import { type Source, type TimeColumnOverride, saveCatalog } from "../sources/store.ts";
import type { Catalog, CatalogTable } from "../catalog/types.ts";

/** Types that make a column a table's `timeColumn` as information_schema spells them. */
const TIME_TYPES = new Set(["timestamp with time zone", "timestamp without time zone", "date"]);

/** Columns one refresh reads at most; a larger catalog must be narrowed with the source's schema list. */
export const MAX_CATALOG_COLUMNS = 50_000;
const MAX_CATALOG_BYTES = 32 * 1024 * 1024;

// information_schema.columns lists only columns the connecting role holds a privilege on, so the catalog
// is what the source's least-privilege role can see, not the whole database.
const COLUMNS_SQL = `SELECT table_schema, table_name, column_name, data_type, udt_name
  FROM information_schema.columns
 WHERE table_schema = ANY($1)
 ORDER BY table_schema, table_name, ordinal_position`;

const TEXT_ARRAY_OID = 1009;

/** A text[] literal for a bind parameter: every element double-quoted with `"` and `\` escaped. */
export function textArrayLiteral(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(",")}}`;
}

/** information_schema's data_type, with enum/domain and array types named after their element type. */
function columnType(dataType: string, udtName: string): string {
  if (dataType === "USER-DEFINED") return udtName;
  if (dataType === "ARRAY") return `${udtName.replace(/^_/, "")}[]`;
  return dataType;
}

/**
 * Builds the catalog from information_schema rows (schema, table, column, data_type, udt_name).
 * A user's override wins over detection: `column: null` removes the time column, a column name that still
 * exists replaces it; an override naming a column that no longer exists is ignored.
 */
export function catalogFromColumns(rows: readonly (readonly unknown[])[], overrides: readonly TimeColumnOverride[] = []): Catalog {
  const tables: CatalogTable[] = [];
  let current: CatalogTable | null = null;
  for (const row of rows) {
    const [schema, table, column, dataType, udtName] = row.map(String) as [string, string, string, string, string];
    if (!current || current.schema !== schema || current.name !== table) {
      current = { schema, name: table, timeColumn: null, columns: [] };
      tables.push(current);
    }
    current.columns.push({ name: column, type: columnType(dataType, udtName) });
    if (current.timeColumn === null && TIME_TYPES.has(dataType)) current.timeColumn = column;
  }
  for (const o of overrides) {
    const table = tables.find((t) => t.schema === o.schema && t.name === o.table);
    if (!table) continue;
    if (o.column === null) table.timeColumn = null;
    else if (table.columns.some((c) => c.name === o.column)) table.timeColumn = o.column;
  }
  return { tables };
}

/**
 * Reads a source's catalog through the runner (the same pool, credentials, read-only transaction and
 * timeout): its tables and columns, and the role's statement_timeout, temp_file_limit and work_mem.
 */
export async function readCatalog(runner: Pick<QueryRunner, "execute">, source: Source): Promise<Catalog> {
  const result = await runner.execute({
    source,
    sql: COLUMNS_SQL,
    values: [textArrayLiteral(source.schemas)],
    paramTypes: [TEXT_ARRAY_OID],
    maxRows: MAX_CATALOG_COLUMNS,
    maxBytes: MAX_CATALOG_BYTES,
  });
  if (result.truncated) {
    throw new AppError(
      "bad_request",
      `The source's schemas have more than ${MAX_CATALOG_COLUMNS} columns; narrow the source's schema list.`,
    );
  }
  const catalog = catalogFromColumns(result.rows, source.timeColumnOverrides ?? []);
  // The role's limits as a panel statement sees them, recorded with the tables they were read with.
  const limits = await runner.execute({ source, sql: SOURCE_LIMITS_SQL, maxRows: 1 });
  return { ...catalog, limits: sourceLimitsFromRow(limits.rows[0]) };
}

export interface RefreshCatalogDeps {
  /** Config-store pool. */
  db: pg.Pool | pg.PoolClient;
  runner: Pick<QueryRunner, "execute">;
  /** Wall clock (epoch ms) for catalog_refreshed_at. */
  now?: () => number;
}

/**
 * Reads the source's tables and columns and stores them with catalog_refreshed_at. Returns the updated
 * source; throws the runner's coded errors, or `not_found` if the source was deleted meanwhile.
 */
export async function refreshCatalog(deps: RefreshCatalogDeps, source: Source): Promise<Source> {
  const catalog = await readCatalog(deps.runner, source);
  const saved = await saveCatalog(deps.db, source.id, catalog, new Date((deps.now ?? Date.now)()));
  if (!saved) throw new AppError("not_found", "The source was deleted during the catalog refresh.");
  return saved;
}
