// What every allowed function and operator does to the size of values and how long one call can run: the
// table the size analysis (sizes.ts) reads. A name on the allowlist without a declaration here is refused,
// and declarations.pg.test.ts checks the table against the embedded PostgreSQL's pg_proc and pg_operator:
// every allowlisted name is declared, with every argument count (overload) the server has for it.
// docs/sql-guard.md, "Size classes", explains the effects with examples.

/**
 * What a call does to sizes:
 * - `fixed`: a value of fixed size whatever the inputs (a number, a boolean, a timestamp);
 * - `linear`: at most `factor` times the sum of its inputs (concatenation, case mapping, arithmetic);
 * - `pick`: one of its inputs or a part of one (coalesce, min, lag, substring);
 * - `set-by-arg`: a size chosen by its argument `sizeArg` (lpad's length, repeat's count, an exponent);
 * - `multiplies`: up to the product of its inputs' sizes (a computed replacement per match);
 * - `concatenates`: an aggregate that concatenates every row it reads.
 * `rule` names a function whose effect depends on literal arguments (a format string, a replacement).
 */
export type SizeEffect = "fixed" | "linear" | "pick" | "set-by-arg" | "multiplies" | "concatenates";

/** How one call's time grows: with the sum of its inputs, or with their product (a search of one in the other). */
export type TimeEffect = "linear" | "quadratic";

/** Functions whose effect the analysis works out from their literal arguments (sizes.ts). */
export type SizeRule = "format" | "replace" | "regexp_replace" | "generate_series" | "concat_ws";

export interface FunctionDeclaration {
  /** pg_proc.prokind of its overloads: f function, a aggregate, w window ("wa": window and hypothetical-set aggregate). */
  kind: "f" | "a" | "w" | "wa";
  size: SizeEffect;
  /** For `linear`: the output is at most factor × the inputs (normalize NFKC expands a character up to 18). */
  factor?: number;
  /** For `set-by-arg`: the argument (0-based) that sets the output size. */
  sizeArg?: number;
  time: TimeEffect;
  /** Quadratic only from this many arguments on (rtrim(s) is linear, rtrim(s, chars) searches chars per character). */
  quadraticFrom?: number;
  /** False when one call can run long without checking for cancellation (statement_timeout cannot stop it). */
  cancellable: boolean;
  /** Argument counts covered (for an ordered-set aggregate, direct and WITHIN GROUP arguments together). */
  arities: readonly number[];
  /** Variadic: any count from this one on. */
  variadicFrom?: number;
  rule?: SizeRule;
  /** Not in core PostgreSQL (checked only where the extension is installed). */
  extension?: string;
  /** Written by the grammar (TRIM, COALESCE, GREATEST, ...), not a pg_proc function of that name. */
  syntax?: true;
}

export interface OperatorDeclaration {
  size: SizeEffect;
  factor?: number;
  sizeArg?: number;
  time: TimeEffect;
  cancellable: boolean;
  /** pg_operator.oprkind forms covered: b infix, l prefix. */
  kinds: readonly ("b" | "l")[];
}

type F = FunctionDeclaration;
const fn = (size: SizeEffect, arities: readonly number[], more: Partial<F> = {}): F => ({
  kind: "f",
  size,
  time: "linear",
  cancellable: true,
  arities,
  ...more,
});
const agg = (size: SizeEffect, arities: readonly number[], more: Partial<F> = {}): F => fn(size, arities, { kind: "a", ...more });
const win = (size: SizeEffect, arities: readonly number[]): F => fn(size, arities, { kind: "w" });
/** A search of one input in another: time is the product of their sizes, and nothing checks for cancellation. */
const search = { time: "quadratic", cancellable: false } as const;
/** Numeric arithmetic: digit-by-digit products, one call not cancellable. */
const numeric = { time: "quadratic", cancellable: false } as const;

