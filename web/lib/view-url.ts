/**
 * The viewer's view of a dashboard, in the page URL with Grafana's parameter names: `from`, `to` (time expressions:
 * now, now-6h, an ISO instant, or Grafana's epoch milliseconds), `refresh` (5s … 1d, or `off` for paused), `tz`
 * (`browser`, `utc` or an IANA zone), `var-NAME` (repeated for several values; `$__all` for All) and `viewPanel` (one
 * panel full-screen). Absent means the dashboard's saved default. Pure: parse and write URLSearchParams.
 */
import { parseTimeExpression } from "../../lib/time/expressions.ts";

export interface View {
  from?: string;
  to?: string;
  /** Milliseconds, or 0 for paused ("off"). */
  refreshMs?: number;
  tz?: string;
  vars: Record<string, string[]>;
  viewPanel?: string;
}

/** Grafana's value for "All" of a variable. */
export const ALL = "$__all";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The refresh picker's choices (Grafana's), of which those below the server's floor are left out. */
export const REFRESH_CHOICES = ["5s", "10s", "30s", "1m", "5m", "15m", "30m", "1h", "2h", "1d"] as const;

/** The time picker's relative presets, 5 minutes to 30 days. */
export const RANGE_PRESETS: readonly { from: string; label: string }[] = [
  { from: "now-5m", label: "Last 5 minutes" },
  { from: "now-15m", label: "Last 15 minutes" },
  { from: "now-30m", label: "Last 30 minutes" },
  { from: "now-1h", label: "Last 1 hour" },
  { from: "now-3h", label: "Last 3 hours" },
  { from: "now-6h", label: "Last 6 hours" },
  { from: "now-12h", label: "Last 12 hours" },
  { from: "now-24h", label: "Last 24 hours" },
  { from: "now-2d", label: "Last 2 days" },
  { from: "now-7d", label: "Last 7 days" },
  { from: "now-30d", label: "Last 30 days" },
];

