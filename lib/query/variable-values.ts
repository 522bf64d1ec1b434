// The bind values of dashboard variables. A variable is never spliced into SQL: its value travels as a bind
// parameter of unknown type (PostgreSQL gives it the type of what it is compared with, as it does a quoted
// literal), and a multi-value variable's selection as one array parameter in PostgreSQL's array input syntax.
import { AppError } from "../http/errors.ts";
import type { VariableParam } from "../sql-guard/verdict.ts";

/** PostgreSQL's array input text of `values`: every element double-quoted, `"` and `\` escaped, so any text stays one element. */
export function arrayLiteral(values: readonly string[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ",";
    out += `"${values[i].replace(/[\\"]/g, "\\$&")}"`;
  }
  return `${out}}`;
}

/**
 * The bind value of one variable parameter from the resolved values (lib/dashboards/variables.ts). A missing
 * variable, or a single-value one without exactly one value, is a 400 naming the variable.
 */
export function variableValue(param: VariableParam, values: Readonly<Record<string, readonly string[]>> | undefined): string {
  const selected = values !== undefined && Object.hasOwn(values, param.variable) ? values[param.variable] : undefined;
  if (selected === undefined) {
    throw new AppError("validation_failed", `Variable ${param.variable} has no value.`, {
      issues: [{ path: `var-${param.variable}`, message: "no value was given" }],
    });
  }
  for (const v of selected) {
    if (typeof v !== "string" || v.includes("\0")) {
      throw new AppError("validation_failed", `Variable ${param.variable} has a value that is not text.`, {
        issues: [{ path: `var-${param.variable}`, message: "values are text without NUL characters" }],
      });
    }
  }
  if (param.array) return arrayLiteral(selected);
  if (selected.length !== 1) {
    throw new AppError("validation_failed", `Variable ${param.variable} takes one value here; use IN ($${param.variable}) for several.`, {
      issues: [{ path: `var-${param.variable}`, message: `${selected.length} values where one is expected` }],
    });
  }
  return selected[0];
}