/** Every function of the allowlists (default and the ones a deployment may add), by name. */
export const FUNCTION_DECLARATIONS: Readonly<Record<string, FunctionDeclaration>> = {
  // aggregates
  count: agg("fixed", [0, 1]),
  sum: agg("pick", [1]),
  avg: agg("pick", [1]),
  min: agg("pick", [1]),
  max: agg("pick", [1]),
  stddev: agg("fixed", [1]),
  stddev_pop: agg("fixed", [1]),
  stddev_samp: agg("fixed", [1]),
  variance: agg("fixed", [1]),
  var_pop: agg("fixed", [1]),
  var_samp: agg("fixed", [1]),
  corr: agg("fixed", [2]),
  covar_pop: agg("fixed", [2]),
  covar_samp: agg("fixed", [2]),
  regr_slope: agg("fixed", [2]),
  regr_intercept: agg("fixed", [2]),
  percentile_cont: agg("fixed", [2]),
  percentile_disc: agg("pick", [2]),
  mode: agg("pick", [1]),
  bool_and: agg("fixed", [1]),
  bool_or: agg("fixed", [1]),
  every: agg("fixed", [1]),
  string_agg: agg("concatenates", [2]),
  array_agg: agg("concatenates", [1]),
  json_agg: agg("concatenates", [1]),
  jsonb_agg: agg("concatenates", [1]),
  json_object_agg: agg("concatenates", [2]),
  jsonb_object_agg: agg("concatenates", [2]),
  // window functions (rank and its kin are also hypothetical-set aggregates: rank(x) WITHIN GROUP (ORDER BY y))
  row_number: win("fixed", [0]),
  rank: fn("fixed", [0], { kind: "wa", variadicFrom: 1 }),
  dense_rank: fn("fixed", [0], { kind: "wa", variadicFrom: 1 }),
  percent_rank: fn("fixed", [0], { kind: "wa", variadicFrom: 1 }),
  cume_dist: fn("fixed", [0], { kind: "wa", variadicFrom: 1 }),
  ntile: win("fixed", [1]),
  lag: win("pick", [1, 2, 3]),
  lead: win("pick", [1, 2, 3]),
  first_value: win("pick", [1]),
  last_value: win("pick", [1]),
  nth_value: win("pick", [2]),
  // math (numeric arguments can carry thousands of digits: the digit-by-digit ones are declared quadratic)
  abs: fn("linear", [1]),
  ceil: fn("linear", [1]),
  ceiling: fn("linear", [1]),
  floor: fn("linear", [1]),
  round: fn("linear", [1, 2]),
  trunc: fn("linear", [1, 2]),
  sign: fn("fixed", [1]),
  sqrt: fn("linear", [1], numeric),
  cbrt: fn("fixed", [1]),
  power: fn("set-by-arg", [2], { ...numeric, sizeArg: 1 }),
  exp: fn("set-by-arg", [1], { ...numeric, sizeArg: 0 }),
  ln: fn("linear", [1], numeric),
  log: fn("linear", [1, 2], numeric),
  log10: fn("linear", [1], numeric),
  mod: fn("linear", [2], numeric),
  div: fn("linear", [2], numeric),
  width_bucket: fn("fixed", [2, 4]),
  greatest: fn("pick", [], { variadicFrom: 1, syntax: true }),
  least: fn("pick", [], { variadicFrom: 1, syntax: true }),
  // time
  now: fn("fixed", [0]),
  date_trunc: fn("fixed", [2, 3]),
  date_bin: fn("fixed", [3]),
  date_part: fn("fixed", [2]),
  extract: fn("fixed", [2]),
  to_timestamp: fn("fixed", [1, 2]),
  // A template pattern writes at most about 8 characters per character of the template ('RN' is 15).
  to_char: fn("linear", [2], { factor: 8 }),
  to_date: fn("fixed", [2]),
  make_interval: fn("fixed", [0, 1, 2, 3, 4, 5, 6, 7]),
  make_timestamptz: fn("fixed", [6, 7]),
  justify_interval: fn("fixed", [1]),
  age: fn("fixed", [1, 2]),
  timezone: fn("fixed", [1, 2]),
  date: fn("fixed", [1]),
  time_bucket: fn("fixed", [2, 3, 4, 5], { extension: "timescaledb" }),
  time_bucket_gapfill: fn("fixed", [2, 3, 4, 5], { extension: "timescaledb" }),
  time_bucket_ng: fn("fixed", [2, 3, 4], { extension: "timescaledb" }),
  locf: fn("pick", [1, 2, 3], { extension: "timescaledb" }),
  interpolate: fn("pick", [1, 2, 3], { extension: "timescaledb" }),
  first: agg("pick", [2], { extension: "timescaledb" }),
  last: agg("pick", [2], { extension: "timescaledb" }),
  percentile_approx: agg("fixed", [2], { extension: "timescaledb_toolkit" }),
  // text (case mapping can turn one character into three: 'ß' into 'SS' and the like)
  lower: fn("linear", [1], { factor: 3 }),
  upper: fn("linear", [1], { factor: 3 }),
  length: fn("fixed", [1, 2]),
  char_length: fn("fixed", [1]),
  substring: fn("pick", [2, 3]),
  substr: fn("pick", [2, 3]),
  left: fn("pick", [2]),
  right: fn("pick", [2]),
  concat: fn("linear", [], { variadicFrom: 1 }),
  concat_ws: fn("linear", [], { variadicFrom: 2, rule: "concat_ws" }),
  replace: fn("multiplies", [3], { ...search, rule: "replace" }),
  regexp_replace: fn("multiplies", [3, 4, 5, 6], { time: "quadratic", cancellable: true, rule: "regexp_replace" }),
  split_part: fn("pick", [3], search),
  trim: fn("pick", [], { ...search, variadicFrom: 1, quadraticFrom: 2, syntax: true }),
  btrim: fn("pick", [1, 2], { ...search, quadraticFrom: 2 }),
  ltrim: fn("pick", [1, 2], { ...search, quadraticFrom: 2 }),
  rtrim: fn("pick", [1, 2], { ...search, quadraticFrom: 2 }),
  position: fn("fixed", [2], search),
  strpos: fn("fixed", [2], search),
  starts_with: fn("fixed", [2]),
  format: fn("linear", [1], { variadicFrom: 2, rule: "format" }),
  translate: fn("pick", [3], search),
  repeat: fn("set-by-arg", [2], { sizeArg: 1 }),
  lpad: fn("set-by-arg", [2, 3], { sizeArg: 1 }),
  rpad: fn("set-by-arg", [2, 3], { sizeArg: 1 }),
  array_to_string: fn("linear", [2, 3], { factor: 2 }),
  // other (a JSON text escape writes up to 6 characters for one: \u001f)
  coalesce: fn("pick", [], { variadicFrom: 1, syntax: true }),
  nullif: fn("pick", [2], { syntax: true }),
  generate_series: fn("fixed", [2, 3, 4], { rule: "generate_series" }),
  json_build_object: fn("linear", [0], { variadicFrom: 1, factor: 6 }),
  jsonb_build_object: fn("linear", [0], { variadicFrom: 1 }),
  jsonb_extract_path_text: fn("pick", [], { variadicFrom: 2 }),
  array_length: fn("fixed", [2]),
  unnest: fn("pick", [1]),
  cardinality: fn("fixed", [1]),
  // helpers the grammar writes (LIKE ... ESCAPE, SIMILAR TO, OVERLAPS, OVERLAY, NORMALIZE, IS NORMALIZED)
  like_escape: fn("linear", [2]),
  similar_to_escape: fn("linear", [1, 2], { factor: 2 }),
  overlaps: fn("fixed", [4]),
  overlay: fn("linear", [3, 4]),
  normalize: fn("linear", [1, 2], { factor: 18 }),
  is_normalized: fn("fixed", [1, 2]),
};

