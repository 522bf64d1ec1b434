import type { Cell } from "./decode.ts";

/** The result of one guarded query: rows as arrays in column order. */
export interface QueryResult {
  columns: { name: string; type: string }[];
  rows: Cell[][];
  /** True when the statement had more than MAX_QUERY_ROWS rows; only the first MAX_QUERY_ROWS are kept. */
  truncated: boolean;
  elapsedMs: number;
}

/** A dashboard's time range in epoch milliseconds. */
export interface TimeRange {
  fromMs: number;
  toMs: number;
}
