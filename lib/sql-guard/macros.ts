// Macro expansion over a small lexer that mirrors PostgreSQL's scan.l for exactly what matters here:
// where string literals, quoted identifiers, dollar-quoted strings and comments begin and end, and
// which `$` starts a token. libpg-query's own scanner (scanSync) is about 3x slower than a whole parse
// because it serialises every token to JSON, so it is used only where its answer is needed (comments,
// see guard.ts); the parse that follows re-checks what this lexer decided (ParamRef count).

import type { MacroParam, VariableDecl, VariableParam } from "./verdict.ts";

export type Expansion =
  | {
      ok: true;
      sql: string;
      params: MacroParam[];
      /** How many `$n` the expansion wrote; the parse must find exactly this many ParamRef nodes. */
      paramSites: number;
      hasComment: boolean;
      /**
       * The offset in the SQL as written of an offset in the expanded `sql` (a parse error's or a refused
       * node's location). Text copied through maps exactly; an offset inside what a macro or variable became
       * maps to where that macro or variable starts; the end of `sql` maps to the end of the text.
       */
      originalOffset(expandedOffset: number): number;
    }
  | { ok: false; message: string; hasComment: boolean };

const MACROS = new Set(["__timeFilter", "__timeFrom", "__timeTo", "__interval", "__timeGroup"]);

const STEP_UNITS: Record<string, string> = {
  s: "second",
  sec: "second",
  second: "second",
  seconds: "second",
  m: "minute",
  min: "minute",
  minute: "minute",
  minutes: "minute",
  h: "hour",
  hour: "hour",
  hours: "hour",
  d: "day",
  day: "day",
  days: "day",
  w: "week",
  week: "week",
  weeks: "week",
};
const STEP = /^'\s*(\d{1,6})\s*([a-z]+)\s*'$/;
const SIMPLE_COLUMN =
  /^(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*|"(?:[^"]|"")+")(?:\s*\.\s*(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*|"(?:[^"]|"")+"))*$/;

function isIdentStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c >= 128;
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isIdentCont(c: number): boolean {
  return isIdentStart(c) || isDigit(c) || c === 36;
}
function isDolqCont(c: number): boolean {
  return isIdentStart(c) || isDigit(c);
}
function isSpace(c: number): boolean {
  // scan.l {space}: [ \t\n\r\f\v]
  return c === 32 || (c >= 9 && c <= 13);
}

/** The first offset from `k` on that is not whitespace (or the end). */
function skipSpace(s: string, k: number): number {
  while (k < s.length && isSpace(s.charCodeAt(k))) k++;
  return k;
}

class StructureError extends Error {}

interface Arg {
  raw: string;
  out: string;
}

/**
 * Expands the Grafana-style macros and the dashboard's variables (docs/sql-guard.md) into bind
 * parameters numbered by first appearance. Never splices a value into the text: only `$n`, the user's
 * own column text and fixed SQL are written. `$name` / `${name}` of a declared variable becomes one
 * parameter; a multi-value variable only as `IN ($name)` (or `NOT IN`), rewritten to `= ANY($n)`
 * (`<> ALL($n)`) so that the whole selection is one array parameter. Unknown `$__` macros, unknown
 * variables and hand-written `$n` are structure errors.
 */
export function expandMacros(sql: string, variables: readonly VariableDecl[] = NO_VARIABLES): Expansion {
  const e = new Expander(sql, variables);
  try {
    const out = e.region(0, false).out;
    if (e.firstError !== null) return { ok: false, message: e.firstError, hasComment: e.hasComment };
    const map = e.segments;
    return {
      ok: true,
      sql: out,
      params: e.params,
      paramSites: e.paramSites,
      hasComment: e.hasComment,
      // A method, not an arrow property: no function object is named per expansion.
      originalOffset(at) {
        return originalOffset(map, sql.length, out.length, at);
      },
    };
  } catch (err) {
    const message = err instanceof StructureError ? err.message : "the statement could not be read";
    return { ok: false, message: e.firstError ?? message, hasComment: e.hasComment };
  }
}

