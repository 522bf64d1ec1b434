import type { Catalog, CatalogTable } from "../catalog/types.ts";

/** The macro and guard rules every model prompt that writes SQL carries (docs/sql-guard.md). */
export const SQL_RULES = `SQL rules (a guard enforces them; a statement that breaks one is refused):
- Exactly one read-only SELECT (CTEs allowed). No comments, no semicolons between statements, no INSERT/UPDATE/DELETE/DDL/SET/COPY, no SELECT INTO, no FOR UPDATE.
- Only tables of the catalog below (or CTEs). Never pg_catalog, information_schema or pg_toast. Write a table outside the
  public schema with its schema (metrics.deploys); only public tables may be written without it.
- A table with a time column must be filtered by time: use $__timeFilter(<time column>) in WHERE (or compare with $__timeFrom()).
- Macros: $__timeFilter(col) → col BETWEEN range start AND end; $__timeFrom() / $__timeTo() → range start / end;
  $__interval → a bucket width fitting the range; $__timeGroup(col, '5m') or $__timeGroup(col, $__interval) → time bucket of col.
  Never write $1, $2 … yourself and never use any other $__ macro.
- Dashboard variables: $name or \${name} of a variable the spec declares is bound as a value (never quote it: service = $service).
  A multi-value variable is written only as col IN ($name) or col NOT IN ($name). Any other $word is refused.
- Functions allowed: count sum avg min max stddev variance percentile_cont percentile_disc mode bool_and bool_or string_agg array_agg
  json_agg jsonb_agg; row_number rank dense_rank lag lead first_value last_value ntile; abs ceil floor round trunc sign sqrt power exp ln
  log mod div greatest least width_bucket; now date_trunc date_bin date_part extract to_timestamp to_char make_interval age timezone
  time_bucket; lower upper length substring left right concat replace split_part trim position coalesce nullif generate_series
  json_build_object jsonb_build_object unnest cardinality. Casts, CASE and operators are fine. No current_user/session_user.
- Panel types: timeseries (first column the time bucket, then numeric series), stat (one row, one number), bar (a label and a number), table.`;

/** What a bounded catalog section left out, reported to the user. */
export interface CatalogSelection {
  text: string;
  tablesTotal: number;
  tablesIncluded: number;
  /** Qualified names of tables left out (at most 50 listed). */
  omittedTables: string[];
  notesTruncated: boolean;
}

const MAX_COLUMNS_PER_TABLE = 60;
const MAX_OMITTED_LISTED = 50;

function words(text: string): Set<string> {
  return new Set(
    text
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((w) => w.length >= 3),
  );
}

function qualified(t: CatalogTable): string {
  return `${t.schema}.${t.name}`;
}

function renderTable(t: CatalogTable): string {
  const cols = t.columns.slice(0, MAX_COLUMNS_PER_TABLE).map((c) => `${c.name} ${c.type}`);
  const more = t.columns.length > MAX_COLUMNS_PER_TABLE ? `, … (+${t.columns.length - MAX_COLUMNS_PER_TABLE} more columns)` : "";
  const time = t.timeColumn ? `time column: ${t.timeColumn}` : "no time column";
  return `- ${qualified(t)} (${time}): ${cols.join(", ")}${more}`;
}

/**
 * Renders the catalog for a prompt within `maxChars`: when it does not fit, the tables most
 * relevant to `question` (name and column words it mentions, and tables the notes mention) come
 * first and the rest are left out and reported.
 */
export function selectCatalog(
  catalog: Catalog,
  opts: { question: string; notes: string; maxChars: number; maxNotesChars?: number },
): CatalogSelection {
  const maxNotes = opts.maxNotesChars ?? Math.floor(opts.maxChars / 4);
  const notesTruncated = opts.notes.length > maxNotes;
  const notes = notesTruncated ? `${opts.notes.slice(0, maxNotes)}\n… (notes truncated)` : opts.notes;

  const q = words(opts.question);
  const noteWords = words(opts.notes);
  const scored = catalog.tables.map((t, index) => {
    let score = 0;
    for (const w of words(t.name)) {
      if (q.has(w)) score += 5;
      if (noteWords.has(w)) score += 1;
    }
    if (q.has(t.name.toLowerCase())) score += 10;
    for (const c of t.columns) for (const w of words(c.name)) if (q.has(w)) score += 1;
    return { t, index, score, line: renderTable(t) };
  });

  const budget = opts.maxChars - notes.length;
  const all = scored.reduce((n, s) => n + s.line.length + 1, 0);
  let chosen = scored;
  if (all > budget) {
    const ranked = [...scored].sort((a, b) => b.score - a.score || a.index - b.index);
    chosen = [];
    let used = 0;
    for (const s of ranked) {
      if (used + s.line.length + 1 > budget) continue;
      chosen.push(s);
      used += s.line.length + 1;
    }
    chosen.sort((a, b) => a.index - b.index);
  }
  const included = new Set(chosen.map((s) => s.index));
  const omitted = scored.filter((s) => !included.has(s.index)).map((s) => qualified(s.t));

  const parts = [`Catalog (${chosen.length} of ${catalog.tables.length} tables shown):`, ...chosen.map((s) => s.line)];
  if (omitted.length > 0) parts.push(`(${omitted.length} less relevant tables were left out to keep this prompt small.)`);
  if (notes.trim()) parts.push("", "Notes about this source, written by its admins:", notes);
  return {
    text: parts.join("\n"),
    tablesTotal: catalog.tables.length,
    tablesIncluded: chosen.length,
    omittedTables: omitted.slice(0, MAX_OMITTED_LISTED),
    notesTruncated,
  };
}

/** Cuts `text` to `max` characters with a marker, for anything user-controlled that enters a prompt. */
export function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (truncated)`;
}
