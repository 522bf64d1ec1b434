import { AppError } from "../lib/http/errors.ts";
import type { QueryRunner } from "../lib/query/runner.ts";
import type { ServiceDeps } from "../lib/service/deps.ts";
import { type Source, getSource } from "../lib/sources/index.ts";
import type { RunPanel } from "./poller.ts";

/** Used when no runner was wired: every panel reports that its source cannot be queried. */
export const unavailableRunPanel: RunPanel = async () => {
  throw new AppError("source_unavailable", "The query runner is not available on this instance.");
};

/** How long a source read from the config store is reused by the pollers. */
export const SOURCE_CACHE_MS = 5_000;

/**
 * Panels through the guarded runner: the panel's source is read from the config store (reused for
 * SOURCE_CACHE_MS, so a refreshed catalog or a changed connection applies within seconds while a
 * tick of many panels costs one read per source) and must belong to the dashboard's workspace. A
 * stopped poller's signal is checked after that read, so no metric query starts once the drain began.
 */
export function runPanelWith(
  runner: Pick<QueryRunner, "run">,
  deps: Pick<ServiceDeps, "pool"> & { now?: () => number },
  opts: { cacheMs?: number } = {},
): RunPanel {
  const now = deps.now ?? Date.now;
  const cacheMs = opts.cacheMs ?? SOURCE_CACHE_MS;
  const cache = new Map<string, { at: number; source: Promise<Source | null> }>();

  function sourceOf(id: string): Promise<Source | null> {
    const hit = cache.get(id);
    if (hit && now() - hit.at < cacheMs) return hit.source;
    const source = getSource(deps.pool, id);
    const entry = { at: now(), source };
    cache.set(id, entry);
    // A failed read is not kept: the next tick asks again.
    source.catch(() => {
      if (cache.get(id) === entry) cache.delete(id);
    });
    return source;
  }

  return async (panel, dashboard, range, signal) => {
    const source = await sourceOf(panel.sourceId);
    if (!source || source.workspaceId !== dashboard.workspaceId) {
      throw new AppError("not_found", "The panel's source does not exist in this workspace.");
    }
    if (signal.aborted) throw new AppError("source_unavailable", "The stream host is shutting down.");
    // Checked again by the runner once it has a connection: a checkout outlasting the stop sends nothing.
    return runner.run({ source, workspaceId: dashboard.workspaceId, sql: panel.sql, range, signal });
  };
}
