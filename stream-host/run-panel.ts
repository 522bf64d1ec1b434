import { AppError } from "../lib/http/errors.ts";
import type { Timers } from "../lib/lifecycle/timers.ts";
import type { QueryRunner } from "../lib/query/runner.ts";
import type { ServiceDeps } from "../lib/service/deps.ts";
import { type Source, getSource } from "../lib/sources/index.ts";
import { withConfigStoreClient } from "../lib/store/deadline.ts";
import { configStoreFaultCode, configStoreUnavailable } from "../lib/store/faults.ts";
import type { Panel } from "../lib/dashboards/spec.ts";
import type { LoadedDashboard, PlanPanel, RunPanel } from "./poller.ts";
import { type ViewVariables, createViewVariables } from "./view-variables.ts";

/** The failure of a query when no runner was wired. */
export function runnerUnavailable(): AppError {
  return new AppError("source_unavailable", "The query runner is not available on this instance.", { cause: "runner_unavailable" });
}

/** Used when no runner was wired: every panel reports that its source cannot be queried. */
export const unavailableRunPanel: RunPanel = async () => {
  throw runnerUnavailable();
};

/** How long a source read from the config store is reused by the pollers. */
export const SOURCE_CACHE_MS = 5_000;

/** Default bound of one source read (the readiness check's default timeout). */
export const SOURCE_READ_TIMEOUT_MS = 2_000;

/** Default of CONFIG_STORE_STALE_MAX_MS. */
export const STALE_MAX_MS = 600_000;

interface CacheEntry {
  /** When the source was last read successfully (epoch ms), and what it was; absent before the first success. */
  good?: { at: number; source: Source | null };
  /** The read in flight, shared by every panel of the source. */
  reading?: Promise<Source | null>;
  /** When the last read was started, so a copy younger than the cache time is reused without a read. */
  readAt: number;
  /** True while the config store failed the last read: panels then use the last good copy without waiting. */
  failing: boolean;
}

/**
 * Panels through the guarded runner: the panel's source is read from the config store (reused for
 * SOURCE_CACHE_MS, so a refreshed catalog or a changed connection applies within seconds while a
 * tick of many panels costs one read per source) and must belong to the dashboard's workspace. A
 * stopped poller's signal is checked after that read, so no metric query starts once the drain began.
 *
 * While the config store is down or hung, panels keep running on the last good copy of their source:
 * a read is bounded by `readTimeoutMs` (its client is given up when it runs out), and once a read failed
 * the next ones go on in the background while panels use the copy at once, so a hung store never
 * stalls a tick again. A copy older than `staleMaxMs` (CONFIG_STORE_STALE_MAX_MS) is no longer used:
 * the panel fails with `config_store_unavailable` until the store answers again.
 */
export function runPanelWith(
  runner: Pick<QueryRunner, "run">,
  deps: Pick<ServiceDeps, "pool"> & { now?: () => number; timers?: Timers; variables?: ViewVariables },
  opts: { cacheMs?: number; readTimeoutMs?: number; staleMaxMs?: number } = {},
): RunPanel {
  return panelRunnerWith(runner, deps, opts).run;
}

/**
 * As runPanelWith, with `plan` beside `run`: whether a panel may tick incrementally, decided on its
 * source's catalog read through the same cache.
 */
