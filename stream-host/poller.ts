import { type DashboardSpec, type Panel, resolveTime } from "../lib/dashboards/spec.ts";
import { AppError } from "../lib/http/errors.ts";
import type { PanelError, PanelUpdate, QueryResult } from "../lib/live/frames.ts";
import type { IncrementalVerdict } from "../lib/live/incremental.ts";
import { QueryStalledError } from "../lib/query/portal.ts";
import type { HeldListener } from "../lib/query/runner.ts";
import { type KeyedLimiter, SlotWaitAborted } from "./limiter.ts";
import type { Timers } from "../lib/lifecycle/timers.ts";

/** A dashboard as the stream host serves it: the stored spec and the version it was read at. */
export interface LoadedDashboard {
  id: string;
  workspaceId: string;
  version: number;
  spec: DashboardSpec;
  /** A view's variable selection by name (absent, or a name left out: that variable at its default). */
  vars?: Record<string, string[]>;
  /**
   * The stored spec's range and cadence when `spec` is a view's (stream-host/hub.ts): query variables' options
   * are read over the stored range, the same for every view.
   */
  saved?: Pick<DashboardSpec, "time" | "refreshIntervalMs">;
}

/** The time range of one tick, resolved once so every panel of the tick sees the same window. */
export interface TickRange {
  fromMs: number;
  toMs: number;
  /** The instant (epoch ms) the tick resolved the range at: runs of one instant may share a query. */
  at?: number;
}

/**
 * Runs one panel's stored SQL through the guarded runner; throws (preferably an AppError) on failure.
 * `signal` aborts when the poller stops: a runner that does config-store work first must check it
 * before it starts the metric query.
 */
export type RunPanel = (
  panel: Panel,
  dashboard: LoadedDashboard,
  range: TickRange,
  signal: AbortSignal,
  /** Read only this part of the range, with the whole range's `$__interval` (an incremental tick). */
  window?: TickRange,
  /**
   * Told when a statement of this run outlived its timeout and is held (lib/query/runner.ts, ExecuteRequest.onHeld);
   * a wrapper of a RunPanel passes it on.
   */
  onHeld?: HeldListener,
) => Promise<QueryResult>;

/** Whether a panel's statement may tick incrementally (lib/live/incremental.ts), given its source. */
export type PlanPanel = (panel: Panel, dashboard: LoadedDashboard, signal: AbortSignal) => Promise<IncrementalVerdict>;

/** The wire types of a panel's frame (lib/live/frames.ts). */
export type { PanelError, PanelUpdate };

/** A code is a short identifier; anything else (never expected) is not put on the wire. */
const CODE = /^[a-z][a-z0-9_]{0,47}$/;

/**
 * Turns any failure into the panel's error; only AppError details are shown, anything else is generic.
 * The code is the most specific one the error carries: why a source was unavailable (`extra.cause`:
 * `connection_refused`, `connect_timeout`, …), the guard's reason (`extra.reason`: `keyword`, `time`, …),
 * else the error's own code (`query_timeout`, `config_store_unavailable`, `not_found`, …).
 */
export function panelError(err: unknown): PanelError {
  if (err instanceof AppError) {
    const reason = typeof err.extra.reason === "string" && CODE.test(err.extra.reason) ? err.extra.reason : undefined;
    const cause = typeof err.extra.cause === "string" && CODE.test(err.extra.cause) ? err.extra.cause : undefined;
    const code = (err.code === "source_unavailable" ? cause : undefined) ?? reason ?? err.code;
    return reason !== undefined ? { code, reason, message: err.detail } : { code, message: err.detail };
  }
  return { code: "internal", message: "The panel's query failed." };
}

const FAULT_RETRY_MS = 5_000;

/** Longest gap between two attempts of a panel that keeps timing out (docs/stream-host.md). */
export const TIMEOUT_BACKOFF_MAX_MS = 300_000;

/** Whether a panel failed by running into the statement timeout (the database's or the runner's stall watchdog). */
export function isQueryTimeout(err: unknown): boolean {
  return (err instanceof AppError && err.code === "query_timeout") || err instanceof QueryStalledError;
}

/**
 * Ticks a panel sits out after its `timeouts`-th timeout in a row: 1, 2, 4, 8 … doubling, capped so that
 * the gap between two attempts, (skipped + 1) ticks, stays within TIMEOUT_BACKOFF_MAX_MS (at least 1).
 */
