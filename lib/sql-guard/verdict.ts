// The guard's vocabulary, in a module with no runtime imports so that any folder can name it (the query
// runner, dashboard saves, the metrics registry) without loading the parser.
import type { Catalog } from "../catalog/types.ts";

/** Why the guard refused a statement: the check that failed, in the order the checks run (docs/sql-guard.md). */
export const GUARD_REASONS = ["empty", "structure", "comment", "keyword", "function", "time", "catalog"] as const;
export type GuardReason = (typeof GUARD_REASONS)[number];

/**
 * A dashboard variable's bind parameter: its value, or for a multi-value variable written `IN ($name)`
 * (`array`), its whole selection as one array.
 */
export interface VariableParam {
  variable: string;
  array: boolean;
}

/** What a bind parameter produced by a macro or a variable carries; the query runner supplies its value. */
export type MacroParam = "from" | "to" | "interval" | VariableParam;

/** A variable the statement may use, as the dashboard declares it (a spec's `variables` entries fit). */
export interface VariableDecl {
  name: string;
  multi?: boolean;
}

/**
 * A generate_series over times, as the guard found it: its row count depends on the range a viewer picks, so
 * the runner checks it against that range before the statement runs (lib/sql-guard/series.ts). The series
 * spans the range `ranges` times plus `widenMs` and `intervals` × `$__interval`; it steps by `stepMs`, or by
 * `$__interval` when `stepMs` is null.
 */
export interface SeriesBound {
  ranges: number;
  widenMs: number;
  intervals: number;
  stepMs: number | null;
}

/** A guard answer: the SQL to run with its bind list, or the first failed check's reason. */
export type GuardVerdict =
  // sql with macros expanded to $1..$n; params[i] is what $i+1 binds; series: time series to check against the range
  | { ok: true; sql: string; params: MacroParam[]; series?: readonly SeriesBound[] }
  | {
      ok: false;
      reason: GuardReason;
      message: string;
      /**
       * Where the refused name, comment, keyword or syntax error starts: a UTF-16 offset into the SQL as
       * written (macros unexpanded), as an editor counts. Absent when the refusal is about the whole
       * statement or its place could not be told; inside what a macro or variable became it is where that starts.
       */
      location?: number;
    };

/** The SQL guard (`createGuard` in lib/sql-guard/index.ts), as every caller uses it. */
export interface Guard {
  /**
   * Checks one statement against a source's catalog (`null`: never refreshed, every statement that
   * reaches the catalog check fails with `catalog`). With `catalogVersion` the verdict is cached by
   * (statement text, catalogVersion); the version must change whenever the catalog does and must
   * identify the source too (e.g. `${sourceId}:${catalogRefreshedAt}`). `variables` are the dashboard's
   * variables the statement may name (`$name`, `${name}`, `IN ($name)` when multi); any other `$name` is
   * a `structure` refusal. Never throws.
   */
  check(sql: string, catalog: Catalog | null, catalogVersion?: string, variables?: readonly VariableDecl[]): GuardVerdict;
}