/**
 * Where this lexer sees a `$` that starts a token outside literals and comments (parameter, macro or
 * a lone `$`), and whether it saw a comment; null when the text has an unterminated construct.
 * For comparing the lexer with libpg-query's scanner in tests.
 */
export function codeDollars(sql: string): { dollars: number[]; hasComment: boolean } | null {
  const e = new Expander(sql);
  try {
    e.region(0, false);
  } catch {
    return null;
  }
  return { dollars: e.dollars, hasComment: e.hasComment };
}

const NO_VARIABLES: readonly VariableDecl[] = Object.freeze([]);
const NO_VARIABLE_MAP: ReadonlyMap<string, VariableDecl> = new Map();

/** One replaced stretch of the top-level text: `[orig, origEnd)` as written became `[out, outEnd)`. */
interface Segment {
  orig: number;
  origEnd: number;
  out: number;
  outEnd: number;
}

function originalOffset(segments: readonly Segment[], origLength: number, outLength: number, at: number): number {
  if (!Number.isFinite(at) || at <= 0) return 0;
  if (at >= outLength) return origLength;
  // Between replacements the text is copied, so the shift is that of the replacement before.
  let shift = 0;
  for (const seg of segments) {
    if (at < seg.out) break;
    if (at < seg.outEnd) return seg.orig;
    shift = seg.origEnd - seg.outEnd;
  }
  return Math.min(origLength, at + shift);
}

class Expander {
  readonly params: MacroParam[] = [];
  readonly dollars: number[] = [];
  /** Replacements made at the top level, in order (nested ones are inside a top-level macro's). */
  readonly segments: Segment[] = [];
  paramSites = 0;
  hasComment = false;
  /** The first structural problem; lexing goes on so a later comment is still seen (comment wins). */
  firstError: string | null = null;
  private readonly n: number;
  private readonly variables: ReadonlyMap<string, VariableDecl>;
  /** Where the last token started when it was the word NOT (else -1; reset by any other token), to see NOT IN. */
  private notStart = -1;
  /** Length of the top-level output so far (for the offset map). */
  private outLength = 0;

  constructor(
    private readonly s: string,
    variables: readonly VariableDecl[] = NO_VARIABLES,
  ) {
    this.n = s.length;
    // Most statements name no variable: they share one empty map.
    this.variables = variables.length === 0 ? NO_VARIABLE_MAP : new Map(variables.map((v) => [v.name, v]));
  }

  private fail(message: string): void {
    if (this.firstError === null) this.firstError = message;
  }

  private param(p: MacroParam): string {
    let i = typeof p === "string" ? this.params.indexOf(p) : this.params.findIndex((q) => sameVariable(q, p));
    if (i === -1) {
      this.params.push(p);
      i = this.params.length - 1;
    }
    this.paramSites++;
    return `$${i + 1}`;
  }

  /** Appends a top-level replacement of `[from, to)` by `text`, after the copied stretch before it. */
  private replaceTop(out: string, copyFrom: number, from: number, to: number, text: string): string {
    const copied = this.s.slice(copyFrom, from);
    const at = this.outLength + copied.length;
    this.segments.push({ orig: from, origEnd: to, out: at, outEnd: at + text.length });
    this.outLength = at + text.length;
    return out + copied + text;
  }

