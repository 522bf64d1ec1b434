// The operator allowlist. Operators are functions too: some run in time quadratic in their inputs without
// checking for cancellation (array `&&`, jsonb `@>` over arrays of objects, geometric `<->`), and others read
// server settings (`text @@ text` reads default_text_search_config). See docs/sql-guard.md, "Operators".

/** Operators a panel may use, unqualified or as OPERATOR(pg_catalog.op). */
export const ALLOWED_OPERATORS: ReadonlySet<string> = new Set([
  // comparison (`!=` is parsed as `<>`)
  "=",
  "<>",
  "<",
  ">",
  "<=",
  ">=",
  // arithmetic (unary - and + included)
  "+",
  "-",
  "*",
  "/",
  "%",
  "^",
  // concatenation
  "||",
  // LIKE / ILIKE (and their NOT forms), SIMILAR TO and POSIX regular expressions
  "~~",
  "!~~",
  "~~*",
  "!~~*",
  "~",
  "!~",
  "~*",
  "!~*",
  // JSON navigation
  "->",
  "->>",
  "#>",
  "#>>",
]);

/** Keyword forms the grammar writes in A_Expr names (they expand to >= and <=). */
const BETWEEN_NAMES: ReadonlySet<string> = new Set(["BETWEEN", "NOT BETWEEN", "BETWEEN SYMMETRIC", "NOT BETWEEN SYMMETRIC"]);

/**
 * The problem with an operator name list (`["="]`, `["pg_catalog", "+"]`), or null when it is allowed.
 * Never contains more of the statement than the operator's own name.
 */
export function operatorProblem(parts: readonly string[]): string | null {
  if (parts.length === 1 && BETWEEN_NAMES.has(parts[0])) return null;
  const op = parts[parts.length - 1];
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== "pg_catalog")) {
    return `operator OPERATOR(${parts.join(".")}) is not allowed`;
  }
  if (!ALLOWED_OPERATORS.has(op)) return `operator ${op} is not allowed`;
  return null;
}
