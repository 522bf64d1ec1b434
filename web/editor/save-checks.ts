/**
 * What the editor refuses before sending a save: a panel or query variable whose SQL is longer than a spec allows
 * (a pasted dump of megabytes would otherwise come back as a request-size error naming no panel). Pure; the page
 * shows the messages and keeps the draft.
 */
import { MAX_PANEL_SQL_LENGTH } from "../../lib/dashboards/limits.ts";

interface SqlHolder {
  sql?: string;
}

/** One message per panel or query variable whose SQL is over MAX_PANEL_SQL_LENGTH, naming it and both lengths. */
export function oversizedSql(spec: {
  panels: readonly (SqlHolder & { id: string; title: string })[];
  variables?: readonly (SqlHolder & { name: string })[];
}): string[] {
  const limit = MAX_PANEL_SQL_LENGTH.toLocaleString("en-US");
  const over = (sql: string | undefined) => sql !== undefined && sql.length > MAX_PANEL_SQL_LENGTH;
  const size = (sql: string) => sql.length.toLocaleString("en-US");
  return [
    ...spec.panels
      .filter((p) => over(p.sql))
      .map((p) => `Panel "${p.title}": its SQL is ${size(p.sql ?? "")} characters; at most ${limit}.`),
    ...(spec.variables ?? [])
      .filter((v) => over(v.sql))
      .map((v) => `Variable ${v.name}: its SQL is ${size(v.sql ?? "")} characters; at most ${limit}.`),
  ];
}
