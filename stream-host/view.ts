import { type DashboardSpec, MAX_REFRESH_INTERVAL_MS, VARIABLE_NAME } from "../lib/dashboards/spec.ts";
import { AppError } from "../lib/http/errors.ts";
import type { ViewSummary } from "../lib/live/frames.ts";
import { parseTimeExpression, resolveTime } from "../lib/time/expressions.ts";

/**
 * A viewer's view of a dashboard, resolved: range expressions, cadence and variable values. Viewers of
 * one view share one poller (docs/stream-host.md, "Views").
 */
export interface View {
  from: string;
  to: string;
  refreshMs: number;
  /** Requested variable values by name (names sorted, values in request order). */
  vars: Record<string, string[]>;
}

/** The view parameters as they came in the URL, each a list (a parameter may be repeated). */
export type ViewQuery = Record<string, string[]>;

/** Longest accepted from/to/refresh text; a time expression or a duration is never longer. */
const MAX_PARAM_CHARS = 64;
/** Longest accepted variable value (the spec's own bound on a variable's values). */
const MAX_VALUE_CHARS = 1000;
/** Most values of one variable in a view (the spec's own bound on a variable's options). */
const MAX_VALUES = 1000;

const DURATION = /^(\d{1,9})(ms|s|m|h|d|w)$/;
const DURATION_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

function badParam(name: string, why: string): AppError {
  return new AppError("validation_failed", `Query parameter ${name} ${why}.`, { parameter: name });
}

/** A Grafana duration (5s, 1m, 1h, 1d, 1w, 500ms) in milliseconds; null when it is not one. */
export function parseDuration(text: string): number | null {
  const m = DURATION.exec(text);
  if (!m) return null;
  return Number(m[1]) * DURATION_MS[m[2] as keyof typeof DURATION_MS];
}

/** One value of a parameter that may appear at most once. */
function single(query: ViewQuery, name: string): string | undefined {
  const values = query[name];
  if (values === undefined || values.length === 0) return undefined;
  if (values.length > 1) throw badParam(name, "must be given at most once");
  const v = values[0];
  if (v.length > MAX_PARAM_CHARS) throw badParam(name, `must be at most ${MAX_PARAM_CHARS} characters`);
  return v;
}

function timeParam(name: "from" | "to", text: string): string {
  const parsed = parseTimeExpression(text);
  if (!parsed.ok) throw badParam(name, parsed.reason);
  return text;
}

/** The view the saved spec describes (a request without view parameters). */
export function savedView(spec: DashboardSpec, refreshMs: number): View {
  return { from: spec.time.from, to: spec.time.to, refreshMs, vars: {} };
}

/**
 * Resolves a stream request's view parameters against the dashboard: `from`, `to` (time expressions),
 * `refresh` (a Grafana duration, refused below `minRefreshMs`) and `var-<name>` (a variable the spec
 * declares). Absent parameters take the saved values; every other parameter is ignored. A bad value
 * throws a 400 naming the parameter. `now` resolves the range once to check that it is not empty.
 */
export function resolveView(
  query: ViewQuery,
  spec: DashboardSpec,
  opts: { savedRefreshMs: number; minRefreshMs: number; now: number },
): View {
  const fromParam = single(query, "from");
  const toParam = single(query, "to");
  const from = fromParam === undefined ? spec.time.from : timeParam("from", fromParam);
  const to = toParam === undefined ? spec.time.to : timeParam("to", toParam);
  let refreshMs = opts.savedRefreshMs;
  const refresh = single(query, "refresh");
  if (refresh !== undefined) {
    const ms = parseDuration(refresh);
    if (ms === null) throw badParam("refresh", "must be a duration such as 5s, 1m, 1h or 1d");
    if (ms < opts.minRefreshMs) throw badParam("refresh", `must not be below MIN_REFRESH_INTERVAL_MS (${opts.minRefreshMs} ms)`);
    if (ms > MAX_REFRESH_INTERVAL_MS) throw badParam("refresh", "must not be above 1d");
    refreshMs = ms;
  }
  // A range given in the URL must resolve and not be empty; the saved one is the poller's to report.
  if (fromParam !== undefined || toParam !== undefined) {
    const at = (name: "from" | "to", expr: string) => {
      try {
        return resolveTime(expr, opts.now);
      } catch {
        throw badParam(name, "reaches back before 1970-01-01T00:00:00Z");
      }
    };
    if (at("from", from) >= at("to", to)) {
      throw badParam(fromParam !== undefined ? "from" : "to", "must give a range whose start (from) is before its end (to)");
    }
  }

  const declared = new Set((spec.variables ?? []).map((v) => v.name));
  const vars = new Map<string, string[]>();
  for (const [key, values] of Object.entries(query)) {
    if (!key.startsWith("var-")) continue;
    const name = key.slice(4);
    // The name is echoed only once it is known to be a plain identifier.
    if (!VARIABLE_NAME.test(name)) throw badParam("var-*", "must name a variable: var-<letters, digits, _>");
    if (!declared.has(name)) throw badParam(key, "names no variable of this dashboard");
    if (values.length > MAX_VALUES) throw badParam(key, `must be given at most ${MAX_VALUES} times`);
    for (const v of values) {
      if (v.length > MAX_VALUE_CHARS) throw badParam(key, `must be at most ${MAX_VALUE_CHARS} characters`);
      if (v.includes("\u0000")) throw badParam(key, "must not contain a NUL character");
    }
    vars.set(name, values);
  }
  const sorted = [...vars.keys()].sort();
  return { from, to, refreshMs, vars: Object.fromEntries(sorted.map((n) => [n, vars.get(n)!])) };
}

/**
 * The key of a view: equal for equal views, and never ambiguous (a JSON array, so no value can forge a
 * separator). Kept in memory only; metric labels carry the dashboard id alone.
 */
export function viewKey(dashboardId: string, view: View): string {
  return JSON.stringify([dashboardId, view.from, view.to, view.refreshMs, Object.entries(view.vars)]);
}

/** Epoch ms a range ends at when its `to` is an instant; null for a `to` relative to now (it never ends). */
export function fixedEnd(view: Pick<View, "to">): number | null {
  const parsed = parseTimeExpression(view.to);
  return parsed.ok && parsed.value.kind === "absolute" ? parsed.value.at : null;
}

/** Whether a range ends in the past at `now`: queried once and kept, not polled. */
export function endsInPast(view: Pick<View, "to">, now: number): boolean {
  const end = fixedEnd(view);
  return end !== null && end <= now;
}

/** The view as frames carry it. */
export function viewSummary(view: View, opts: { live: boolean; saved: boolean }): ViewSummary {
  return { from: view.from, to: view.to, refreshMs: view.refreshMs, vars: view.vars, live: opts.live, saved: opts.saved };
}

/** Reads the view parameters of a request URL: from, to, refresh and var-*, each as the list given. */
export function viewQueryOf(url: string): ViewQuery {
  const search = new URL(url).searchParams;
  const query = new Map<string, string[]>();
  for (const [key, value] of search) {
    if (key !== "from" && key !== "to" && key !== "refresh" && !key.startsWith("var-")) continue;
    const list = query.get(key) ?? [];
    list.push(value);
    query.set(key, list);
  }
  return Object.fromEntries(query);
}
