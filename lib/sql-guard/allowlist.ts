/**
 * The function allowlist (pg_catalog names, docs/sql-guard.md); deployments extend it by config. Every name here
 * and every name a deployment adds needs a size declaration (declarations.ts), or calls to it are refused.
 */
export const DEFAULT_ALLOWED_FUNCTIONS: readonly string[] = [
  // aggregates
  ...["count", "sum", "avg", "min", "max", "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp"],
  ...["percentile_cont", "percentile_disc", "mode", "bool_and", "bool_or", "every", "string_agg", "array_agg"],
  ...["json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg", "corr", "covar_pop", "covar_samp", "regr_slope"],
  ...["regr_intercept"],
  // window
  ...["row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value"],
  ...["last_value", "nth_value"],
  // math
  ...["abs", "ceil", "ceiling", "floor", "round", "trunc", "sign", "sqrt", "cbrt", "power", "exp", "ln", "log"],
  ...["log10", "mod", "div", "greatest", "least", "width_bucket"],
  // time
  ...["now", "date_trunc", "date_bin", "date_part", "extract", "to_timestamp", "to_char", "to_date", "make_interval"],
  ...["make_timestamptz", "justify_interval", "age", "timezone", "date", "time_bucket", "time_bucket_gapfill"],
  // TimescaleDB's gap filling and first/last (where the extension is installed)
  ...["locf", "interpolate", "first", "last"],
  // text
  ...["lower", "upper", "length", "char_length", "substring", "substr", "left", "right", "concat", "concat_ws"],
  ...["replace", "split_part", "trim", "btrim", "ltrim", "rtrim", "position", "strpos", "starts_with", "format"],
  ...["regexp_replace"],
  // other
  ...["coalesce", "nullif", "generate_series", "json_build_object", "jsonb_build_object", "jsonb_extract_path_text"],
  ...["array_length", "unnest", "cardinality", "array_to_string"],
];

/**
 * Functions the grammar itself writes, always as pg_catalog.<name>, for SQL syntax such as
 * `x SIMILAR TO y`, `x LIKE y ESCAPE z`, `(a, b) OVERLAPS (c, d)`, `OVERLAY(...)`, `x IS NORMALIZED`:
 * allowed when written qualified with pg_catalog, as the grammar writes them.
 */
export const SYNTAX_ONLY_FUNCTIONS: ReadonlySet<string> = new Set([
  "like_escape",
  "similar_to_escape",
  "overlaps",
  "overlay",
  "normalize",
  "is_normalized",
]);

/** Splits a SQL_GUARD_EXTRA_FUNCTIONS value (comma- or space-separated) into lower-case names. */
export function parseFunctionList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((f) => f.trim().toLowerCase())
    .filter(Boolean);
}
