// The limits a panel statement runs under on a source, read from the server the way a panel statement
// would see them (through the runner: its read-only transaction, its SET LOCAL statement_timeout and
// work_mem, the role's own temp_file_limit). The connection test reports them and every catalog refresh
// records them with the catalog, so the sources page can warn about a role that can fill the server's disk.
import type { SourceLimits } from "../catalog/types.ts";

export type { SourceLimits } from "../catalog/types.ts";

/** One row: statement_timeout, temp_file_limit, work_mem, as current_setting spells them. */
export const SOURCE_LIMITS_SQL =
  "SELECT current_setting('statement_timeout'), current_setting('temp_file_limit'), current_setting('work_mem')";

/** The limits from SOURCE_LIMITS_SQL's row. */
export function sourceLimitsFromRow(row: readonly unknown[] | undefined): SourceLimits {
  const [statementTimeout, tempFileLimit, workMem] = (row ?? []).map((v) => String(v));
  return { statementTimeout: statementTimeout ?? "", tempFileLimit: tempFileLimit ?? "", workMem: workMem ?? "" };
}

/** What an admin should fix in the source role's settings (docs/sql-guard.md, "Limits on what one statement may use"). */
export function sourceLimitWarnings(limits: SourceLimits | null | undefined): string[] {
  if (!limits) return [];
  const warnings: string[] = [];
  // temp_file_limit is -1 (unlimited) unless a superuser set it: one statement's sorts could fill the disk.
  if (limits.tempFileLimit === "-1") {
    warnings.push(
      "The source's role has no temp_file_limit, so one query's temp files can fill its disk; run ALTER ROLE … SET temp_file_limit (docs/sql-guard.md).",
    );
  }
  return warnings;
}
