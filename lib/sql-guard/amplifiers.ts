// Functions whose output can outgrow their input. statement_timeout bounds time, not memory, and these
// functions build their whole result in one call without checking for cancellation: format('%999999999s')
// allocates a gigabyte, eight nested replace() calls turn ten characters into hundreds of millions. Each is
// bounded here; docs/sql-guard.md ("Amplifiers") lists them.

/**
 * Functions that can multiply their input: a replacement repeats its third argument per match, an aggregate
 * concatenates every row. None may appear inside the arguments of another (at any depth, sub-selects
 * included), so the product of two amplifications never runs.
 */
export const AMPLIFIERS: ReadonlySet<string> = new Set([
  "replace",
  "regexp_replace",
  "format",
  "string_agg",
  "array_agg",
  "json_agg",
  "jsonb_agg",
  // Not on the default allowlist; bounded the same way if a deployment adds them.
  "repeat",
  "lpad",
  "rpad",
  "translate",
  "array_fill",
  "regexp_split_to_array",
  "string_to_array",
  "xmlagg",
]);

/** Largest `format` width, `lpad`/`rpad` length or `repeat` count a literal may ask for. */
export const MAX_OUTPUT_WIDTH = 1000;

/** Largest absolute bound of a numeric generate_series. */
export const MAX_SERIES_BOUND = 100_000;

/**
 * The problem with a format string, or null: every width must be digits up to MAX_OUTPUT_WIDTH (never `*`,
 * which takes the width from an argument). Follows PostgreSQL's text_format: %[n$][-][width]type.
 */
export function formatStringProblem(fmt: string): string | null {
  for (let i = 0; i < fmt.length; i++) {
    if (fmt[i] !== "%") continue;
    i++;
    if (fmt[i] === "%") continue;
    // optional argument position n$
    let j = i;
    while (j < fmt.length && fmt[j] >= "0" && fmt[j] <= "9") j++;
    if (fmt[j] === "$" && j > i) i = j + 1;
    else j = i;
    while (fmt[i] === "-") i++;
    if (fmt[i] === "*") return "format widths must be number literals, not *";
    let width = "";
    while (i < fmt.length && fmt[i] >= "0" && fmt[i] <= "9") width += fmt[i++];
    if (width !== "" && (width.length > 6 || Number(width) > MAX_OUTPUT_WIDTH)) {
      return `format widths must be at most ${MAX_OUTPUT_WIDTH}`;
    }
    if (fmt[i] === "$") return "format widths must be number literals";
  }
  return null;
}
