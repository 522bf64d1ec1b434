// The size analysis: every expression gets a size class, and every call is checked against its declaration
// (declarations.ts) with the classes of its arguments. statement_timeout bounds time, not memory, and a call
// that does not check for cancellation is not bounded by time either; so what a call can build or how long it
// can search must follow from what its arguments can be. The rules are documented in docs/sql-guard.md,
// "Size classes".
import type { FunctionDeclaration, OperatorDeclaration } from "./declarations.ts";
import { numberConst, stringConst } from "./nodes.ts";

/** Bounded: a literal, a bind parameter, a bounded computation of those. */
export const BOUNDED = 0;
/** Row-sized: a column of a catalog table's row, or a linear function of row-sized values. */
export const ROW = 1;
/** Unbounded: an aggregate that concatenates rows, and anything derived from one. */
export const UNBOUNDED = 2;
export type SizeClass = typeof BOUNDED | typeof ROW | typeof UNBOUNDED;

/**
 * The size of a value. Bounded: `bytes` at most. Row-sized: at most `w` row values plus `bytes`. Unbounded:
 * at most `w` aggregates' worth, and computing it allocated `copies` aggregates' worth of memory.
 */
export interface Size {
  readonly cls: SizeClass;
  readonly w: number;
  readonly bytes: number;
  readonly copies: number;
}

/** Largest bounded value, in bytes (a literal, a padded format, a product of literals). */
export const MAX_BOUNDED_BYTES = 100_000;
/** Largest row-sized value, in row values (x || x counts 2; each CTE that doubles a value doubles it). */
export const MAX_ROW_WEIGHT = 1_000;
/** Most aggregates' worth of memory one unbounded value may cost (each copy of a concatenated aggregate counts). */
export const MAX_UNBOUNDED_COPIES = 8;
/** What a concatenating aggregate may add to each row beyond the row's own values (format padding, literals). */
export const MAX_AGGREGATED_PADDING = 256;
/** How many row values one aggregated row may repeat. */
export const MAX_AGGREGATED_WEIGHT = 16;
/** Largest bounded argument of a quadratic search: the product of two is at most 10^8 steps. */
export const MAX_SEARCH_BYTES = 10_000;
/** Largest size a literal argument may set (format width, lpad length, repeat count). */
export const MAX_OUTPUT_WIDTH = 1000;
/** Largest exponent of `^`, power() and exp(), as a number literal. */
export const MAX_EXPONENT = 64;
/** Digits a numeric literal may have, before or after the point (1e65000 has 65001). */
export const MAX_NUMERIC_DIGITS = 40;

export const FIXED: Size = Object.freeze({ cls: BOUNDED, w: 0, bytes: 16, copies: 0 });
export const ONE_ROW: Size = Object.freeze({ cls: ROW, w: 1, bytes: 0, copies: 0 });
/** The output of a concatenating aggregate. */
export const AGGREGATE: Size = Object.freeze({ cls: UNBOUNDED, w: 1, bytes: 0, copies: 1 });

export function bounded(bytes: number): Size {
  return { cls: BOUNDED, w: 0, bytes, copies: 0 };
}

/** A value that holds all of its inputs (concatenation, arithmetic, a row constructor). */
export function sum(sizes: readonly Size[]): Size {
  let cls: SizeClass = BOUNDED;
  for (const s of sizes) if (s.cls > cls) cls = s.cls;
  let w = 0;
  let bytes = 0;
  let copies = 0;
  for (const s of sizes) {
    if (s.cls === cls) {
      w += s.w;
      bytes += s.bytes;
    } else if (s.cls === BOUNDED) bytes += s.bytes;
    copies += s.copies;
  }
  // Building an unbounded value allocates it once more.
  return { cls, w, bytes, copies: cls === UNBOUNDED ? copies + w : 0 };
}

/** A value that is one of its inputs or a part of one (coalesce, CASE, min, substring). */
export function pick(sizes: readonly Size[]): Size {
  let best: Size = bounded(0);
  for (const s of sizes) {
    if (s.cls > best.cls || (s.cls === best.cls && (s.w > best.w || (s.w === best.w && s.bytes > best.bytes)))) best = s;
  }
  let copies = 0;
  for (const s of sizes) copies = Math.max(copies, s.copies);
  return copies === best.copies ? best : { ...best, copies };
}