export function timeoutBackoffTicks(timeouts: number, refreshMs: number): number {
  const cap = Math.max(1, Math.floor(TIMEOUT_BACKOFF_MAX_MS / Math.max(1, refreshMs)) - 1);
  return Math.min(2 ** Math.min(Math.max(0, timeouts - 1), 30), cap);
}

/** A panel that keeps timing out: how many timeouts in a row, and how many of the next ticks it still sits out. */
interface Backoff {
  timeouts: number;
  skip: number;
}

/**
 * Panel runs in flight, keyed by dashboard and panel (panelRunKey). One set is shared by every poller of
 * the process, so a poller started while a stopped one's run of the same panel is still out (a viewer
 * reloading the page) waits for that run instead of starting a second.
 */
export type PanelRuns = Set<string>;

/** The key of a panel's run in PanelRuns. */
export function panelRunKey(dashboardId: string, panelId: string): string {
  return `${dashboardId}\u0000${panelId}`;
}

export interface PollerOptions {
  /** The current dashboard, read at the start of every tick so a spec change applies to the next one. */
  current(): LoadedDashboard;
  runPanel: RunPanel;
  /** Per-source concurrency limit shared by every poller of the process. */
  limiter: KeyedLimiter;
  /** Panel runs in flight, shared by every poller of the process (default: this poller's own). */
  inFlight?: PanelRuns;
  /**
   * What this poller's runs are keyed by in `inFlight` (default: the dashboard id). Pollers of different
   * views of one dashboard run the same panels with other ranges, so each view has its own key.
   */
  runKey?: string;
  /** Tick cadence for a spec (the dashboard's value or the default, clamped to the floor). */
  refreshMs(spec: DashboardSpec): number;
  /**
   * The origin (epoch ms) of the tick grid of a cadence, shared by the pollers of the process that tick at it
   * (the first tick to ask, at `at`, sets it). With it, a tick after the first falls on origin + k x cadence, at
   * least half a cadence after the previous one started, and resolves its range at that instant: pollers of one
   * cadence read the same range at the same instant, so identical panel queries can be shared
   * (RunRequest.share). Without it, a tick is due one cadence after the previous one started.
   */
  grid?(refreshMs: number, at: number): number;
  /** A panel's frame, as soon as its run completes (never after stop()). */
  onPanel(update: PanelUpdate): void;
  /**
   * Wall time of a tick, in seconds, when it ends: when every panel it started has finished, or at its
   * bound (one refresh interval after it started) with the panels whose query still runs left out.
   * Only while the poller runs. `startedAt`: the epoch ms the tick started at (its range was resolved then).
   */
  onTick(seconds: number, startedAt: number): void;
  /** Unexpected failures (never a panel's own error, which goes to onPanel). */
  onFault?(err: unknown): void;
  timers: Timers;
  /** Epoch milliseconds, for `at` and the time range. */
  now(): number;
  /** A monotonic clock in milliseconds, for durations. */
  monotonic(): number;
}

/** One tick: what it started, and whether it is over. */
interface Tick {
  /** Epoch ms it started at, and its cadence: its bound is at + refresh. */
  at: number;
  refresh: number;
  /** Monotonic ms it started at, for its duration. */
  started: number;
  /** The poller generation (start() count) it belongs to. */
  generation: number;
  /** Aborted at the bound (or by stop()): panels still waiting for a source slot give up. */
  bound: AbortController;
  boundTimer: unknown;
  /** Runs of this tick not finished, and those of them still waiting for a slot. */
  open: number;
  waiting: number;
  expired: boolean;
  ended: boolean;
  done: Promise<void>;
  finish(): void;
}

/**
 * One dashboard's poller. Ticks never overlap, and a panel never has two runs at once: a tick starts
 * every panel whose previous run has finished (and that is not backed off), sends each panel's frame as
 * soon as its run completes, and ends when every panel it started has finished or, at the latest, one
 * refresh interval after it started. A panel still running then (a hung or slow source) is left to
 * finish on its own, its frame sent when it completes or times out, and the following ticks skip it
 * until it has. The next tick starts one interval after the previous one started, or as soon as it ended
 * when it ended later. After stop() no new query starts and no frame is sent; idle() awaits the runs
 * still out. A panel that times out sits out the next 1, 2, 4 … ticks until it succeeds or the spec changes.
 */
