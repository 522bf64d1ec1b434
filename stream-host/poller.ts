import { type DashboardSpec, type Panel, resolveTime } from "../lib/dashboards/spec.ts";
import { AppError } from "../lib/http/errors.ts";
import { QueryStalledError } from "../lib/query/portal.ts";
import { type KeyedLimiter, SlotWaitAborted } from "./limiter.ts";
import type { Timers } from "../lib/lifecycle/timers.ts";

/** A dashboard as the stream host serves it: the stored spec and the version it was read at. */
export interface LoadedDashboard {
  id: string;
  workspaceId: string;
  version: number;
  spec: DashboardSpec;
}

/** The time range of one tick, resolved once so every panel of the tick sees the same window. */
export interface TickRange {
  fromMs: number;
  toMs: number;
}

/**
 * Runs one panel's stored SQL through the guarded runner; throws (preferably an AppError) on failure.
 * `signal` aborts when the poller stops: a runner that does config-store work first must check it
 * before it starts the metric query.
 */
export type RunPanel = (panel: Panel, dashboard: LoadedDashboard, range: TickRange, signal: AbortSignal) => Promise<unknown>;

/**
 * What a panel failure looks like on the wire: a machine-readable `code` always (see panelError), the
 * guard's reason or `query_timeout` as `reason` where there is one, a safe message, and for a panel
 * backed off after timeouts the epoch ms at about which it runs again.
 */
export interface PanelError {
  code: string;
  reason?: string;
  message: string;
  retryAt?: number;
}

export type PanelUpdate =
  | { panelId: string; at: number; result: unknown }
  | { panelId: string; at: number; error: PanelError };

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

export interface PollerOptions {
  /** The current dashboard, read at the start of every tick so a spec change applies to the next one. */
  current(): LoadedDashboard;
  runPanel: RunPanel;
  /** Per-source concurrency limit shared by every poller of the process. */
  limiter: KeyedLimiter;
  /** Tick cadence for a spec (the dashboard's value or the default, clamped to the floor). */
  refreshMs(spec: DashboardSpec): number;
  onPanel(update: PanelUpdate): void;
  /** Wall time of a whole tick, in seconds, when it ends (only while the poller runs). */
  onTick(seconds: number): void;
  /** Unexpected failures (never a panel's own error, which goes to onPanel). */
  onFault?(err: unknown): void;
  timers: Timers;
  /** Epoch milliseconds, for `at` and the time range. */
  now(): number;
  /** A monotonic clock in milliseconds, for durations. */
  monotonic(): number;
}

/**
 * One dashboard's poller. Ticks never overlap: the next one is scheduled only after every panel of
 * the current one settled, `refreshMs` after the current one started (at once when it overran).
 * After stop() no new query starts, including panels of a running tick still waiting for a slot.
 * A panel that times out sits out the next 1, 2, 4 … ticks until it succeeds or the spec changes.
 */
