// The SQL guard: macros to bind parameters, then seven checks in order on the real PostgreSQL parser's
// tree (docs/sql-guard.md). A library function that returns a value and never throws.
import type { Catalog } from "../catalog/types.ts";
import { DEFAULT_ALLOWED_FUNCTIONS, parseFunctionList } from "./allowlist.ts";
import { inspect } from "./inspect.ts";
import { locateMacroProblem, locateRefusal, locateToken } from "./locate.ts";
import { expandMacros, safeName } from "./macros.ts";
import { charOffsetOfByte } from "./offsets.ts";
import { VerdictCache } from "./cache.ts";
import type { Guard, GuardReason, GuardVerdict, MacroParam, VariableDecl } from "./verdict.ts";

export {
  GUARD_REASONS,
  type Guard,
  type GuardReason,
  type GuardVerdict,
  type MacroParam,
  type VariableDecl,
  type VariableParam,
} from "./verdict.ts";
export { intervalFor } from "./interval.ts";
export { MAX_SERIES_ROWS, seriesRowsProblem } from "./series.ts";
export { DEFAULT_ALLOWED_FUNCTIONS, parseFunctionList } from "./allowlist.ts";

/**
 * The dashboard variables a statement names (`$name`, `${name}`), read by the guard's own macro expansion; empty
 * when the statement does not expand (the guard then refuses it with `structure`).
 */
export function variablesNamed(sql: string, variables: readonly VariableDecl[]): Set<string> {
  const expansion = expandMacros(sql, variables);
  const names = new Set<string>();
  if (expansion.ok) for (const p of expansion.params) if (typeof p === "object") names.add(p.variable);
  return names;
}

export interface GuardOptions {
  /** Added to the function allowlist (SQL_GUARD_EXTRA_FUNCTIONS); `schema.name` entries allow that qualified call. */
  extraFunctions?: readonly string[];
  /** Added to the cast type allowlist (SQL_GUARD_EXTRA_TYPES), by pg_catalog name (e.g. `inet`). */
  extraTypes?: readonly string[];
  /** Longest statement in characters (SQL_MAX_LENGTH, default 20000); longer gives `structure`. */
  maxLength?: number;
  /** Verdicts kept per guard (LRU by statement text and catalog version); 0 disables. Default 1000. */
  cacheSize?: number;
}

type Parser = Pick<typeof import("libpg-query"), "parseSync" | "scanSync">;

/** libpg-query once its WebAssembly module answers; null before. */
let parser: Parser | null = null;
let parserLoad: Promise<void> | null = null;

/**
 * Loads libpg-query and its WebAssembly module (about 1.7 MB; imported here on first call, not when this
 * module is imported, so a process can open its listener while it loads). `check` works only after this
 * has resolved; before, it fails closed with `structure`. Every call returns the same load; a failed
 * load is not retried.
 */
export function loadGuardParser(): Promise<void> {
  parserLoad ??= import("libpg-query").then(async (imported) => {
    // A CommonJS module: Node finds its named exports, a bundle's import() hands them over as `default`.
    const mod = typeof imported.loadModule === "function" ? imported : (imported as unknown as { default: typeof imported }).default;
    await mod.loadModule();
    parser = { parseSync: mod.parseSync, scanSync: mod.scanSync };
  });
  return parserLoad;
}

/** True once loadGuardParser() has resolved (parseTree and the guard's checks work). */
export function guardParserLoaded(): boolean {
  return parser !== null;
}

/**
 * The parser's tree of a statement (libpg-query's parseSync), for analyses beside the guard's own (which
 * panels may tick incrementally). Throws before loadGuardParser() has resolved, or on a syntax error.
 */
export function parseTree(sql: string): unknown {
  if (parser === null) throw new Error("the SQL parser is not loaded yet (await loadGuardParser() first)");
  return parser.parseSync(sql);
}

/** Guard options from the validated config (SQL_GUARD_EXTRA_FUNCTIONS, SQL_GUARD_EXTRA_TYPES, SQL_MAX_LENGTH). */
export function guardOptionsFromConfig(config: {
  SQL_GUARD_EXTRA_FUNCTIONS: string;
  SQL_GUARD_EXTRA_TYPES?: string;
  SQL_MAX_LENGTH: number;
}): GuardOptions {
  return {
    extraFunctions: parseFunctionList(config.SQL_GUARD_EXTRA_FUNCTIONS),
    extraTypes: parseFunctionList(config.SQL_GUARD_EXTRA_TYPES ?? ""),
    maxLength: config.SQL_MAX_LENGTH,
  };
}