/** `5s` → 5000; `off` → 0; anything else null. */
export function parseRefresh(text: string): number | null {
  if (text === "off") return 0;
  const m = /^(\d{1,5})([smhd])$/.exec(text);
  if (!m || Number(m[1]) === 0) return null;
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

/** 5000 → `5s`, 60000 → `1m`, 0 → `off`. */
export function formatRefresh(ms: number): string {
  if (ms <= 0) return "off";
  for (const [u, size] of [
    ["d", UNIT_MS.d],
    ["h", UNIT_MS.h],
    ["m", UNIT_MS.m],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${u}`;
  }
  return `${Math.round(ms / 1000)}s`;
}

/**
 * A time parameter as the server takes it: Grafana's epoch milliseconds become an ISO instant; anything the
 * shared parser refuses is null (the saved default then applies).
 */
export function normalizeTime(text: string): string | null {
  const value = /^\d{10,13}$/.test(text) ? new Date(Number(text)).toISOString() : text;
  return parseTimeExpression(value).ok ? value : null;
}

/** Whether `tz` names a zone this browser knows (`browser` and `utc` always do). */
export function validZone(tz: string): boolean {
  if (tz === "browser" || tz === "utc") return true;
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The IANA zone to format in: undefined for the browser's own. */
export function zoneOf(tz: string | undefined): string | undefined {
  if (!tz || tz === "browser") return undefined;
  return tz === "utc" ? "UTC" : tz;
}

/** Reads the view from a query string; invalid values are dropped (the saved default applies). */
export function readView(params: URLSearchParams): View {
  const view: View = { vars: {} };
  const from = params.get("from");
  const to = params.get("to");
  const f = from === null ? null : normalizeTime(from);
  const t = to === null ? null : normalizeTime(to);
  if (f !== null) view.from = f;
  if (t !== null) view.to = t;
  const refresh = params.get("refresh");
  const r = refresh === null ? null : parseRefresh(refresh);
  if (r !== null) view.refreshMs = r;
  const tz = params.get("tz");
  if (tz && validZone(tz)) view.tz = tz;
  const panel = params.get("viewPanel");
  if (panel) view.viewPanel = panel;
  for (const [key, value] of params) {
    if (!key.startsWith("var-") || key.length === 4) continue;
    const name = key.slice(4);
    view.vars[name] = [...(view.vars[name] ?? []), value];
  }
  return view;
}

/** Writes the view into `params` (other parameters are kept); unset fields are removed. */
export function writeView(params: URLSearchParams, view: View): URLSearchParams {
  const out = new URLSearchParams(params);
  for (const key of ["from", "to", "refresh", "tz", "viewPanel"]) out.delete(key);
  for (const key of [...out.keys()]) if (key.startsWith("var-")) out.delete(key);
  if (view.from !== undefined) out.set("from", view.from);
  if (view.to !== undefined) out.set("to", view.to);
  if (view.refreshMs !== undefined) out.set("refresh", formatRefresh(view.refreshMs));
  if (view.tz !== undefined) out.set("tz", view.tz);
  for (const [name, values] of Object.entries(view.vars)) for (const v of values) out.append(`var-${name}`, v);
  if (view.viewPanel !== undefined) out.set("viewPanel", view.viewPanel);
  return out;
}

/** The dashboard stream's URL for a view: the live page opens it, and its server names it for the early stream. */
export function liveStreamUrl(dashboardId: string, view: View): string {
  return `/api/dashboards/${encodeURIComponent(dashboardId)}/stream${streamQuery(view)}`;
}

/**
 * The stream's query string for a view: only what the server takes (range, cadence when not paused, variables).
 * A paused view asks for the saved cadence: the page reads until every panel has reported and closes the stream.
 */
export function streamQuery(view: View): string {
  const q = new URLSearchParams();
  if (view.from !== undefined) q.set("from", view.from);
  if (view.to !== undefined) q.set("to", view.to);
  if (view.refreshMs) q.set("refresh", formatRefresh(view.refreshMs));
  for (const [name, values] of Object.entries(view.vars)) for (const v of values) q.append(`var-${name}`, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The range [from, to] zoomed out ×2 around its centre, never past `now`. As ISO instants when absolute. */
export function zoomOut(range: readonly [number, number], now: number): [number, number] {
  const span = range[1] - range[0];
  const to = Math.min(now, range[1] + span / 2);
  return [to - span * 2, to];
}

/** The range shifted by half its span: -1 left (earlier), +1 right (later, never past now). */
export function shift(range: readonly [number, number], direction: -1 | 1, now: number): [number, number] {
  const span = range[1] - range[0];
  const to = Math.min(now, range[1] + (direction * span) / 2);
  return [to - span, to];
}

/** Absolute expressions for a resolved range (what drag-zoom, zoom-out and shift write). */
export function absolute(range: readonly [number, number]): { from: string; to: string } {
  return { from: new Date(Math.round(range[0])).toISOString(), to: new Date(Math.round(range[1])).toISOString() };
}

/** `now-<span>` in the largest whole unit (minutes at least): 7_200_000 → now-2h. */
export function relativeFrom(spanMs: number): string {
  const minutes = Math.max(1, Math.round(spanMs / UNIT_MS.m));
  if (minutes % 1440 === 0) return `now-${minutes / 1440}d`;
  if (minutes % 60 === 0) return `now-${minutes / 60}h`;
  return `now-${minutes}m`;
}

/**
 * The time expressions after zooming out ×2 or shifting: a range that ends at now and stays at now keeps
 * reading relatively (now-2h … now); anything else becomes absolute.
 */
export function rangeExpressions(next: readonly [number, number], endsAtNow: boolean, now: number): { from: string; to: string } {
  if (endsAtNow && next[1] >= now - 1000) return { from: relativeFrom(next[1] - next[0]), to: "now" };
  return absolute(next);
}
