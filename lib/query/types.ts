import type { Catalog } from "../catalog/types.ts";
import type { GuardReason } from "../metrics/metrics.ts";
import type { Cell } from "./decode.ts";

/** The result of one guarded query: rows as arrays in column order. */
export interface QueryResult {
  columns: { name: string; type: string }[];
  rows: Cell[][];
  /** True when the statement had more than MAX_QUERY_ROWS rows; only the first MAX_QUERY_ROWS are kept. */
  truncated: boolean;
  elapsedMs: number;
}

/** A macro bind parameter produced by the guard; the runner supplies its value. */
export type MacroParam = "from" | "to" | "interval";

/** The guard's verdict (lib/sql-guard): on success the statement with macros expanded to `$n` parameters. */
export type GuardVerdict =
  | { ok: true; sql: string; params: MacroParam[] }
  | { ok: false; reason: GuardReason; message: string };

/** The part of lib/sql-guard the runner needs. */
export interface QueryGuard {
  check(sql: string, catalog: Catalog | null, catalogVersion?: string): GuardVerdict;
}

/** A dashboard's time range in epoch milliseconds. */
export interface TimeRange {
  fromMs: number;
  toMs: number;
}
