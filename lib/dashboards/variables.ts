// Dashboard variables at view time: a viewer's requested values (Grafana's `var-NAME` URL parameters) checked
// against each variable's options, and the options of query variables, run through the guarded query runner at
// most once per dashboard cadence per process and shared by every viewer.
import { AppError } from "../http/errors.ts";
import type { QueryRunner } from "../query/runner.ts";
import type { Cell } from "../query/decode.ts";
import type { Source } from "../sources/store.ts";
import {
  ALL_VALUE,
  type DashboardSpec,
  MAX_VARIABLE_OPTIONS,
  MAX_VARIABLE_VALUE_LENGTH,
  type Variable,
  effectiveRefreshMs,
  resolveTime,
} from "./spec.ts";

/** Values per variable name: what a viewer asked for (`var-NAME`, repeated for several), or what the runner binds. */
export type VariableValues = Record<string, string[]>;

/** The options of one variable: its custom values, or its query's current options. */
export type OptionsOf = (variable: Variable) => Promise<readonly string[]>;

/** A viewer's resolved variables. */
export interface ResolvedVariables {
  /**
   * What the viewer selected, per declared variable in spec order: the values, or `[ALL_VALUE]` for All. The same
   * selection always gives the same object (same keys, same order, values sorted and unique), so its JSON can key a
   * view; it holds only declared names and option values, so a viewer cannot mint views beyond the options.
   */
  selection: VariableValues;
  /** The bind values for the query runner: All is every current option. */
  values: VariableValues;
}

/** The URL parameter of a variable, as Grafana names it. */
export function variableParam(name: string): string {
  return `var-${name}`;
}

function refused(name: string, message: string): AppError {
  const path = variableParam(name);
  return new AppError("validation_failed", `Invalid request query: ${path}: ${message}`, { issues: [{ path, message }] });
}

/** The options of a variable that needs no query: its custom values; undefined for a query variable. */
function customOptions(v: Variable): readonly string[] | undefined {
  return v.type === "custom" ? (v.values ?? []) : undefined;
}

/** The default selection: the spec's default where it is still an option (or All), else the first option. */
function defaultSelection(v: Variable, options: readonly string[]): string[] {
  const wanted = v.default === undefined ? [] : typeof v.default === "string" ? [v.default] : v.default;
  if (v.includeAll === true && wanted.includes(ALL_VALUE)) return [ALL_VALUE];
  const known = new Set(options);
  const kept = [...new Set(wanted.filter((d) => known.has(d)))];
  if (kept.length > 0) return v.multi === true ? kept.sort() : [kept[0]];
  return options.length > 0 ? [options[0]] : [];
}

/** One variable's selection from a viewer's values (see resolveVariables); throws the 400 naming it. */
function choose(v: Variable, asked: readonly string[], options: readonly string[]): string[] {
  const wanted = [...new Set(asked)];
  if (wanted.length === 0) return defaultSelection(v, options);
  if (wanted[0] === ALL_VALUE && wanted.length === 1) return [ALL_VALUE];
  const known = new Set(options);
  if (!wanted.every((w) => known.has(w))) throw refused(v.name, "is not one of the variable's options");
  return wanted.sort();
}

/** The shape checks that need no options: one value unless multi, All only where offered and alone, no overlong value. */
function checkShape(v: Variable, asked: readonly string[]): void {
  const wanted = [...new Set(asked)];
  if (wanted.length > 1 && v.multi !== true) throw refused(v.name, "takes one value (the variable is not multi-value)");
  if (wanted.includes(ALL_VALUE)) {
    if (v.includeAll !== true) throw refused(v.name, `${ALL_VALUE} (All) is not offered by this variable`);
    if (wanted.length > 1) throw refused(v.name, `${ALL_VALUE} (All) stands alone`);
  }
  // A value longer than any option cannot be one: refused before any query runs.
  if (wanted.some((w) => w.length > MAX_VARIABLE_VALUE_LENGTH)) throw refused(v.name, "is not one of the variable's options");
}

/** The bind values of one variable's selection: All is every option. */
function bindOf(selection: readonly string[], options: readonly string[]): string[] {
  return selection[0] === ALL_VALUE ? [...options] : [...selection];
}

/**
 * Checks a viewer's requested values against the spec: absent (or empty) means the default (or the first option);
 * every value must be one of the variable's options; several values only where `multi`; `$__all` only where
 * `includeAll`, and alone. A refused value is a 400 `validation_failed` naming `var-NAME`. Parameters naming no
 * declared variable are ignored (a link from before a variable was removed still opens), and never reach the
 * selection.
 */