/** `s` grown by a constant factor (a replacement longer than its pattern, a JSON escape). */
export function scale(s: Size, factor: number): Size {
  if (factor === 1) return s;
  const w = s.w * factor;
  return { cls: s.cls, w, bytes: s.bytes * factor, copies: s.cls === UNBOUNDED ? s.copies + w : 0 };
}

/** The first limit a value exceeds, or null. */
export function sizeProblem(s: Size, what: string): string | null {
  if (s.cls === BOUNDED && s.bytes > MAX_BOUNDED_BYTES) return `${what} builds a value over ${MAX_BOUNDED_BYTES} bytes`;
  if (s.cls === ROW && s.w > MAX_ROW_WEIGHT) return `${what} builds a value of over ${MAX_ROW_WEIGHT} row values`;
  if (s.cls === ROW && s.bytes > MAX_BOUNDED_BYTES) return `${what} builds a value over ${MAX_BOUNDED_BYTES} bytes`;
  if (s.cls === UNBOUNDED && s.copies > MAX_UNBOUNDED_COPIES) {
    return `${what} copies a concatenated aggregate more than ${MAX_UNBOUNDED_COPIES} times`;
  }
  return null;
}

/** The problem with a numeric literal's text (its digit count), or null. */
export function numericLiteralProblem(text: string): string | null {
  const m = /^\s*[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (!m) return null;
  const int = (m[1] ?? "").replace(/^0+/, "");
  const frac = m[2] ?? "";
  const exp = m[3] === undefined ? 0 : Number(m[3]);
  if (!Number.isFinite(exp) || Math.abs(exp) > MAX_NUMERIC_DIGITS || int.length + Math.max(0, exp) > MAX_NUMERIC_DIGITS) {
    return `number literals may have at most ${MAX_NUMERIC_DIGITS} digits`;
  }
  if (frac.length + Math.max(0, -exp) > MAX_NUMERIC_DIGITS) return `number literals may have at most ${MAX_NUMERIC_DIGITS} digits`;
  return null;
}

/**
 * The size of a literal node (A_Const). Its problem (numericLiteralProblem of a numeric literal's text) is
 * the walk's to report, once, where it visits the literal.
 */
export function literalSize(c: Record<string, unknown>): Size {
  const f = c.fval as { fval?: unknown } | undefined;
  if (f && typeof f.fval === "string") return bounded(f.fval.length);
  const s = c.sval as { sval?: unknown } | undefined;
  if (s) return bounded(typeof s.sval === "string" ? s.sval.length * 4 : 0);
  const b = c.bsval as { bsval?: unknown } | undefined;
  if (b) return bounded(typeof b.bsval === "string" ? b.bsval.length : 0);
  return FIXED;
}

/** One argument of a call: its node (for literal rules) and its size. */
export interface Arg {
  node: unknown;
  size: Size;
}

export interface CallVerdict {
  size: Size;
  problem: string | null;
}

const CLASS_NAMES = ["bounded", "row-sized", "unbounded"] as const;

/**
 * The problem with an argument of a call that multiplies, searches one input in another or cannot be
 * cancelled: only bounded or row-sized values, bounded ones small enough for a search.
 */
function restrictedArg(
  name: string,
  decl: { size: string; time: string; cancellable: boolean },
  a: Arg,
  quadratic: boolean,
): string | null {
  if (a.size.cls === UNBOUNDED) {
    const why =
      decl.size === "multiplies" || decl.size === "set-by-arg" || decl.size === "concatenates"
        ? "it multiplies its input"
        : quadratic
          ? "its time is the product of its inputs"
          : "it cannot be cancelled";
    return `${name} over an unbounded value (an aggregate that concatenates rows) is not allowed: ${why}`;
  }
  if (quadratic && a.size.cls === BOUNDED && a.size.bytes > MAX_SEARCH_BYTES) {
    return `${name} over a value of over ${MAX_SEARCH_BYTES} bytes is not allowed: its time is the product of its inputs`;
  }
  return null;
}

/** A literal number argument of at most `max` (absolute), or undefined. */
function smallLiteral(node: unknown, max: number): number | undefined {
  const v = numberConst(node);
  return v !== undefined && Math.abs(v) <= max ? v : undefined;
}

/**
 * The problem with a format string, or null: every width must be digits up to MAX_OUTPUT_WIDTH (never `*`,
 * which takes the width from an argument). Follows PostgreSQL's text_format: %[n$][-][width]type. Also
 * returns how many times each argument is used and the total padding.
 */
export function scanFormat(fmt: string): { problem: string | null; uses: number[]; padding: number } {
  const uses: number[] = [];
  let padding = 0;
  let next = 0;
  for (let i = 0; i < fmt.length; i++) {
    if (fmt[i] !== "%") continue;
    i++;
    if (fmt[i] === "%") continue;
    let j = i;
    while (j < fmt.length && fmt[j] >= "0" && fmt[j] <= "9") j++;
    let arg = next;
    if (fmt[j] === "$" && j > i) {
      arg = Number(fmt.slice(i, j)) - 1;
      i = j + 1;
    }
    while (fmt[i] === "-") i++;
    if (fmt[i] === "*") return { problem: "format widths must be number literals, not *", uses, padding };
    let width = "";
    while (i < fmt.length && fmt[i] >= "0" && fmt[i] <= "9") width += fmt[i++];
    if (width !== "" && (width.length > 6 || Number(width) > MAX_OUTPUT_WIDTH)) {
      return { problem: `format widths must be at most ${MAX_OUTPUT_WIDTH}`, uses, padding };
    }
    if (fmt[i] === "$") return { problem: "format widths must be number literals", uses, padding };
    padding += width === "" ? 0 : Number(width);
    if (arg >= 0 && arg < 10_000) uses[arg] = (uses[arg] ?? 0) + 1;
    next = arg + 1;
  }
  return { problem: null, uses, padding };
}

/** format(fmt, ...): a literal format; an argument it uses more than once is multiplied by that count. */
function formatSize(args: readonly Arg[]): CallVerdict {
  const fmt = stringConst(args[0]?.node);
  if (fmt === undefined) return { size: ONE_ROW, problem: "format needs a literal format string" };
  const { problem, uses, padding } = scanFormat(fmt);
  if (problem) return { size: ONE_ROW, problem };
  const parts: Size[] = [bounded(fmt.length + padding)];
  for (let i = 1; i < args.length; i++) {
    const n = uses[i - 1] ?? 0;
    if (n === 0) continue;
    if (n > 1 && args[i].size.cls === UNBOUNDED) {
      return { size: AGGREGATE, problem: "format over an unbounded value (an aggregate that concatenates rows) uses it more than once" };
    }
    parts.push(scale(args[i].size, n));
  }
  return { size: sum(parts), problem: null };
}

/** The size of a literal string argument in characters, or undefined when it is not a literal. */
function literalLength(node: unknown): number | undefined {
  const s = stringConst(node);
  return s === undefined ? undefined : s.length;
}

/**
 * replace(s, from, to): every match of `from` becomes `to`. Literal `from` and `to`: the output is at most
 * |s| × ⌈|to| / |from|⌉. A computed `to`: up to |s| × |to|, a product.
 */
function replaceSize(args: readonly Arg[]): CallVerdict {
  const [s, from, to] = args;
  const toLen = literalLength(to?.node);
  const fromLen = literalLength(from?.node);
  if (toLen !== undefined) {
    if (fromLen === 0) return { size: s.size, problem: null };
    const factor = Math.max(1, Math.ceil(toLen / Math.max(1, fromLen ?? 1)));
    return { size: scale(s.size, factor), problem: null };
  }
  return { size: multiplied([s.size, to.size]), problem: null };
}

/**
 * regexp_replace(s, pattern, replacement, ...): each match (at most |s| + 1 of them, empty ones included)
 * becomes the replacement, whose back-references repeat the match. A literal replacement of r characters:
 * at most |s| × (1 + r). A computed one: a product.
 */
function regexpReplaceSize(args: readonly Arg[]): CallVerdict {
  const [s, , replacement] = args;
  const r = literalLength(replacement?.node);
  if (r !== undefined) return { size: scale(s.size, 1 + r), problem: null };
  return { size: multiplied([s.size, replacement.size]), problem: null };
}

/** The product of two sizes: bounded when both are, else unbounded. */
function multiplied(sizes: readonly Size[]): Size {
  if (sizes.every((s) => s.cls === BOUNDED)) return bounded(sizes.reduce((p, s) => p * Math.max(1, s.bytes), 1));
  return AGGREGATE;
}

/** concat_ws(sep, a, b, ...): the separator is written between every two values. */
function concatWsSize(args: readonly Arg[]): CallVerdict {
  const [sep, ...rest] = args;
  return { size: sum([scale(sep.size, Math.max(1, rest.length - 1)), ...rest.map((a) => a.size)]), problem: null };
}

/** A declared function's or operator's output size from its arguments, and the first problem with the call. */
export function callSize(
  name: string,
  decl: FunctionDeclaration | OperatorDeclaration,
  args: readonly Arg[],
  asAggregate: boolean,
): CallVerdict {
  const quadraticFrom = "quadraticFrom" in decl ? (decl.quadraticFrom ?? 0) : 0;
  const quadratic = decl.time === "quadratic" && args.length >= quadraticFrom;
  const restricted =
    quadratic || !decl.cancellable || decl.size === "multiplies" || decl.size === "set-by-arg" || decl.size === "concatenates";
  if (restricted) {
    for (const a of args) {
      const problem = restrictedArg(name, decl, a, quadratic);
      if (problem) return { size: AGGREGATE, problem };
    }
  }
  const sizes: Size[] = new Array(args.length);
  for (let i = 0; i < args.length; i++) sizes[i] = args[i].size;
  const rule = "rule" in decl ? decl.rule : undefined;
  let out: CallVerdict;
  switch (rule) {
    case "format":
      out = formatSize(args);
      break;
    case "replace":
      out = replaceSize(args);
      break;
    case "regexp_replace":
      out = regexpReplaceSize(args);
      break;
    case "concat_ws":
      out = concatWsSize(args);
      break;
    default:
      out = { size: effectSize(name, decl, args, sizes, asAggregate), problem: null };
  }
  if (out.problem === null && decl.size === "set-by-arg") out.problem = setByArgProblem(name, decl, args);
  if (out.problem === null && decl.size === "concatenates") out.problem = aggregatedRowProblem(name, sizes);
  if (out.problem === null) out.problem = sizeProblem(out.size, name);
  return out;
}

function effectSize(
  name: string,
  decl: FunctionDeclaration | OperatorDeclaration,
  args: readonly Arg[],
  sizes: readonly Size[],
  asAggregate: boolean,
): Size {
  switch (decl.size) {
    case "fixed":
      return FIXED;
    case "pick":
      return pick(sizes);
    case "linear":
      return scale(sum(sizes), decl.factor ?? 1);
    case "concatenates":
      return asAggregate ? AGGREGATE : sum(sizes);
    case "set-by-arg": {
      const n = numberConst(args[decl.sizeArg ?? 0]?.node) ?? MAX_OUTPUT_WIDTH;
      const base = args.filter((_, i) => i !== decl.sizeArg).map((a) => a.size);
      // lpad/rpad write exactly n characters; repeat and an exponent multiply their input by n.
      if (name === "lpad" || name === "rpad") return bounded(Math.abs(n) * 4);
      return scale(sum(base), Math.max(1, Math.ceil(Math.abs(n))));
    }
    default:
      return multiplied(sizes);
  }
}

/** The size-setting argument must be a number literal under the cap. */
function setByArgProblem(name: string, decl: FunctionDeclaration | OperatorDeclaration, args: readonly Arg[]): string | null {
  const i = decl.sizeArg ?? 0;
  const exponent = name === "^" || name === "power" || name === "exp";
  const max = exponent ? MAX_EXPONENT : MAX_OUTPUT_WIDTH;
  if (smallLiteral(args[i]?.node, max) === undefined) {
    return exponent
      ? `${name} needs a number literal of at most ${MAX_EXPONENT} as its exponent`
      : `${name} needs a number literal of at most ${MAX_OUTPUT_WIDTH} as its size`;
  }
  return null;
}

/** What one row of a concatenating aggregate may be: row values repeated at most 16 times, padding at most 256 bytes. */
function aggregatedRowProblem(name: string, sizes: readonly Size[]): string | null {
  for (const s of sizes) {
    if (s.w > MAX_AGGREGATED_WEIGHT || s.bytes > MAX_AGGREGATED_PADDING) {
      return `${name} over rows built larger than their values (over ${MAX_AGGREGATED_PADDING} bytes or ${MAX_AGGREGATED_WEIGHT} row values each) is not allowed`;
    }
  }
  return null;
}

/** The problem with sorting, grouping or de-duplicating a value of this size (temp files), or null. */
export function sortProblem(s: Size, what: string): string | null {
  return s.cls === UNBOUNDED ? `${what} over an unbounded value (an aggregate that concatenates rows) is not allowed` : null;
}

export function className(s: Size): string {
  return CLASS_NAMES[s.cls];
}