export function createPoller(opts: PollerOptions) {
  let stopped = true;
  let timer: unknown = null;
  let ticking: Promise<void> | null = null;
  let again = false;
  let queriesStarted = 0;
  let abort = new AbortController();
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

  function schedule(delayMs: number) {
    if (stopped) return;
    if (timer !== null) opts.timers.clearTimeout(timer);
    timer = opts.timers.setTimeout(() => {
      timer = null;
      void tick();
    }, Math.max(0, delayMs));
  }

  /**
   * The error frame of a timeout, which backs the panel off: it sits out the next 1, 2, 4 … ticks (see
   * timeoutBackoffTicks) so a query that cannot finish does not cost the metrics store a full statement
   * timeout every tick. `tickAt` is when this tick started; the tick ends no earlier than now.
   */
  function timedOut(panel: Panel, err: unknown, refreshMs: number, tickAt: number): PanelError {
    const state = backoff.get(panel.id) ?? { timeouts: 0, skip: 0 };
    state.timeouts++;
    state.skip = timeoutBackoffTicks(state.timeouts, refreshMs);
    backoff.set(panel.id, state);
    const retryAt = Math.max(tickAt + refreshMs, opts.now()) + state.skip * refreshMs;
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
   * A slot of the panel's source, waiting at most until this dashboard's next tick is due: slots are
   * shared by every dashboard on the source, and when they are all held by queries that do not finish
   * (a hung source) a panel must not wait on other dashboards' panels beyond its own cadence. Null
   * when the wait ran out (or the poller stopped meanwhile).
   */
  async function slotFor(panel: Panel, refreshMs: number, tickAt: number): Promise<(() => void) | null> {
    const free = opts.limiter.tryAcquire(panel.sourceId);
    if (free) return free;
    const waiting = new AbortController();
    const onStop = () => waiting.abort();
    abort.signal.addEventListener("abort", onStop, { once: true });
    const timer = opts.timers.setTimeout(() => waiting.abort(), Math.max(0, tickAt + refreshMs - opts.now()));
    try {
      return await opts.limiter.acquire(panel.sourceId, waiting.signal);
    } catch (err) {
      if (err instanceof SlotWaitAborted) return null;
      throw err;
    } finally {
      opts.timers.clearTimeout(timer);
      abort.signal.removeEventListener("abort", onStop);
    }
  }

  async function runOne(panel: Panel, dashboard: LoadedDashboard, range: TickRange, refreshMs: number, tickAt: number): Promise<void> {
    const release = await slotFor(panel, refreshMs, tickAt);
    if (!release) {
      if (stopped) return;
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
      if (stopped) return;
      queriesStarted++;
      let update: PanelUpdate;
      try {
        const result = await opts.runPanel(panel, dashboard, range, abort.signal);
        backoff.delete(panel.id);
        update = { panelId: panel.id, at: opts.now(), result };
      } catch (err) {
        let error: PanelError;
        if (isQueryTimeout(err)) error = timedOut(panel, err, refreshMs, tickAt);
        else {
          // Only timeouts back a panel off: any other outcome ends a run of timeouts.
          backoff.delete(panel.id);
          error = panelError(err);
        }
        update = { panelId: panel.id, at: opts.now(), error };
      }
      if (!stopped) deliver(() => opts.onPanel(update));
    } finally {
      release();
    }
  }

  function tick(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (ticking) {
      // Never overlap: a tick asked for while one runs happens right after it.
      again = true;
      return ticking;
    }
    const run = (async () => {
      const started = opts.monotonic();
      // Used only when reading the dashboard itself failed: retry later rather than spin.
      let refresh = FAULT_RETRY_MS;
      try {
        const dashboard = opts.current();
        refresh = opts.refreshMs(dashboard.spec);
        const at = opts.now();
        let range: TickRange;
        try {
          range = { fromMs: resolveTime(dashboard.spec.time.from, at), toMs: resolveTime(dashboard.spec.time.to, at) };
        } catch {
          for (const p of dashboard.spec.panels) {
            deliver(() => opts.onPanel({ panelId: p.id, at, error: { code: "time_range_invalid", message: "The dashboard's time range is invalid." } }));
          }
          return;
        }
        if (backoffVersion !== dashboard.version) {
          backoff = new Map();
          backoffVersion = dashboard.version;
        }
        const due = dashboard.spec.panels.filter((p) => {
          const state = backoff.get(p.id);
          if (!state || state.skip === 0) return true;
          // Backed off after a timeout: no query and no frame (its last frame says when it runs again).
          state.skip--;
          return false;
        });
        await Promise.all(due.map((p) => runOne(p, dashboard, range, refresh, at)));
      } catch (err) {
        opts.onFault?.(err);
      } finally {
        const elapsed = opts.monotonic() - started;
        // A stopped poller's series are already dropped; observing now would bring them back.
        if (!stopped) deliver(() => opts.onTick(elapsed / 1000));
        ticking = null;
        if (again) {
          again = false;
          schedule(0);
        } else schedule(refresh - elapsed);
      }
    })();
    ticking = run;
    return run;
  }

  return {
    /** Starts ticking at once. */
    start() {
      if (!stopped) return;
      stopped = false;
      abort = new AbortController();
      backoff = new Map();
      backoffVersion = null;
      schedule(0);
    },
    /** Stops synchronously: no timer left, no further query. A running tick finishes its started queries. */
    stop() {
      stopped = true;
      abort.abort();
      if (timer !== null) opts.timers.clearTimeout(timer);
      timer = null;
      again = false;
    },
    /** Runs a tick now (or right after the running one), e.g. after a spec change. */
    tickNow(): void {
      if (stopped) return;
      if (ticking) again = true;
      else schedule(0);
    },
    /** Resolves when no tick is running (the in-flight queries of a stopped poller have settled). */
    async idle(): Promise<void> {
      while (ticking) await ticking;
    },
    get running() {
      return !stopped;
    },
    get ticking() {
      return ticking !== null;
    },
    /** Queries this poller has started (for tests and the bench). */
    get queriesStarted() {
      return queriesStarted;
    },
  };
}

export type Poller = ReturnType<typeof createPoller>;