export function createPoller(opts: PollerOptions) {
  let stopped = true;
  let generation = 0;
  let timer: unknown = null;
  /** Epoch ms the scheduled tick is due at (for retryAt). */
  let nextTickAt: number | null = null;
  /** The grid instant the scheduled tick resolves its range at (null: the instant it starts). */
  let nextGridAt: number | null = null;
  let tick: Tick | null = null;
  let again = false;
  let queriesStarted = 0;
  let abort = new AbortController();
  const inFlight = opts.inFlight ?? new Set<string>();
  /** This poller's runs still out, whatever tick started them. */
  const runs = new Set<Promise<void>>();
  // Panels backed off after timeouts, by panel id, for the spec version they were recorded under: a new
  // version (a spec change) or a restart starts every panel afresh at the cadence.
  let backoff = new Map<string, Backoff>();
  let backoffVersion: number | null = null;

  /** A failing consumer (serialization, a socket) is reported, never allowed to break the tick loop. */
  function deliver(fn: () => void) {
    try {
      fn();
    } catch (err) {
      opts.onFault?.(err);
    }
  }

  function schedule(delayMs: number, gridAt: number | null = null) {
    if (stopped) return;
    if (timer !== null) opts.timers.clearTimeout(timer);
    const delay = Math.max(0, delayMs);
    nextTickAt = gridAt !== null && delay > 0 ? gridAt : opts.now() + delay;
    nextGridAt = gridAt;
    timer = opts.timers.setTimeout(() => {
      timer = null;
      nextTickAt = null;
      const at = nextGridAt;
      nextGridAt = null;
      startTick(at);
    }, delay);
  }

  /** The next grid instant after tick `t`: the first at least half a cadence after it started (maybe already past). */
  function nextOnGrid(t: Tick, grid: NonNullable<PollerOptions["grid"]>): number {
    const origin = grid(t.refresh, t.at);
    const k = Math.ceil((t.at + t.refresh / 2 - origin) / t.refresh);
    return origin + k * t.refresh;
  }

  /** Epoch ms at which the next tick is due: the running tick's bound, else the scheduled one. */
  function nextTickDue(refreshMs: number): number {
    if (tick && !tick.ended) return tick.at + tick.refresh;
    return nextTickAt ?? opts.now() + refreshMs;
  }

  /**
   * The error frame of a timeout, which backs the panel off: it sits out the next 1, 2, 4 … ticks (see
   * timeoutBackoffTicks) so a query that cannot finish does not cost the metrics store a full statement
   * timeout every tick.
   */
  function timedOut(panel: Panel, err: unknown, refreshMs: number): PanelError {
    const state = backoff.get(panel.id) ?? { timeouts: 0, skip: 0 };
    state.timeouts++;
    state.skip = timeoutBackoffTicks(state.timeouts, refreshMs);
    backoff.set(panel.id, state);
    const retryAt = Math.max(nextTickDue(refreshMs), opts.now()) + state.skip * refreshMs;
    const first = err instanceof AppError ? err.detail : "The query did not finish within QUERY_TIMEOUT_SECONDS.";
    const times = state.timeouts === 1 ? "once" : `${state.timeouts} times in a row`;
    const ticks = state.skip === 1 ? "refresh" : `${state.skip} refreshes`;
    return {
      code: "query_timeout",
      reason: "query_timeout",
      message: `${first} It timed out ${times}, so the panel skips the next ${ticks} and runs again at about ${new Date(retryAt).toISOString()}.`,
      retryAt,
    };
  }

  /**
   * Whether a run's outcome still answers what the dashboard asks: same poller generation, not stopped,
   * and the panel still there with the same source and SQL (a spec change while it ran drops its frame).
   */
  function stillAsked(panel: Panel, version: number, gen: number): boolean {
    if (stopped || gen !== generation) return false;
    let dashboard: LoadedDashboard;
    try {
      dashboard = opts.current();
    } catch {
      return false;
    }
    if (dashboard.version === version) return true;
    const now = dashboard.spec.panels.find((p) => p.id === panel.id);
    return now !== undefined && now.sourceId === panel.sourceId && now.sql === panel.sql;
  }

  /**
   * A slot of the panel's source, waiting at most until the tick's bound (this dashboard's next tick is
   * due): slots are shared by every dashboard on the source, and when they are all held by queries that
   * do not finish (a hung source) a panel must not wait on other dashboards' panels beyond its own
   * cadence. Null when the wait ran out (or the poller stopped meanwhile).
   */
  async function slotFor(panel: Panel, t: Tick): Promise<(() => void) | null> {
    const free = opts.limiter.tryAcquire(panel.sourceId);
    if (free) return free;
    t.waiting++;
    try {
      return await opts.limiter.acquire(panel.sourceId, t.bound.signal);
    } catch (err) {
      if (err instanceof SlotWaitAborted) return null;
      throw err;
    } finally {
      t.waiting--;
    }
  }

  async function runOne(panel: Panel, dashboard: LoadedDashboard, range: TickRange, t: Tick): Promise<void> {
    const release = await slotFor(panel, t);
    if (!release) {
      if (!stillAsked(panel, dashboard.version, t.generation)) return;
      // No query ran: a run of timeouts (backoff) is neither extended nor ended by this.
      const limit = opts.limiter.running(panel.sourceId);
      const busy: PanelError = {
        code: "source_busy",
        message: `All ${limit} query slots of source ${panel.sourceId} are held by queries that have not finished (the source may not be answering); the panel tries again at the next refresh.`,
      };
      deliver(() => opts.onPanel({ panelId: panel.id, at: opts.now(), error: busy }));
      return;
    }
    try {
      if (stopped || t.generation !== generation) return;
      // Past its slot wait: a tick that reaches its bound leaves this run to finish on its own.
      maybeEnd(t);
      queriesStarted++;
      let outcome: { result: QueryResult } | { err: unknown };
      // A statement that outlived its timeout on a source that cannot confirm it ended keeps this run, and its
      // slot, until the source does: the panel says why meanwhile.
      const held = (notice: unknown) => {
        if (!stillAsked(panel, dashboard.version, t.generation)) return;
        deliver(() => opts.onPanel({ panelId: panel.id, at: opts.now(), error: panelError(notice) }));
      };
      try {
        outcome = { result: await opts.runPanel(panel, dashboard, range, abort.signal, undefined, held) };
      } catch (err) {
        outcome = { err };
      }
      if (!stillAsked(panel, dashboard.version, t.generation)) return;
      // The backoff map belongs to one spec version; an outcome of an older one does not touch it.
      const current = backoffVersion === dashboard.version;
      let update: PanelUpdate;
      if ("result" in outcome) {
        if (current) backoff.delete(panel.id);
        update = { panelId: panel.id, at: opts.now(), result: outcome.result };
      } else {
        let error: PanelError;
        if (isQueryTimeout(outcome.err) && current) error = timedOut(panel, outcome.err, t.refresh);
        else {
          // Only timeouts back a panel off: any other outcome ends a run of timeouts.
          if (current) backoff.delete(panel.id);
          error = panelError(outcome.err);
        }
        update = { panelId: panel.id, at: opts.now(), error };
      }
      deliver(() => opts.onPanel(update));
    } finally {
      release();
    }
  }

  /** Starts one panel's run in tick `t`; it counts as in flight until it has settled. */
  function launch(panel: Panel, dashboard: LoadedDashboard, range: TickRange, t: Tick) {
    const key = panelRunKey(opts.runKey ?? dashboard.id, panel.id);
    inFlight.add(key);
    t.open++;
    const run: Promise<void> = runOne(panel, dashboard, range, t)
      .catch((err: unknown) => opts.onFault?.(err))
      .finally(() => {
        inFlight.delete(key);
        runs.delete(run);
        t.open--;
        maybeEnd(t);
      });
    runs.add(run);
  }

  /** A tick ends once every run it started finished, or after its bound once none is waiting for a slot. */
  function maybeEnd(t: Tick) {
    if (t.ended) return;
    if (t.open === 0 || (t.expired && t.waiting === 0)) end(t);
  }

  /** The bound: panels waiting for a slot give up (source_busy); runs whose query is out are left running. */
  function expire(t: Tick) {
    if (t.expired) return;
    t.expired = true;
    opts.timers.clearTimeout(t.boundTimer);
    t.bound.abort();
    maybeEnd(t);
  }

  function end(t: Tick) {
    if (t.ended) return;
    t.ended = true;
    opts.timers.clearTimeout(t.boundTimer);
    if (tick === t) tick = null;
    const elapsed = opts.monotonic() - t.started;
    // A stopped poller's series are already dropped; observing now would bring them back.
    if (!stopped && t.generation === generation) {
      deliver(() => opts.onTick(elapsed / 1000, t.at));
      if (again) {
        again = false;
        schedule(0);
      } else if (opts.grid) {
        const at = nextOnGrid(t, opts.grid);
        schedule(at - opts.now(), at);
      } else schedule(t.expired ? 0 : t.refresh - elapsed);
    }
    t.finish();
  }

  function startTick(gridAt: number | null = null): void {
    if (stopped || tick) {
      // Never overlap: a tick asked for while one runs happens right after it.
      if (tick) again = true;
      return;
    }
    let finish = () => {};
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const t: Tick = {
      // On the grid, the range is resolved at the grid instant even when the timer fired a little late.
      at: gridAt ?? opts.now(),
      // Used only when reading the dashboard itself failed: retry later rather than spin.
      refresh: FAULT_RETRY_MS,
      started: opts.monotonic(),
      generation,
      bound: new AbortController(),
      boundTimer: null,
      open: 0,
      waiting: 0,
      expired: false,
      ended: false,
      done,
      finish,
    };
    tick = t;
    try {
      const dashboard = opts.current();
      t.refresh = opts.refreshMs(dashboard.spec);
      let range: TickRange;
      try {
        range = { fromMs: resolveTime(dashboard.spec.time.from, t.at), toMs: resolveTime(dashboard.spec.time.to, t.at), at: t.at };
      } catch {
        for (const p of dashboard.spec.panels) {
          deliver(() =>
            opts.onPanel({
              panelId: p.id,
              at: t.at,
              error: { code: "time_range_invalid", message: "The dashboard's time range is invalid." },
            }),
          );
        }
        end(t);
        return;
      }
      if (backoffVersion !== dashboard.version) {
        backoff = new Map();
        backoffVersion = dashboard.version;
      }
      const due = dashboard.spec.panels.filter((p) => {
        // Still running from an earlier tick (or a stopped poller of this dashboard): its frame comes when it completes.
        if (inFlight.has(panelRunKey(opts.runKey ?? dashboard.id, p.id))) return false;
        const state = backoff.get(p.id);
        if (!state || state.skip === 0) return true;
        // Backed off after a timeout: no query and no frame (its last frame says when it runs again).
        state.skip--;
        return false;
      });
      t.boundTimer = opts.timers.setTimeout(() => expire(t), t.refresh);
      for (const p of due) launch(p, dashboard, range, t);
      maybeEnd(t);
    } catch (err) {
      opts.onFault?.(err);
      end(t);
    }
  }

  return {
    /** Starts ticking at once. */
    start() {
      if (!stopped) return;
      stopped = false;
      generation++;
      abort = new AbortController();
      backoff = new Map();
      backoffVersion = null;
      schedule(0);
    },
    /**
     * Stops synchronously: no timer left, no further query, no further frame. Panels waiting for a slot
     * give up; queries already out run to their end (idle() awaits them).
     */
    stop() {
      stopped = true;
      abort.abort();
      if (timer !== null) opts.timers.clearTimeout(timer);
      timer = null;
      nextTickAt = null;
      nextGridAt = null;
      again = false;
      if (tick) {
        expire(tick);
        // Its waiting panels give up on their own (idle() awaits their runs); a restart starts afresh.
        tick = null;
      }
    },
    /** Runs a tick now (or right after the running one), e.g. after a spec change. */
    tickNow(): void {
      if (stopped) return;
      if (tick) again = true;
      else schedule(0);
    },
    /** Resolves when the tick and every panel run out now have settled (all of them, for a stopped poller). */
    async idle(): Promise<void> {
      await Promise.all([...runs, ...(tick ? [tick.done] : [])]);
    },
    get running() {
      return !stopped;
    },
    /** True while a tick runs. */
    get ticking() {
      return tick !== null;
    },
    /** True while a tick runs or any panel run of this poller is still out. */
    get busy() {
      return tick !== null || runs.size > 0;
    },
    /** Panel runs of this poller still out. */
    get inFlight() {
      return runs.size;
    },
    /** Queries this poller has started (for tests and the bench). */
    get queriesStarted() {
      return queriesStarted;
    },
  };
}

export type Poller = ReturnType<typeof createPoller>;