export async function resolveVariables(
  spec: Pick<DashboardSpec, "variables">,
  requested: Readonly<Record<string, readonly string[]>>,
  optionsOf: OptionsOf,
): Promise<ResolvedVariables> {
  const selection: VariableValues = {};
  const values: VariableValues = {};
  for (const v of spec.variables ?? []) {
    const asked = Object.hasOwn(requested, v.name) ? requested[v.name] : [];
    checkShape(v, asked);
    const options = customOptions(v) ?? (await optionsOf(v));
    const chosen = choose(v, asked, options);
    selection[v.name] = chosen;
    values[v.name] = bindOf(chosen, options);
  }
  return { selection, values };
}

/**
 * A view's variables, as a stream keys it: the requested variables (only those; a variable left out needs no
 * options) checked as resolveVariables does, each kept only where it differs from the variable's default
 * selection now, names sorted. Requesting exactly the defaults gives `{}`: the saved view. Throws the 400 naming
 * `var-NAME` for a refused value, and a query variable's options failure (naming the variable) when they cannot
 * be read.
 */
export async function viewSelection(
  spec: Pick<DashboardSpec, "variables">,
  requested: Readonly<Record<string, readonly string[]>>,
  optionsOf: OptionsOf,
): Promise<VariableValues> {
  const out: VariableValues = {};
  const asked = (spec.variables ?? []).filter((v) => Object.hasOwn(requested, v.name));
  // Every shape is checked before any option is read: a malformed request costs no query.
  for (const v of asked) checkShape(v, requested[v.name]);
  for (const v of [...asked].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const options = customOptions(v) ?? (await optionsOf(v));
    const chosen = choose(v, requested[v.name], options);
    const fallback = defaultSelection(v, options);
    if (chosen.length !== fallback.length || chosen.some((c, i) => c !== fallback[i])) out[v.name] = chosen;
  }
  return out;
}

/**
 * The bind values of a selection made earlier (resolveVariables or viewSelection), with the options as they are
 * now: All takes every current option, and a variable the selection leaves out takes its default (the spec's
 * default where still an option, else the first option). A poller calls it on every tick so that All and the
 * defaults follow a query variable's options. With `only`, just those variables are bound (the ones a panel names),
 * so a variable whose options fail fails only the panels that use it.
 */
export async function selectionValues(
  spec: Pick<DashboardSpec, "variables">,
  selection: Readonly<VariableValues>,
  optionsOf: OptionsOf,
  only?: ReadonlySet<string>,
): Promise<VariableValues> {
  const values: VariableValues = {};
  for (const v of spec.variables ?? []) {
    if (only !== undefined && !only.has(v.name)) continue;
    const chosen = Object.hasOwn(selection, v.name) ? selection[v.name] : undefined;
    // A fixed selection of a query variable binds as chosen, without its options.
    if (chosen !== undefined && chosen.length > 0 && chosen[0] !== ALL_VALUE) {
      values[v.name] = [...chosen];
      continue;
    }
    const options = customOptions(v) ?? (await optionsOf(v));
    values[v.name] = bindOf(chosen !== undefined && chosen.length > 0 ? chosen : defaultSelection(v, options), options);
  }
  return values;
}

/** The dashboard a query variable belongs to, as the options cache needs it. */
export interface VariableDashboard {
  id: string;
  workspaceId: string;
  spec: Pick<DashboardSpec, "time" | "refreshIntervalMs">;
}

export interface VariableOptionsCacheDeps {
  runner: Pick<QueryRunner, "run">;
  /** The source of a query variable, in the dashboard's workspace only (null: missing or elsewhere). */
  getSource: (workspaceId: string, sourceId: string) => Promise<Source | null>;
  config: { DEFAULT_REFRESH_INTERVAL_MS: number; MIN_REFRESH_INTERVAL_MS: number };
  /** Wall clock: resolves the dashboard's range and times the cadence. */
  now?: () => number;
  /** Entries kept (one per dashboard, variable and SQL); the least recently used go first. Default 1000. */
  maxEntries?: number;
}

