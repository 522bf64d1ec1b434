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

type Obj = Record<string, unknown>;

/** The string of a string literal node, or undefined. */
export function stringConst(node: unknown): string | undefined {
  const c = (node as { A_Const?: { sval?: { sval?: unknown }; isnull?: unknown } } | null)?.A_Const;
  if (!c?.sval) return undefined;
  const s = c.sval.sval ?? "";
  return typeof s === "string" ? s : undefined;
}

/** The value of an integer or numeric literal, unary minus included, or undefined. */
export function numberConst(node: unknown): number | undefined {
  const o = node as Obj | null;
  if (!o || typeof o !== "object") return undefined;
  const neg = (o.A_Expr as Obj | undefined) ?? undefined;
  if (neg && neg.kind === "AEXPR_OP" && neg.lexpr === undefined) {
    const name = neg.name as { String?: { sval?: unknown } }[] | undefined;
    if (Array.isArray(name) && name.length === 1 && name[0]?.String?.sval === "-") {
      const v = numberConst(neg.rexpr);
      return v === undefined ? undefined : -v;
    }
    return undefined;
  }
  const c = o.A_Const as { ival?: { ival?: unknown }; fval?: { fval?: unknown } } | undefined;
  if (!c) return undefined;
  if (c.ival) {
    const v = c.ival.ival ?? 0;
    return typeof v === "number" ? v : undefined;
  }
  if (c.fval && typeof c.fval.fval === "string") {
    const v = Number(c.fval.fval);
    return Number.isFinite(v) ? v : undefined;
  }
  return undefined;
}

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