export function panelRunnerWith(
  runner: Pick<QueryRunner, "run"> & Partial<Pick<QueryRunner, "plan">>,
  deps: Pick<ServiceDeps, "pool"> & {
    now?: () => number;
    timers?: Timers;
    /** The variable values a panel binds (stream-host/view-variables.ts); default: without query variables' options. */
    variables?: ViewVariables;
  },
  opts: {
    cacheMs?: number;
    readTimeoutMs?: number;
    staleMaxMs?: number;
    /** Share a tick's identical queries across dashboards and views (RunRequest.share, COALESCE_PANEL_QUERIES). */
    share?: boolean;
  } = {},
): { run: RunPanel; plan: PlanPanel } {
  const now = deps.now ?? Date.now;
  const variables = deps.variables ?? createViewVariables(null);
  const cacheMs = opts.cacheMs ?? SOURCE_CACHE_MS;
  const readTimeoutMs = opts.readTimeoutMs ?? SOURCE_READ_TIMEOUT_MS;
  const staleMaxMs = opts.staleMaxMs ?? STALE_MAX_MS;
  const cache = new Map<string, CacheEntry>();

  function read(id: string, entry: CacheEntry): Promise<Source | null> {
    entry.readAt = now();
    const reading = withConfigStoreClient(deps.pool, readTimeoutMs, (client) => getSource(client, id), { timers: deps.timers });
    entry.reading = reading;
    reading
      .then(
        (source) => {
          entry.good = { at: now(), source };
          entry.failing = false;
        },
        (err: unknown) => {
          // Only the store's own failure keeps the copy in use; any other error is not an outage.
          if (configStoreFaultCode(err) !== undefined) entry.failing = true;
        },
      )
      .finally(() => {
        if (entry.reading === reading) entry.reading = undefined;
      });
    return reading;
  }

  function lastGood(entry: CacheEntry, err: unknown): Source | null {
    const cause = configStoreFaultCode(err);
    if (cause === undefined) throw err;
    if (!entry.good) throw configStoreUnavailable(cause);
    if (now() - entry.good.at > staleMaxMs) throw staleCopy(entry.good.at);
    return entry.good.source;
  }

  async function sourceOf(id: string): Promise<Source | null> {
    let entry = cache.get(id);
    if (!entry) {
      entry = { readAt: 0, failing: false };
      cache.set(id, entry);
    }
    if (entry.good && !entry.reading && now() - entry.readAt < cacheMs) {
      if (entry.failing && now() - entry.good.at > staleMaxMs) throw staleCopy(entry.good.at);
      return entry.good.source;
    }
    const reading = entry.reading ?? read(id, entry);
    // The store failed the last read: keep ticking on the copy while this one is tried in the background.
    if (entry.failing && entry.good) {
      reading.catch(() => {});
      if (now() - entry.good.at > staleMaxMs) throw staleCopy(entry.good.at);
      return entry.good.source;
    }
    try {
      return await reading;
    } catch (err) {
      return lastGood(entry, err);
    }
  }

  function staleCopy(goodAt: number): AppError {
    const minutes = Math.max(1, Math.round((now() - goodAt) / 60_000));
    const err = configStoreUnavailable("stale");
    return new AppError(
      "config_store_unavailable",
      `The configuration store has not answered for about ${minutes} min, longer than CONFIG_STORE_STALE_MAX_MS: the panel stopped until it answers again.`,
      err.extra,
      err.headers,
    );
  }

  async function sourceFor(panel: Panel, dashboard: LoadedDashboard, signal: AbortSignal): Promise<Source> {
    const source = await sourceOf(panel.sourceId);
    if (!source || source.workspaceId !== dashboard.workspaceId) {
      throw new AppError("not_found", "The panel's source does not exist in this workspace.");
    }
    if (signal.aborted) throw new AppError("source_unavailable", "The stream host is shutting down.", { cause: "draining" });
    return source;
  }

  return {
    async run(panel, dashboard, range, signal, window, onHeld) {
      const source = await sourceFor(panel, dashboard, signal);
      // Checked again by the runner once it has a connection: a checkout outlasting the stop sends nothing.
      const declared = dashboard.spec.variables ?? [];
      const variableValues = await variables.valuesFor(panel, dashboard);
      if (signal.aborted) throw new AppError("source_unavailable", "The stream host is shutting down.", { cause: "draining" });
      return runner.run({
        source,
        workspaceId: dashboard.workspaceId,
        sql: panel.sql,
        range,
        signal,
        window,
        onHeld,
        variables: declared.map((v) => ({ name: v.name, multi: v.multi })),
        variableValues,
        ...(opts.share && range.at !== undefined ? { share: { at: range.at } } : {}),
      });
    },
    async plan(panel, dashboard, signal) {
      if (!runner.plan) return { ok: false, reason: "the runner cannot plan incremental ticks" };
      const source = await sourceFor(panel, dashboard, signal);
      const declared = dashboard.spec.variables ?? [];
      return runner.plan({ source, sql: panel.sql, variables: declared.map((v) => ({ name: v.name, multi: v.multi })) });
    },
  };
}