const DEFAULT_MAX_LENGTH = 20_000;

function reject(reason: GuardReason, message: string, location?: number): GuardVerdict {
  return Object.freeze(
    location === undefined ? { ok: false as const, reason, message } : { ok: false as const, reason, message, location },
  );
}

/** Check 1: nothing but whitespace (scan.l's [ \t\n\r\f\v]) and semicolons. */
function isEmpty(sql: string): boolean {
  for (let i = 0; i < sql.length; i++) {
    if (!isSeparator(sql.charCodeAt(i))) return false;
  }
  return true;
}

/** scan.l's whitespace ([ \t\n\r\f\v]) or a semicolon. */
function isSeparator(c: number): boolean {
  return c === 32 || c === 59 || (c >= 9 && c <= 13);
}

/** The statement without leading and trailing whitespace and semicolons (a loop: a regex anchored at the end rescans every run). */
function trimSeparators(sql: string): string {
  let start = 0;
  let end = sql.length;
  while (start < end && isSeparator(sql.charCodeAt(start))) start++;
  while (end > start && isSeparator(sql.charCodeAt(end - 1))) end--;
  return start === 0 && end === sql.length ? sql : sql.slice(start, end);
}

/** Any UTF-16 surrogate: the regex engine rules most statements out (no surrogate at all) faster than a loop. */
const SURROGATE = /[\uD800-\uDFFF]/;

/** True when the string has an unpaired UTF-16 surrogate (the parser and the server would see different bytes). */
function hasLoneSurrogate(sql: string): boolean {
  if (!SURROGATE.test(sql)) return false;
  for (let i = 0; i < sql.length; i++) {
    const c = sql.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff) {
      const d = sql.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
    }
    return true;
  }
  return false;
}

/** The real scanner's answer on comments (the byte offset of the first, or false); undefined when it cannot scan the text. */
function scannerFindsComment(scanSync: Parser["scanSync"], sql: string): number | false | undefined {
  try {
    for (const t of scanSync(sql).tokens) {
      if (t.tokenName === "SQL_COMMENT" || t.tokenName === "C_COMMENT") return t.start;
    }
    return false;
  } catch {
    return undefined;
  }
}

