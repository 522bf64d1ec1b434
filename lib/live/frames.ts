/**
 * The dashboard stream's wire format (docs/stream-host.md, "Frames"): one type per SSE event, written by
 * the stream host and read by the browser. Browser-safe: no Node imports, types and pure functions only.
 */

/** One cell of a result: numbers, text, booleans, null, JSON; timestamps are epoch milliseconds. */
export type Cell = string | number | boolean | null | object;

/** A result column: its name and PostgreSQL type name ("timestamptz", "float8", ... or "unknown"). */
export interface ResultColumn {
  name: string;
  type: string;
}

/** The limit that cut a result. */
export type TruncationLimit = "MAX_QUERY_ROWS" | "MAX_RESULT_BYTES" | "MAX_WINDOW_POINTS";

/**
 * Which rows a cut result kept: `newest` (the runner had PostgreSQL return the newest rows first, so the
 * right edge of the axis is complete), `oldest` (the browser's window keeps the newest; never sent by the
 * runner) or `first` (a statement with no time order: the first rows in the statement's own order).
 */
export type KeptEnd = "newest" | "oldest" | "first";

/** A result that a limit cut: which limit, how many rows were kept, and which end of the time axis. */
export interface Truncation {
  limit: TruncationLimit;
  /** Rows kept (for MAX_WINDOW_POINTS: points per series kept). */
  kept: number;
  end: KeptEnd;
  /** A sentence for the panel: what was cut and how to fix it. */
  message: string;
}

/**
 * A bucketed statement gives more points per series over the range than the browser keeps
 * (MAX_WINDOW_POINTS): the numbers, and the sentence preview, save and the panel show.
 */
export interface PointsWarning {
  /** Points per series the range holds at the statement's step. */
  pointsPerSeries: number;
  /** Points per series the browser keeps (MAX_WINDOW_POINTS). */
  kept: number;
  rangeMs: number;
  stepMs: number;
  /** E.g. "1,440 points per series over 24 h; 720 are kept. Use $__interval or a coarser bucket." */
  message: string;
}

/**
 * A duration in ms as results carry it: to a tenth of a millisecond. A raw difference of `performance.now()`
 * readings has 13 or more decimals (`13.013929000000644`), which every frame carries to every viewer.
 */
export function elapsedMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** A query result as the API and the stream send it. */
export interface QueryResult {
  columns: ResultColumn[];
  rows: Cell[][];
  /** True when a limit cut the result; `truncation` says which and how. */
  truncated: boolean;
  /** Wall time of the query in ms, to a tenth (elapsedMs()): more digits say nothing and cost every viewer bytes. */
  elapsedMs: number;
  truncation?: Truncation;
  /** The bucket step in ms of a time-bucketed statement, when the server could tell it from the statement. */
  stepMs?: number;
  /**
   * Epoch ms of the start of the bucket that is still filling (the range ends at now and the bucket holding
   * now is not over). Rows at or after it are partial: drawn distinctly, left out of "last" values.
   */
  partialFrom?: number;
  pointsWarning?: PointsWarning;
}

/**
 * A panel failure: a machine-readable `code` always (`query_timeout`, `guard_rejected` reasons such as
 * `keyword`, `source_busy`, `connection_refused`, `result_too_large`, `query_held` while a statement that
 * outlived its timeout is held until the source confirms it ended, ...), the guard's reason or
 * `query_timeout` / `query_held` as `reason` where there is one, a safe message, and for a panel backed off
 * after timeouts the epoch ms at about which it runs again.
 */
export interface PanelError {
  code: string;
  reason?: string;
  message: string;
  retryAt?: number;
}

/** event: panel. One panel's outcome at `at` (epoch ms). */
export type PanelUpdate = { panelId: string; at: number; result: QueryResult } | { panelId: string; at: number; error: PanelError };

/**
 * event: panel-delta. An incremental tick's change to a panel's last result (docs/stream-host.md,
 * "Incremental ticks"): drop the rows whose bucket (column `bucketColumn`, epoch ms) is before
 * `rangeStart`, replace every row of each bucket in `buckets` by this frame's rows of that bucket (none:
 * the bucket is gone), keep bucket order. Columns, truncation and warnings stay those of the last full
 * result; `partialFrom` and `stepMs` are this tick's.
 */