  /**
   * Lexes from `i`. At top level runs to the end; inside macro arguments stops at the `)` that closes
   * them and splits on top-level commas. Returns the expanded text (and the arguments).
   */
  region(start: number, inArgs: boolean): { out: string; end: number; args: Arg[] } {
    const s = this.s;
    const n = this.n;
    const args: Arg[] = [];
    let out = "";
    let copyFrom = start;
    let argStart = start;
    let depth = 0;
    let i = start;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c === 45 && s.charCodeAt(i + 1) === 45) {
        this.hasComment = true;
        i += 2;
        while (i < n) {
          const d = s.charCodeAt(i);
          if (d === 10 || d === 13) break;
          i++;
        }
        continue;
      }
      if (c === 47 && s.charCodeAt(i + 1) === 42) {
        this.hasComment = true;
        i = this.skipBlockComment(i);
        continue;
      }
      if (isSpace(c)) {
        i++;
        continue;
      }
      const notStart = this.notStart;
      this.notStart = -1;
      if (c === 39) {
        i = this.skipQuoted(i, 39, false);
        continue;
      }
      if (c === 34) {
        i = this.skipQuoted(i, 34, false);
        continue;
      }
      if (c === 36) {
        const r = this.dollar(i);
        if (r.macro !== undefined) {
          // `$1` written before a digit or letter would read as another parameter (`$15`) or fail obscurely.
          if (isDigit(r.macro.charCodeAt(r.macro.length - 1)) && r.end < n && isIdentCont(s.charCodeAt(r.end))) {
            this.fail(`${safeName(s.slice(i, r.end))} must not be followed directly by a letter or digit`);
          }
          if (inArgs) out += s.slice(copyFrom, i) + r.macro;
          else out = this.replaceTop(out, copyFrom, i, r.end, r.macro);
          copyFrom = r.end;
        }
        i = r.end;
        continue;
      }
      if (isIdentStart(c)) {
        let j = i + 1;
        while (j < n && isIdentCont(s.charCodeAt(j))) j++;
        if (j === i + 2 && (c === 105 || c === 73) && (s.charCodeAt(i + 1) | 32) === 110) {
          // IN: a multi-value variable as its whole list becomes one array parameter.
          const list = this.multiList(j);
          if (list !== null) {
            const negated = notStart !== -1;
            const start = negated ? notStart : i;
            const text = negated ? `<> ALL(${this.param(list.param)})` : `= ANY(${this.param(list.param)})`;
            if (inArgs) out += s.slice(copyFrom, start) + text;
            else out = this.replaceTop(out, copyFrom, start, list.end, text);
            copyFrom = list.end;
            i = list.end;
            continue;
          }
        }
        if (j - i === 3 && (c | 32) === 110 && (s.charCodeAt(i + 1) | 32) === 111 && (s.charCodeAt(i + 2) | 32) === 116) {
          this.notStart = i;
        }
        if (j === i + 1) {
          const q = s.charCodeAt(j);
          if ((c === 101 || c === 69) && q === 39) {
            i = this.skipQuoted(j, 39, true);
            continue;
          }
          if ((c === 117 || c === 85) && q === 38) {
            const q2 = s.charCodeAt(j + 1);
            if (q2 === 39 || q2 === 34) {
              i = this.skipQuoted(j + 1, q2, false);
              continue;
            }
          }
        }
        i = j;
        continue;
      }
      if (isDigit(c)) {
        let j = i + 1;
        while (j < n) {
          const d = s.charCodeAt(j);
          if (!(isDigit(d) || d === 46 || d === 95 || (d >= 97 && d <= 122) || (d >= 65 && d <= 90))) break;
          j++;
        }
        i = j;
        continue;
      }
      if (inArgs) {
        if (c === 40) depth++;
        else if (c === 41) {
          if (depth === 0) {
            out += s.slice(copyFrom, i);
            args.push({ raw: s.slice(argStart, i), out });
            return { out: "", end: i + 1, args };
          }
          depth--;
        } else if (c === 44 && depth === 0) {
          out += s.slice(copyFrom, i);
          args.push({ raw: s.slice(argStart, i), out });
          out = "";
          copyFrom = i + 1;
          argStart = i + 1;
        }
      }
      i++;
    }
    if (inArgs) throw new StructureError("a macro's argument list is not closed");
    out += s.slice(copyFrom, n);
    this.outLength += n - copyFrom;
    return { out, end: n, args };
  }

  private skipBlockComment(i: number): number {
    // scan.l: C-style comments nest.
    const s = this.s;
    let depth = 0;
    while (i < this.n) {
      if (s.charCodeAt(i) === 47 && s.charCodeAt(i + 1) === 42) {
        depth++;
        i += 2;
      } else if (s.charCodeAt(i) === 42 && s.charCodeAt(i + 1) === 47) {
        depth--;
        i += 2;
        if (depth === 0) return i;
      } else i++;
    }
    throw new StructureError("unterminated /* comment");
  }

  /** Skips a quoted token opening at `i`; `backslash` for E'' strings. Doubled quotes stay inside. */
  private skipQuoted(i: number, quote: number, backslash: boolean): number {
    const s = this.s;
    let j = i + 1;
    for (;;) {
      if (j >= this.n) throw new StructureError(quote === 34 ? "unterminated quoted identifier" : "unterminated string literal");
      const c = s.charCodeAt(j);
      if (backslash && c === 92) {
        j += 2;
        continue;
      }
      if (c === quote) {
        // A backslash in a '...' literal is an ordinary character: the runner pins
        // standard_conforming_strings=on on every source connection, so the server lexes as this does.
        if (s.charCodeAt(j + 1) === quote) {
          j += 2;
          continue;
        }
        j++;
        // scan.l: an E'' string continues across whitespace holding a newline, still with escapes.
        if (backslash) {
          let k = j;
          let newline = false;
          while (k < this.n && isSpace(s.charCodeAt(k))) {
            const d = s.charCodeAt(k);
            if (d === 10 || d === 13) newline = true;
            k++;
          }
          if (newline && s.charCodeAt(k) === 39) {
            j = k + 1;
            continue;
          }
        }
        return j;
      }
      j++;
    }
  }

  /** A `$` at the start of a token: parameter, dollar quote, macro, or a lone `$`. */
  private dollar(i: number): { end: number; macro?: string } {
    const s = this.s;
    const n = this.n;
    let j = i + 1;
    if (isDigit(s.charCodeAt(j))) {
      this.dollars.push(i);
      while (j < n && isDigit(s.charCodeAt(j))) j++;
      this.fail("hand-written parameters like $1 are not allowed; use the time macros");
      return { end: j };
    }
    if (j < n && isIdentStart(s.charCodeAt(j))) {
      j++;
      while (j < n && isDolqCont(s.charCodeAt(j))) j++;
    }
    if (s.charCodeAt(j) === 36) {
      const delim = s.slice(i, j + 1);
      const close = s.indexOf(delim, j + 1);
      if (close === -1) throw new StructureError("unterminated dollar-quoted string");
      return { end: close + delim.length };
    }
    this.dollars.push(i);
    if (j === i + 1 && s.charCodeAt(j) === 123) return this.braced(i);
    const name = s.slice(i + 1, j);
    if (name === "") return { end: i + 1 };
    if (!name.startsWith("__")) return this.variable(name, j);
    if (!MACROS.has(name)) {
      this.fail(`unknown macro $${safeName(name)}`);
      return { end: j };
    }
    return this.macro(name, j);
  }

  /** `${name}`: a variable (or `${__interval}`), written with braces so that text can follow it directly. */
  private braced(i: number): { end: number; macro?: string } {
    const s = this.s;
    let j = i + 2;
    while (j < this.n && j < i + 200 && s.charCodeAt(j) !== 125 && s.charCodeAt(j) !== 36) j++;
    if (s.charCodeAt(j) !== 125) {
      this.fail("${ is not closed by }; write ${name} for a variable");
      return { end: i + 2 };
    }
    const name = s.slice(i + 2, j);
    const end = j + 1;
    if (name.includes(":")) {
      this.fail(`\${${safeName(name)}}: formats are not supported; variables are bound as parameters, never spliced`);
      return { end };
    }
    if (name === "__interval") return { end, macro: `${this.param("interval")}::interval` };
    if (name.startsWith("__")) {
      this.fail(`unknown macro \${${safeName(name)}}`);
      return { end };
    }
    if (!BARE_NAME.test(name)) {
      this.fail(`\${${safeName(name)}} is not a variable name`);
      return { end };
    }
    return this.variable(name, end);
  }

  /** A `$name` outside IN: a single-value variable's parameter. */
  private variable(name: string, end: number): { end: number; macro?: string } {
    const v = this.variables.get(name);
    if (v === undefined) {
      this.fail(`unknown variable $${safeName(name)}: declare it in the dashboard's variables`);
      return { end };
    }
    if (v.multi === true) {
      this.fail(`$${name} is a multi-value variable: use it as IN ($${name})`);
      return { end };
    }
    return { end, macro: this.param({ variable: name, array: false }) };
  }

  /**
   * After IN at `j`: `( $name )` or `( ${name} )` naming a multi-value variable, and nothing else in the
   * parentheses. Null otherwise (the list is lexed as usual, so a multi-value variable elsewhere is refused).
   */
  private multiList(j: number): { param: VariableParam; end: number } | null {
    const s = this.s;
    const n = this.n;
    let k = skipSpace(s, j);
    if (s.charCodeAt(k) !== 40) return null;
    k = skipSpace(s, k + 1);
    if (s.charCodeAt(k) !== 36) return null;
    const dollarAt = k;
    let name: string;
    if (s.charCodeAt(k + 1) === 123) {
      const close = s.indexOf("}", k + 2);
      if (close === -1) return null;
      name = s.slice(k + 2, close);
      k = close + 1;
    } else {
      let e = k + 1;
      while (e < n && isDolqCont(s.charCodeAt(e))) e++;
      name = s.slice(k + 1, e);
      k = e;
    }
    const v = this.variables.get(name);
    if (v === undefined || v.multi !== true) return null;
    k = skipSpace(s, k);
    if (s.charCodeAt(k) !== 41) return null;
    this.dollars.push(dollarAt);
    return { param: { variable: name, array: true }, end: k + 1 };
  }

  private openParen(name: string, j: number): number {
    const s = this.s;
    while (j < this.n && isSpace(s.charCodeAt(j))) j++;
    if (s.charCodeAt(j) !== 40) throw new StructureError(`$${name} needs an argument list`);
    return j + 1;
  }

  private macro(name: string, j: number): { end: number; macro?: string } {
    if (name === "__interval") return { end: j, macro: `${this.param("interval")}::interval` };
    const r = this.region(this.openParen(name, j), true);
    const args = r.args;
    if (name === "__timeFrom" || name === "__timeTo") {
      if (args.length !== 1 || args[0].raw.trim() !== "") {
        this.fail(`$${name}() takes no arguments`);
        return { end: r.end };
      }
      return { end: r.end, macro: this.param(name === "__timeFrom" ? "from" : "to") };
    }
    if (name === "__timeFilter") {
      if (args.length !== 1 || args[0].out.trim() === "") {
        this.fail("$__timeFilter(column) takes exactly one column");
        return { end: r.end };
      }
      const col = column(args[0].out);
      // Parenthesised, so an operator written after the macro cannot take its AND as an operand.
      return { end: r.end, macro: `(${col} BETWEEN ${this.param("from")} AND ${this.param("to")})` };
    }
    // __timeGroup(column, step)
    if (args.length !== 2 || args[0].out.trim() === "") {
      this.fail("$__timeGroup(column, step) takes a column and a step");
      return { end: r.end };
    }
    const stepRaw = args[1].raw.trim();
    let step: string;
    if (stepRaw === "$__interval") step = args[1].out.trim();
    else {
      const m = STEP.exec(stepRaw);
      const unit = m ? STEP_UNITS[m[2]] : undefined;
      const count = m ? Number(m[1]) : 0;
      if (!m || !unit || count === 0) {
        this.fail("$__timeGroup step must be a literal like '5m' or $__interval");
        return { end: r.end };
      }
      step = `interval '${count} ${unit}${count === 1 ? "" : "s"}'`;
    }
    return { end: r.end, macro: `date_bin(${step}, ${column(args[0].out)}, timestamptz 'epoch')` };
  }
}

const BARE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function sameVariable(q: MacroParam, p: VariableParam): boolean {
  return typeof q !== "string" && q.variable === p.variable && q.array === p.array;
}

/** The column text as written, parenthesised unless it is a plain (qualified) name. */
function column(text: string): string {
  const t = text.trim();
  return SIMPLE_COLUMN.test(t) ? t : `(${t})`;
}

const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/** A user-supplied name made safe to put in a message: printable, bounded. */
export function safeName(name: string): string {
  // Most names are short and plain: return them without the copy the replacement would make.
  if (name.length <= 64 && !CONTROL_CHARACTER.test(name)) return name;
  const clean = name.replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");
  return clean.length > 64 ? `${clean.slice(0, 64)}...` : clean;
}
