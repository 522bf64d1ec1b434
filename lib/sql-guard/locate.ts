// Where in the parsed statement a refusal points. The checks (inspect.ts) say what they refused by name
// in their message ("table pg_shadow is not in the source's catalog", "function pg_sleep is not
// allowed"); this finds the first node of the tree that carries that name and returns the byte location
// the parser recorded for it. Kept apart from the checks so that they stay one walk that decides, and
// this one runs only when a statement was refused.

import { codeDollars } from "./macros.ts";

type Kind = "table" | "column" | "function" | "type" | "operator";

interface Named {
  kind: Kind;
  /** The name as written, lower-cased, unqualified and qualified (`t`, `s.t`). */
  names: string[];
  location: number;
}

function strings(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  const out: string[] = [];
  for (const item of list) {
    const sval = (item as { String?: { sval?: unknown } })?.String?.sval;
    if (typeof sval === "string") out.push(sval.toLowerCase());
  }
  return out;
}

function spellings(parts: string[]): string[] {
  if (parts.length === 0) return [];
  return [parts[parts.length - 1], parts.join(".")];
}

function named(key: string, body: Record<string, unknown>): Named | null {
  const location = body.location;
  if (typeof location !== "number" || location < 0) return null;
  switch (key) {
    case "RangeVar": {
      const rel = typeof body.relname === "string" ? body.relname.toLowerCase() : "";
      const schema = typeof body.schemaname === "string" ? body.schemaname.toLowerCase() : "";
      const alias = (body.alias as { aliasname?: unknown } | undefined)?.aliasname;
      const names = [rel, schema ? `${schema}.${rel}` : rel];
      if (typeof alias === "string") names.push(alias.toLowerCase());
      return { kind: "table", names, location };
    }
    case "ColumnRef":
      return { kind: "column", names: [...spellings(strings(body.fields)), ...strings(body.fields)], location };
    case "FuncCall":
      return { kind: "function", names: spellings(strings(body.funcname)), location };
    case "TypeName":
      return { kind: "type", names: spellings(strings(body.names)), location };
    case "A_Expr":
      return { kind: "operator", names: spellings(strings(body.name)), location };
    case "SQLValueFunction":
      return typeof body.op === "string"
        ? {
            kind: "function",
            names: [
              body.op
                .replace(/^SVFOP_/, "")
                .replace(/_N$/, "")
                .toLowerCase(),
            ],
            location,
          }
        : null;
    default:
      return null;
  }
}

/** Every named node of the tree with a location, in document order. */
function namedNodes(tree: unknown): Named[] {
  const out: Named[] = [];
  const stack: unknown[] = [tree];
  let budget = 200_000; // a bound on work for a hostile tree; the guard has already bounded its depth
  while (stack.length > 0 && budget-- > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push(node[i]);
      continue;
    }
    if (typeof node !== "object" || node === null) continue;
    for (const [key, value] of Object.entries(node)) {
      if (typeof value !== "object" || value === null) continue;
      // A TypeName sits unwrapped under `typeName`.
      const n = named(key === "typeName" ? "TypeName" : key, value as Record<string, unknown>);
      if (n) out.push(n);
      stack.push(value);
    }
  }
  return out.sort((a, b) => a.location - b.location);
}

const LEADS: Array<[RegExp, Kind]> = [
  [/^system column /, "column"],
  [/^column /, "column"],
  [/^table /, "table"],
  [/^TABLESAMPLE /, "function"],
  [/^function /, "function"],
  [/^operator /, "operator"],
  [/^(?:a )?cast to (?:type )?/, "type"],
  [/^type /, "type"],
];

/** The name a refusal message leads with, and the kind of node it names when the message says so. */
function subjectOf(message: string): { name: string; kind: Kind | null } | null {
  let rest = message;
  let kind: Kind | null = null;
  for (const [lead, k] of LEADS) {
    const m = lead.exec(rest);
    if (m) {
      rest = rest.slice(m[0].length);
      kind = k;
      break;
    }
  }
  rest = rest.replace(/^\(\.\.\.\)\./, "");
  const m = /^"?([^\s:"(,]+)"?/.exec(rest);
  if (!m) return null;
  return { name: m[1].toLowerCase(), kind };
}

/**
 * The parser's byte location (into the SQL it parsed) of the node a refusal message names, or undefined
 * when no node of the tree carries that name.
 */
export function locateRefusal(tree: unknown, message: string): number | undefined {
  const subject = subjectOf(message);
  if (!subject) return undefined;
  const nodes = namedNodes(tree);
  const matches = nodes.filter((n) => n.names.includes(subject.name));
  const preferred = subject.kind ? matches.find((n) => n.kind === subject.kind) : undefined;
  return (preferred ?? matches[0])?.location;
}

type ScanSync = (sql: string) => { tokens: Array<{ start: number; text: string }> };

/** The byte offset of the first token of `sql` spelled `word` (case-insensitive), by the real scanner. */
export function locateToken(scanSync: ScanSync, sql: string, word: string): number | undefined {
  const upper = word.toUpperCase();
  try {
    return scanSync(sql).tokens.find((t) => t.text.toUpperCase() === upper)?.start;
  } catch {
    return undefined;
  }
}

const KNOWN_MACROS = new Set(["__timeFilter", "__timeFrom", "__timeTo", "__interval", "__timeGroup"]);

/**
 * The UTF-16 offset of the first `$` the macro lexer refuses (a hand-written `$1` or an unknown `$__x`), or
 * undefined when the problem is elsewhere (an argument list not closed, bad macro arguments).
 */
export function locateMacroProblem(sql: string, dollars: readonly number[] | undefined = codeDollars(sql)?.dollars): number | undefined {
  for (const d of dollars ?? []) {
    const rest = sql.slice(d + 1, d + 66);
    if (/^\d/.test(rest)) return d;
    const name = /^__[A-Za-z0-9_]*/.exec(rest)?.[0];
    if (name && !KNOWN_MACROS.has(name)) return d;
  }
  return undefined;
}