export interface PanelDeltaFrame {
  panelId: string;
  at: number;
  rangeStart: number;
  bucketColumn: number;
  buckets: number[];
  rows: Cell[][];
  elapsedMs: number;
  stepMs?: number;
  partialFrom?: number;
}

/**
 * A panel's result after a delta frame: rows before the range start dropped, each listed bucket's rows
 * replaced by the frame's, bucket order kept; columns, truncation and warnings stay the held result's.
 * A client that applies every delta to the last full result holds what the server holds. `held` is left as it
 * is (its rows are copied): the stream host's held result is shared by its viewers.
 */
export function applyPanelDelta(held: QueryResult, delta: Omit<PanelDeltaFrame, "panelId" | "at">): QueryResult {
  return applyDelta(held, delta, false);
}

/**
 * applyPanelDelta for a caller that is the only holder of `held`'s rows array and does not read `held` again (the
 * browser's panel, whose last result each tick replaces): the same result, but a delta that leaves the held rows
 * before its first bucket as they are (a tick: the oldest buckets dropped, the newest one or two replaced or added)
 * reuses that array, moved down and cut in place, with the changed tail written after it, instead of copying its
 * thousands of row references every tick. Rows not in bucket order are copied as applyPanelDelta copies them.
 */
export function applyPanelDeltaInPlace(held: QueryResult, delta: Omit<PanelDeltaFrame, "panelId" | "at">): QueryResult {
  return applyDelta(held, delta, true);
}

function applyDelta(held: QueryResult, delta: Omit<PanelDeltaFrame, "panelId" | "at">, inPlace: boolean): QueryResult {
  const col = delta.bucketColumn;
  const bucket = (r: Cell[]) => r[col] as number;
  const held_ = held.rows;
  // Held rows already in bucket order (as every delta leaves them) before the first bucket the frame touches are
  // kept as a block, so a tick that adds the newest bucket sorts only the tail rather than the whole result.
  let first = Number.POSITIVE_INFINITY;
  for (const b of delta.buckets) first = Math.min(first, b);
  for (const r of delta.rows) first = Math.min(first, bucket(r));
  const sorted = rowsInBucketOrder(held_, col);
  const lo = sorted ? firstIndexAtOrAfter(held_, col, delta.rangeStart) : 0;
  const hi = sorted && first >= delta.rangeStart ? Math.max(lo, firstIndexAtOrAfter(held_, col, first)) : lo;
  // The held rows from `hi` on that stay (a bucket the frame does not list), then the frame's rows; a bucket the
  // frame lists has only the frame's rows. Stable: rows of one bucket keep the server's order.
  const tail: Cell[][] = [];
  const replaced = delta.buckets.length > 0 && hi < held_.length ? new Set(delta.buckets) : null;
  for (let i = hi; i < held_.length; i++) {
    const r = held_[i]!;
    if (bucket(r) >= delta.rangeStart && !replaced?.has(bucket(r))) tail.push(r);
  }
  for (const r of delta.rows) tail.push([...r]);
  tail.sort((x, y) => bucket(x) - bucket(y));
  let rows: Cell[][];
  if (inPlace && sorted) {
    // The array cut after `hi`, its first `lo` rows taken off (V8 moves the start of the elements rather than
    // them; copyWithin copies one element at a time and costs more than the slice it replaces): no copy of the
    // array, and no new backing store once it has room for the tail.
    rows = held_;
    rows.length = hi;
    if (lo > 0) rows.splice(0, lo);
  } else rows = held_.slice(lo, hi);
  for (const r of tail) rows.push(r);
  // The order known of the array (bucketOrdered) is its order now: an array changed in place is checked again if not.
  if (sorted && tail.every((r) => Number.isFinite(bucket(r)))) bucketOrdered.set(rows, col);
  else bucketOrdered.delete(rows);
  const next: QueryResult = { ...held, rows, elapsedMs: delta.elapsedMs };
  if (delta.stepMs !== undefined) next.stepMs = delta.stepMs;
  if (delta.partialFrom !== undefined) next.partialFrom = delta.partialFrom;
  else delete next.partialFrom;
  return next;
}

