// The guard's vocabulary, in a module with no runtime imports so that any folder can name it (the query
// runner, dashboard saves, the metrics registry) without loading the parser.
import type { Catalog } from "../catalog/types.ts";

/** Why the guard refused a statement: the check that failed, in the order the checks run (docs/sql-guard.md). */
export const GUARD_REASONS = ["empty", "structure", "comment", "keyword", "function", "time", "catalog"] as const;
export type GuardReason = (typeof GUARD_REASONS)[number];

/** What a bind parameter produced by a macro carries; the query runner supplies its value. */
export type MacroParam = "from" | "to" | "interval";

/** A guard answer: the SQL to run with its bind list, or the first failed check's reason. */
export type GuardVerdict =
  | { ok: true; sql: string; params: MacroParam[] } // sql with macros expanded to $1..$n; params[i] is what $i+1 binds
  | {
      ok: false;
      reason: GuardReason;
      message: string;
      /**
       * Where the refused name, comment, keyword or syntax error starts: a UTF-16 offset into the SQL as
       * written (macros unexpanded), as an editor counts. Absent when the refusal is about the whole
       * statement or its place could not be told; inside a macro's output it is the macro's `$`.
       */
      location?: number;
    };

/** The SQL guard (`createGuard` in lib/sql-guard/index.ts), as every caller uses it. */
export interface Guard {
  /**
   * Checks one statement against a source's catalog (`null`: never refreshed, every statement that
   * reaches the catalog check fails with `catalog`). With `catalogVersion` the verdict is cached by
   * (statement text, catalogVersion); the version must change whenever the catalog does and must
   * identify the source too (e.g. `${sourceId}:${catalogRefreshedAt}`). Never throws.
   */
  check(sql: string, catalog: Catalog | null, catalogVersion?: string): GuardVerdict;
}
