/**
 * A panel's query as it ran, for the inspector: from the frame when the stream host puts it there (`query`: the SQL
 * and its bound values), else rebuilt from the spec and the view — the macros' values at the result's time (the
 * range, `$__interval` by the same rule as the server) and the variables' values.
 */
import type { VariableSummary } from "../../lib/live/frames.ts";
import { intervalFor } from "../../lib/sql-guard/interval.ts";
import type { QueryResult } from "../lib/result.ts";
import { ALL } from "../lib/view-url.ts";
import type { QueryAsRun } from "./inspect.ts";

export function queryAsRun(input: {
  sql: string;
  result: QueryResult;
  at: number;
  range: [number, number] | null;
  maxPoints: number;
  vars: Record<string, string[]>;
  variables: readonly VariableSummary[];
}): QueryAsRun {
  const r = input.result as QueryResult & { query?: { sql?: unknown; params?: unknown } };
  const rows = input.result.rows.length;
  if (r.query && typeof r.query.sql === "string" && Array.isArray(r.query.params)) {
    return {
      sql: r.query.sql,
      params: r.query.params.map((v, i) => ({ name: `$${i + 1}`, value: typeof v === "string" ? v : JSON.stringify(v) })),
      rows,
      elapsedMs: input.result.elapsedMs,
      at: input.at,
    };
  }
  const params: { name: string; value: string }[] = [];
  if (input.range) {
    params.push({ name: "$__timeFrom", value: new Date(input.range[0]).toISOString() });
    params.push({ name: "$__timeTo", value: new Date(input.range[1]).toISOString() });
    params.push({ name: "$__interval", value: intervalFor(input.range[0], input.range[1], input.maxPoints) });
  }
  for (const v of input.variables) {
    if (!new RegExp(`\\$\\{?${v.name}\\b`).test(input.sql)) continue;
    const chosen =
      input.vars[v.name] ?? (v.default === undefined ? (v.includeAll ? [ALL] : []) : Array.isArray(v.default) ? v.default : [v.default]);
    params.push({ name: `$${v.name}`, value: chosen.includes(ALL) ? "All" : JSON.stringify(v.multi ? chosen : (chosen[0] ?? null)) });
  }
  return { sql: input.sql, params, rows, elapsedMs: input.result.elapsedMs, at: input.at };
}