/**
 * Rows arrays known to be in bucket order, with their bucket column: what applyPanelDelta built, or checked once. An
 * array is changed only by applyPanelDeltaInPlace, which sets or clears its entry as it leaves it.
 */
const bucketOrdered = new WeakMap<readonly Cell[][], number>();

/**
 * Whether rows are in ascending order of their bucket column (finite numbers). Kept per array (changed in place only
 * by applyPanelDeltaInPlace, which keeps the answer current): a tick checks its new rows, not the whole result again.
 */
export function rowsInBucketOrder(rows: readonly Cell[][], col: number): boolean {
  if (bucketOrdered.get(rows) === col) return true;
  let prev = Number.NEGATIVE_INFINITY;
  for (const r of rows) {
    const t = r[col];
    if (typeof t !== "number" || !(t >= prev) || !Number.isFinite(t)) return false;
    prev = t;
  }
  bucketOrdered.set(rows, col);
  return true;
}

/** The index of the first row whose time cell (`col`, ascending) is at or after `t` (searchAtOrAfter). */
export function firstIndexAtOrAfter(rows: readonly (readonly unknown[])[], col: number, t: number): number {
  return searchAtOrAfter(rows.length, (i) => rows[i]![col] as number, t);
}

/**
 * The first index in [from, length) whose key is at or after `t`, for keys ascending in i; `length` when none. It
 * gallops in from both ends (1, 2, 4 and 8 entries in) before it bisects what is left: a tick's searches (a range's
 * new start, the newest buckets) land a few entries from one end and are found in a few probes rather than
 * log2(length); any other search takes at most 8 probes more than a bisection. A NaN key or `t` compares as a
 * bisection compares it (`key < t` is false).
 */