/** PostgreSQL's syntax error without the part that quotes the statement. */
function parseErrorMessage(err: unknown): string {
  const raw = err instanceof Error ? err.message : "";
  const head = raw.split(/ at or near |:/)[0].trim();
  if (!head || head.length > 80 || /["'$]/.test(head)) return "the statement does not parse";
  return `the statement does not parse: ${safeName(head)}`;
}

/** The first word of a statement, for naming the keyword of a non-SELECT statement. */
function firstWord(sql: string): string {
  const m = /^[ \t\n\r\f\v;(]*([A-Za-z]{1,32})/.exec(sql);
  return m ? m[1].toUpperCase() : "statement";
}

const NO_VARIABLES: readonly VariableDecl[] = Object.freeze([]);

/** A parser location (bytes into the expansion) as an offset into the SQL as written; only for a refusal. */
function written(expansion: { sql: string; originalOffset(at: number): number }, byte: number | undefined): number | undefined {
  return byte === undefined ? undefined : expansion.originalOffset(charOffsetOfByte(expansion.sql, byte));
}

/** The verdict cache's version key: the catalog version, plus the declared variables' names and multi-ness. */
function cacheKey(catalogVersion: string, variables: readonly VariableDecl[]): string {
  if (variables.length === 0) return catalogVersion;
  return `${catalogVersion}\u0000${JSON.stringify(variables.map((v) => [String(v.name), v.multi === true]))}`;
}

/** Creates a guard with its allowlist and verdict cache. Needs `await loadGuardParser()` once first. */
export function createGuard(opts: GuardOptions = {}): Guard {
  const allowed = new Set<string>(DEFAULT_ALLOWED_FUNCTIONS);
  const allowedQualified = new Set<string>();
  for (const raw of opts.extraFunctions ?? []) {
    const f = raw.trim().toLowerCase();
    if (!f) continue;
    if (f.includes(".")) allowedQualified.add(f);
    else allowed.add(f);
  }
  const extraTypes = new Set((opts.extraTypes ?? []).map((t) => t.trim().toLowerCase()).filter(Boolean));
  const maxLength = opts.maxLength ?? DEFAULT_MAX_LENGTH;
  const cache = new VerdictCache<GuardVerdict>(opts.cacheSize ?? 1000);

  function evaluate(
    { parseSync, scanSync }: Parser,
    sql: string,
    catalog: Catalog | null,
    variables: readonly VariableDecl[],
  ): GuardVerdict {
    if (typeof sql !== "string") return reject("structure", "the statement must be a string");
    if (isEmpty(sql)) return reject("empty", "the statement is empty");
    // Bounds and bytes the parser cannot see faithfully come before any scanning.
    if (sql.length > maxLength) {
      return reject("structure", `the statement is longer than SQL_MAX_LENGTH (${maxLength} characters)`);
    }
    if (sql.includes("\u0000")) return reject("structure", "the statement contains a NUL character");
    if (hasLoneSurrogate(sql)) return reject("structure", "the statement is not valid Unicode");

    const expansion = expandMacros(sql, variables);
    // Check 2. A comment needs "--" or "/*" in the text; only then is the real scanner asked.
    if (sql.includes("--") || sql.includes("/*")) {
      const scanned = scannerFindsComment(scanSync, sql);
      // `scanned` is a byte offset when found, and 0 is one: compare, never test for truthiness.
      if (scanned === undefined ? expansion.hasComment : scanned !== false) {
        return reject(
          "comment",
          "comments are not allowed in panel SQL",
          typeof scanned === "number" ? charOffsetOfByte(sql, scanned) : undefined,
        );
      }
    }

    // Check 3.
    if (!expansion.ok) return reject("structure", expansion.message, locateMacroProblem(sql));
    let tree: { stmts?: unknown[] };
    try {
      tree = parseSync(expansion.sql) as { stmts?: unknown[] };
    } catch (err) {
      if (err instanceof RangeError) return reject("structure", "the statement is nested too deeply");
      const cursor = (err as { sqlDetails?: { cursorPosition?: unknown } }).sqlDetails?.cursorPosition;
      return reject("structure", parseErrorMessage(err), written(expansion, typeof cursor === "number" ? cursor : undefined));
    }
    const stmts = Array.isArray(tree.stmts) ? tree.stmts : [];
    if (stmts.length === 0) return reject("empty", "the statement is empty");
    if (stmts.length > 1) return reject("structure", "only one statement is allowed");
    const found = inspect(stmts[0], catalog, allowed, allowedQualified, expansion.params, extraTypes);
    // The parse re-checks the macro lexer: every $n in the tree is one the expansion wrote.
    if (found.paramRefs !== expansion.paramSites || found.maxParam > expansion.params.length) {
      return reject("structure", "hand-written parameters like $1 are not allowed; use the time macros");
    }

    // Checks 4 to 7.
    if (found.keyword !== null) {
      const keyword = found.keyword || firstWord(expansion.sql);
      const at = locateToken(scanSync, sql, keyword.split(" ")[0]);
      return reject(
        "keyword",
        `${keyword} is not allowed: panel SQL must be one read-only SELECT`,
        at === undefined ? undefined : charOffsetOfByte(sql, at),
      );
    }
    if (found.func !== null) return reject("function", found.func, written(expansion, locateRefusal(stmts[0], found.func)));
    if (catalog === null) {
      return reject("catalog", "the source's catalog has never been refreshed; refresh the catalog first");
    }
    if (found.catalog !== null) return reject("catalog", found.catalog, written(expansion, locateRefusal(stmts[0], found.catalog)));
    if (found.time !== null) return reject("time", found.time, written(expansion, locateRefusal(stmts[0], found.time)));
    const params = Object.freeze(expansion.params) as MacroParam[];
    const sqlOut = trimSeparators(expansion.sql);
    if (found.series.length === 0) return Object.freeze({ ok: true as const, sql: sqlOut, params });
    // Time series: the runner checks their rows against the range before running (series.ts).
    return Object.freeze({ ok: true as const, sql: sqlOut, params, series: Object.freeze(found.series.map((b) => Object.freeze(b))) });
  }

  return {
    check(sql, catalog, catalogVersion, variables = NO_VARIABLES) {
      try {
        const loaded = parser;
        if (loaded === null) return reject("structure", "the SQL parser is not loaded yet (await loadGuardParser() first)");
        const cacheable = typeof catalogVersion === "string" && typeof sql === "string";
        // The same text means another statement under other declarations ($x multi or not, or undeclared).
        const key = cacheable ? cacheKey(catalogVersion, variables) : "";
        if (cacheable) {
          const hit = cache.get(key, sql);
          if (hit !== undefined) return hit;
        }
        const verdict = evaluate(loaded, sql, catalog, variables);
        if (cacheable) cache.set(key, sql, verdict);
        return verdict;
      } catch (err) {
        return err instanceof RangeError
          ? reject("structure", "the statement is nested too deeply")
          : reject("structure", "the statement could not be checked");
      }
    },
  };
}
