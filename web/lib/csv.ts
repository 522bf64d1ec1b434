import { isTimeColumn, type ResultData } from "./result.ts";

/** One CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF; a leading =+-@ is prefixed with ' so a spreadsheet does not run it as a formula. */
export function csvField(v: unknown): string {
  if (v === null || v === undefined) return "";
  let text = typeof v === "object" ? JSON.stringify(v) : String(v);
  if (/^[=+\-@\t\r]/.test(text) && !/^-?\d/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A result as CSV: a header of column names, then the rows; the time column as ISO-8601 UTC instants. */
export function toCsv(result: ResultData): string {
  const timeCols = result.columns.map((_, i) => isTimeColumn(result, i));
  const lines = [result.columns.map((c) => csvField(c.name)).join(",")];
  for (const row of result.rows) {
    lines.push(row.map((cell, i) => csvField(timeCols[i] && typeof cell === "number" ? new Date(cell).toISOString() : cell)).join(","));
  }
  return `${lines.join("\r\n")}\r\n`;
}