export function searchAtOrAfter(length: number, keyAt: (i: number) => number, t: number, from = 0): number {
  let lo = from;
  let hi = length;
  for (let step = 1; step <= GALLOP_MAX && lo < hi; step *= 2) {
    const a = lo + step - 1;
    if (a >= hi) break;
    if (!(keyAt(a) < t)) {
      hi = a;
      break;
    }
    lo = a + 1;
    const b = hi - step;
    if (b < lo) break;
    if (keyAt(b) < t) {
      lo = b + 1;
      break;
    }
    hi = b;
  }
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keyAt(mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The longest step searchAtOrAfter gallops in from either end before it bisects. */
const GALLOP_MAX = 8;

/** A panel as subscribers see it: layout and display, never its SQL or source. */
export interface PanelSummary {
  id: string;
  title: string;
  type: string;
  unit?: string;
  options?: Record<string, unknown>;
  gridPos?: { x: number; y: number; w: number; h: number };
}

/**
 * A dashboard variable as subscribers see it (a query variable's SQL and source stay on the server): what the stream
 * host sends and the live page's variables bar reads. The stream host builds it from the spec's Variable, so the
 * compiler holds the two together (lib/ folders do not import each other in a cycle: live/ does not import
 * dashboards/).
 */
export interface VariableSummary {
  name: string;
  label?: string;
  type: "custom" | "query";
  values?: string[];
  default?: string | string[];
  multi?: boolean;
  includeAll?: boolean;
}

/** What subscribers learn about a dashboard: layout and saved defaults, never the panels' SQL. */
export interface DashboardSummary {
  id: string;
  version: number;
  title: string;
  /** The saved cadence (the default view's). */
  refreshIntervalMs: number;
  /** The saved range (the default view's). */
  time: { from: string; to: string };
  panels: PanelSummary[];
  variables?: VariableSummary[];
}

/**
 * The view a stream serves: the range expressions, cadence and variable values it was opened with
 * (absent parameters resolved to the saved defaults). `live` is false for a range ending in the past:
 * it was queried once and is not polled.
 */
export interface ViewSummary {
  from: string;
  to: string;
  refreshMs: number;
  /** The view's variable selection: names sorted, values sorted (`$__all` for All); a variable at its default is left out. */
  vars: Record<string, string[]>;
  live: boolean;
  /** True when the view is the dashboard's saved one (no view parameter differed from it). */
  saved: boolean;
}

/**
 * event: view. The view this stream serves changed state without a spec change: a range whose fixed end (`to`, an
 * instant) has passed was queried once more after it and is no longer live (`live: false`); its results stay.
 */
export type ViewFrame = ViewSummary;

/** event: snapshot. Sent first on every stream: the dashboard, the view and the latest result of each panel. */
export interface SnapshotFrame {
  dashboard: DashboardSummary;
  view: ViewSummary;
  panels: PanelUpdate[];
}

/** event: dashboard. The spec changed (a new summary and the view as now resolved) or the dashboard was deleted. */
export type DashboardFrame = (DashboardSummary & { view?: ViewSummary; deleted?: undefined }) | { id: string; deleted: true };

/** event: session_expired. Terminal: the session's `exp` passed, or (`reason: "revoked"`) it was revoked. */
export interface SessionExpiredFrame {
  expiresAt: number;
  reason?: "revoked";
}

/** Why a stream ended with `event: forbidden`. */
export type ForbiddenReason = "role_removed" | "workspace_deleted" | "access_revoked";

/**
 * event: forbidden. Terminal: the person lost their role in the dashboard's workspace (its role groups changed, it
 * was deleted, or a workspace admin revoked their access); a reconnect would be a 404.
 */
export interface ForbiddenFrame {
  workspaceId: string;
  reason: ForbiddenReason;
}

/** event: draining. Terminal: the instance is shutting down; reconnect after `retryMs` (also sent as `retry:`). */
export interface DrainingFrame {
  retryMs: number;
}

/** Every event the stream writes, by name, with its payload. Heartbeats are SSE comments, not events. */
export interface StreamFrames {
  snapshot: SnapshotFrame;
  panel: PanelUpdate;
  "panel-delta": PanelDeltaFrame;
  dashboard: DashboardFrame;
  view: ViewFrame;
  session_expired: SessionExpiredFrame;
  forbidden: ForbiddenFrame;
  draining: DrainingFrame;
}

export type StreamEventName = keyof StreamFrames;

/** One decoded event. */
export type StreamFrame = { [K in StreamEventName]: { event: K; data: StreamFrames[K] } }[StreamEventName];

/** The event names, for checks on both sides. */
export const STREAM_EVENTS: readonly StreamEventName[] = [
  "snapshot",
  "panel",
  "panel-delta",
  "dashboard",
  "view",
  "session_expired",
  "forbidden",
  "draining",
];

/** Events after which the server closes the stream. */
export const TERMINAL_EVENTS: ReadonlySet<StreamEventName> = new Set<StreamEventName>(["session_expired", "forbidden", "draining"]);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Decodes one SSE event of the stream: null for an unknown event name, data that is not JSON, or JSON
 * lacking the fields every consumer relies on (a newer server's extra fields pass through).
 */
export function decodeFrame(event: string, data: string): StreamFrame | null {
  if (!(STREAM_EVENTS as readonly string[]).includes(event)) return null;
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isRecord(v)) return null;
  switch (event as StreamEventName) {
    case "snapshot":
      if (!isRecord(v.dashboard) || !Array.isArray(v.panels) || !isRecord(v.view)) return null;
      return { event: "snapshot", data: v as unknown as SnapshotFrame };
    case "panel":
      if (typeof v.panelId !== "string" || typeof v.at !== "number" || !(isRecord(v.result) || isRecord(v.error))) return null;
      return { event: "panel", data: v as unknown as PanelUpdate };
    case "panel-delta":
      if (
        typeof v.panelId !== "string" ||
        typeof v.at !== "number" ||
        typeof v.rangeStart !== "number" ||
        typeof v.bucketColumn !== "number" ||
        !Array.isArray(v.buckets) ||
        !Array.isArray(v.rows)
      )
        return null;
      return { event: "panel-delta", data: v as unknown as PanelDeltaFrame };
    case "dashboard":
      if (typeof v.id !== "string") return null;
      return { event: "dashboard", data: v as unknown as DashboardFrame };
    case "view":
      if (typeof v.from !== "string" || typeof v.to !== "string" || typeof v.live !== "boolean") return null;
      return { event: "view", data: v as unknown as ViewFrame };
    case "session_expired":
      if (typeof v.expiresAt !== "number") return null;
      return { event: "session_expired", data: v as unknown as SessionExpiredFrame };
    case "forbidden":
      if (typeof v.workspaceId !== "string" || typeof v.reason !== "string") return null;
      return { event: "forbidden", data: v as unknown as ForbiddenFrame };
    case "draining":
      if (typeof v.retryMs !== "number") return null;
      return { event: "draining", data: v as unknown as DrainingFrame };
  }
}

/**
 * A snapshot event's data cut, without parsing its results, into its head (the dashboard and the view, parsed, with
 * no panels) and each panel's update as text, so that a page can parse and draw the panel it shows first before it
 * parses the other panels' results (megabytes for a large dashboard). `panel(i)` parses one: null when its text is not
 * the update of that panel, and then `whole()` (every update, from one parse of the data) is the answer.
 */
export interface SplitSnapshot {
  head: Omit<SnapshotFrame, "panels">;
  /** The panel ids, in the event's order. */
  ids: string[];
  panel(i: number): PanelUpdate | null;
  whole(): PanelUpdate[] | null;
}

const PANELS_KEY = '"panels":[';
const UPDATE_START = '{"panelId":';

/**
 * Cuts a snapshot's data as the stream host writes it (JSON.stringify of a SnapshotFrame: `panels` last, each update's
 * `panelId` first). Null when the data does not have that shape: the caller decodes it whole (decodeFrame).
 *
 * The cuts are where `},{"panelId":` follows the first update's start. A JSON cell holding such text inside a result
 * (an object cell keyed `panelId`) would add a cut inside an update; then the piece before it does not parse (it
 * stops inside that update), so at least one piece fails, and a page that parses every piece learns it and takes the
 * whole parse instead. A piece that parses to an update of another panel id is refused the same way.
 */
export function splitSnapshot(data: string): SplitSnapshot | null {
  const listAt = data.indexOf(PANELS_KEY + UPDATE_START);
  if (listAt === -1 || !data.endsWith("]}")) return null;
  const head = snapshotHead(data, listAt);
  if (!head) return null;
  const starts: number[] = [];
  const end = data.length - 2;
  for (let at = listAt + PANELS_KEY.length; at !== -1 && at < end; ) {
    starts.push(at);
    const next = data.indexOf(`},${UPDATE_START}`, at);
    at = next === -1 ? -1 : next + 2;
  }
  const ids = pieceIds(data, starts);
  if (!ids) return null;
  const pieces = starts.map((at, i) => data.slice(at, i + 1 < starts.length ? starts[i + 1]! - 1 : end));
  let whole: PanelUpdate[] | null | undefined;
  return {
    head,
    ids,
    panel: (i) => (pieces[i] === undefined ? null : pieceUpdate(pieces[i]!, ids[i]!)),
    whole() {
      if (whole === undefined) {
        const frame = decodeFrame("snapshot", data);
        whole = frame?.event === "snapshot" ? frame.data.panels : null;
      }
      return whole;
    },
  };
}

/** The start of a snapshot event's data, the event still arriving: its head and the panel updates complete so far. */
export interface SnapshotStart {
  head: Omit<SnapshotFrame, "panels">;
  /** The ids of the updates complete so far, in the event's order. */
  ids: string[];
  /** Parses one: null when its text is not the update of that panel (then the whole event's parse is the answer). */
  panel(i: number): PanelUpdate | null;
}

/**
 * Reads the start of a snapshot event's data (what a stream has received of it so far) with splitSnapshot's cuts: the
 * head once the panel list has begun, and each update followed by a cut, which is the text splitSnapshot gives for it
 * once the event is whole (a cut inside an update makes the piece before it fail to parse, as there). Null until the
 * panel list has begun, or when the data does not have the stream host's shape.
 */
export function readSnapshotStart(prefix: string): SnapshotStart | null {
  const listAt = prefix.indexOf(PANELS_KEY + UPDATE_START);
  if (listAt === -1) return null;
  const head = snapshotHead(prefix, listAt);
  if (!head) return null;
  const starts: number[] = [];
  const ends: number[] = [];
  for (let at = listAt + PANELS_KEY.length; ; ) {
    const next = prefix.indexOf(`},${UPDATE_START}`, at);
    if (next === -1) break;
    starts.push(at);
    ends.push(next + 1);
    at = next + 2;
  }
  const ids = pieceIds(prefix, starts);
  if (!ids) return null;
  return { head, ids, panel: (i) => (i < 0 || i >= ids.length ? null : pieceUpdate(prefix.slice(starts[i], ends[i]), ids[i]!)) };
}

/** The snapshot's dashboard and view, parsed from the text before its panel list (at `listAt`). */
function snapshotHead(data: string, listAt: number): Omit<SnapshotFrame, "panels"> | null {
  try {
    const parsed: unknown = JSON.parse(`${data.slice(0, listAt)}"panels":[]}`);
    if (!isRecord(parsed) || !isRecord(parsed.dashboard) || !isRecord(parsed.view)) return null;
    const { panels: _none, ...rest } = parsed as unknown as SnapshotFrame;
    return rest;
  } catch {
    return null;
  }
}

/** The panel id at the start of each piece; null when one has an escape in it (the whole parse reads those). */
function pieceIds(data: string, starts: readonly number[]): string[] | null {
  const ids: string[] = [];
  for (const at of starts) {
    const idEnd = data.indexOf('"', at + UPDATE_START.length + 1);
    const id = idEnd === -1 ? null : data.slice(at + UPDATE_START.length + 1, idEnd);
    if (id === null || id.includes("\\")) return null;
    ids.push(id);
  }
  return ids;
}

/** One piece parsed: the update of panel `id`, or null. */
function pieceUpdate(text: string, id: string): PanelUpdate | null {
  try {
    const v: unknown = JSON.parse(text);
    if (!isRecord(v) || v.panelId !== id || typeof v.at !== "number" || !(isRecord(v.result) || isRecord(v.error))) return null;
    return v as unknown as PanelUpdate;
  } catch {
    return null;
  }
}

/** The view query parameters of a stream URL, in Grafana's names: from, to, refresh, var-<name> (repeated). */
export interface ViewParams {
  from?: string;
  to?: string;
  refresh?: string;
  vars?: Record<string, string[]>;
}

/** The stream's path with the view's query parameters (absent ones are the saved defaults). */
export function streamUrl(dashboardId: string, view: ViewParams = {}): string {
  const q = new URLSearchParams();
  if (view.from !== undefined) q.set("from", view.from);
  if (view.to !== undefined) q.set("to", view.to);
  if (view.refresh !== undefined) q.set("refresh", view.refresh);
  for (const [name, values] of Object.entries(view.vars ?? {})) for (const v of values) q.append(`var-${name}`, v);
  const qs = q.toString();
  return `/api/dashboards/${encodeURIComponent(dashboardId)}/stream${qs ? `?${qs}` : ""}`;
}

/** Reads the view parameters from a page's query string (the live page passes its own URL's). */
export function viewParamsOf(search: URLSearchParams): ViewParams {
  const view: ViewParams = {};
  const from = search.get("from");
  const to = search.get("to");
  const refresh = search.get("refresh");
  if (from !== null) view.from = from;
  if (to !== null) view.to = to;
  if (refresh !== null) view.refresh = refresh;
  // A Map, then fromEntries: a name such as __proto__ or constructor stays a plain key.
  const vars = new Map<string, string[]>();
  for (const [key, value] of search) {
    if (!key.startsWith("var-")) continue;
    const name = key.slice(4);
    const list = vars.get(name) ?? [];
    list.push(value);
    vars.set(name, list);
  }
  if (vars.size > 0) view.vars = Object.fromEntries(vars);
  return view;
}