const op = (size: SizeEffect, kinds: OperatorDeclaration["kinds"], more: Partial<OperatorDeclaration> = {}): OperatorDeclaration => ({
  size,
  time: "linear",
  cancellable: true,
  kinds,
  ...more,
});
/** Pattern matching: time up to the product of value and pattern; the matchers check for cancellation. */
const matching = { time: "quadratic", cancellable: true } as const;

/** Every operator of the operator allowlist, by name. */
export const OPERATOR_DECLARATIONS: Readonly<Record<string, OperatorDeclaration>> = {
  "=": op("fixed", ["b"]),
  "<>": op("fixed", ["b"]),
  "<": op("fixed", ["b"]),
  ">": op("fixed", ["b"]),
  "<=": op("fixed", ["b"]),
  ">=": op("fixed", ["b"]),
  "+": op("linear", ["b", "l"]),
  "-": op("linear", ["b", "l"]),
  "*": op("linear", ["b"], numeric),
  "/": op("linear", ["b"], numeric),
  "%": op("linear", ["b"], numeric),
  "^": op("set-by-arg", ["b"], { ...numeric, sizeArg: 1 }),
  "||": op("linear", ["b"]),
  "~~": op("fixed", ["b"], matching),
  "!~~": op("fixed", ["b"], matching),
  "~~*": op("fixed", ["b"], matching),
  "!~~*": op("fixed", ["b"], matching),
  "~": op("fixed", ["b", "l"], matching),
  "!~": op("fixed", ["b"], matching),
  "~*": op("fixed", ["b"], matching),
  "!~*": op("fixed", ["b"], matching),
  "->": op("pick", ["b"]),
  "->>": op("pick", ["b"]),
  "#>": op("pick", ["b"]),
  "#>>": op("pick", ["b"]),
};

/**
 * A function declaration with every field present (absent ones undefined) in one order, so that the analysis
 * reads every declaration through one object shape rather than one per combination of optional fields.
 */
function uniformFunction(d: FunctionDeclaration): FunctionDeclaration {
  return Object.freeze({
    kind: d.kind,
    size: d.size,
    factor: d.factor,
    sizeArg: d.sizeArg,
    time: d.time,
    quadraticFrom: d.quadraticFrom,
    cancellable: d.cancellable,
    arities: d.arities,
    variadicFrom: d.variadicFrom,
    rule: d.rule,
    extension: d.extension,
    syntax: d.syntax,
  });
}

/** An operator declaration with every field present, as uniformFunction. */
function uniformOperator(d: OperatorDeclaration): OperatorDeclaration {
  return Object.freeze({ size: d.size, factor: d.factor, sizeArg: d.sizeArg, time: d.time, cancellable: d.cancellable, kinds: d.kinds });
}

/** The function declarations by name: a lookup never reaches Object.prototype (`constructor`) and stays a hash probe. */
export const FUNCTION_DECLARATION_MAP: ReadonlyMap<string, FunctionDeclaration> = new Map(
  Object.entries(FUNCTION_DECLARATIONS).map(([name, d]) => [name, uniformFunction(d)]),
);

/** The operator declarations by name, as FUNCTION_DECLARATION_MAP. */
export const OPERATOR_DECLARATION_MAP: ReadonlyMap<string, OperatorDeclaration> = new Map(
  Object.entries(OPERATOR_DECLARATIONS).map(([name, d]) => [name, uniformOperator(d)]),
);

/** Whether a declaration covers a call with `n` arguments. */
export function coversArity(d: { arities: readonly number[]; variadicFrom?: number }, n: number): boolean {
  return d.arities.includes(n) || (d.variadicFrom !== undefined && n >= d.variadicFrom);
}