/** Query variables' options, shared by every viewer of this process (createVariableOptionsCache). */
export interface VariableOptionsCache {
  /**
   * The options of a query variable: its SQL run through the guarded runner over the dashboard's saved range,
   * again only once the dashboard's cadence has passed since the last run (a failure is kept as long, so a broken
   * variable is not re-run per viewer). Concurrent callers share one run.
   */
  options(dashboard: VariableDashboard, variable: Variable): Promise<string[]>;
  /** `optionsOf` for resolveVariables on one dashboard. */
  optionsOf(dashboard: VariableDashboard): OptionsOf;
  /** Entries held (tests). */
  readonly size: number;
}

interface Entry {
  at: number;
  result: Promise<string[]>;
}

/** The options a result holds: its single column's non-null cells as text, unique, in order, bounded. */
export function optionsFromResult(name: string, columns: readonly unknown[], rows: readonly Cell[][]): string[] {
  if (columns.length !== 1) {
    throw new AppError(
      "query_failed",
      `Variable ${name}: its SQL must return exactly one column of options; it returned ${columns.length}.`,
    );
  }
  const seen = new Set<string>();
  for (const row of rows) {
    const cell = row[0];
    if (cell === null || cell === undefined) continue;
    const text = typeof cell === "string" ? cell : typeof cell === "object" ? JSON.stringify(cell) : String(cell);
    if (text.length > MAX_VARIABLE_VALUE_LENGTH || text.includes("\0")) continue;
    seen.add(text);
    if (seen.size >= MAX_VARIABLE_OPTIONS) break;
  }
  return [...seen];
}

/**
 * Reads one variable's options now: a custom variable's values, or a query variable's SQL run through the guarded
 * runner on its source in `workspaceId` over `range`. Failures name the variable.
 */
export async function readVariableOptions(
  deps: Pick<VariableOptionsCacheDeps, "runner" | "getSource">,
  workspaceId: string,
  v: Variable,
  range: { fromMs: number; toMs: number },
): Promise<string[]> {
  if (v.type !== "query" || v.sourceId === undefined || v.sql === undefined) return [...(v.values ?? [])];
  const source = await deps.getSource(workspaceId, v.sourceId);
  if (!source) throw new AppError("not_found", `Variable ${v.name}: its source does not exist in this workspace.`);
  let result: Awaited<ReturnType<QueryRunner["run"]>>;
  try {
    result = await deps.runner.run({ source, workspaceId, sql: v.sql, range });
  } catch (err) {
    // The panel or viewer who meets this failure learns which variable it is.
    if (err instanceof AppError) {
      throw new AppError(err.code, `Variable ${v.name}: its options could not be read. ${err.detail}`, err.extra, err.headers);
    }
    throw err;
  }
  return optionsFromResult(v.name, result.columns, result.rows);
}

/**
 * Builds the per-process cache of query variables' options. Keyed by dashboard, variable name, source, SQL and
 * saved range, so an edited variable is run afresh; one entry per key whatever the number of viewers.
 */
export function createVariableOptionsCache(deps: VariableOptionsCacheDeps): VariableOptionsCache {
  const now = deps.now ?? (() => Date.now());
  const maxEntries = deps.maxEntries ?? 1000;
  // Least recently used first: a hit moves its entry to the end.
  const entries = new Map<string, Entry>();

  function run(dashboard: VariableDashboard, v: Variable, at: number): Promise<string[]> {
    const range = { fromMs: resolveTime(dashboard.spec.time.from, at), toMs: resolveTime(dashboard.spec.time.to, at) };
    return readVariableOptions(deps, dashboard.workspaceId, v, range);
  }

  function options(dashboard: VariableDashboard, v: Variable): Promise<string[]> {
    const key = JSON.stringify([dashboard.id, v.name, v.type, v.sourceId ?? null, v.sql ?? null, dashboard.spec.time]);
    const at = now();
    const cadence = effectiveRefreshMs(dashboard.spec, deps.config);
    const hit = entries.get(key);
    if (hit !== undefined && at - hit.at < cadence && at >= hit.at) {
      entries.delete(key);
      entries.set(key, hit);
      return hit.result;
    }
    const result = run(dashboard, v, at);
    // Kept for the cadence whatever the outcome; the caller who awaits sees the failure, the cache holds no unhandled one.
    result.catch(() => {});
    entries.delete(key);
    entries.set(key, { at, result });
    while (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    return result;
  }

  return {
    options,
    optionsOf: (dashboard) => (v) => options(dashboard, v),
    get size() {
      return entries.size;
    },
  };
}
