import type { Config } from "../lib/config/parse.ts";
import { AppError } from "../lib/http/errors.ts";
import { type QueryRunner, createQueryRunner } from "../lib/query/runner.ts";
import { createSecretResolverFromConfig } from "../lib/secrets/index.ts";
import type { ServiceDeps } from "../lib/service/deps.ts";
import { getSource } from "../lib/sources/index.ts";
import { createGuard, guardOptionsFromConfig, intervalFor, loadGuardParser } from "../lib/sql-guard/index.ts";
import type { RunPanel } from "./poller.ts";

/** Used when no runner was wired: every panel reports that its source cannot be queried. */
export const unavailableRunPanel: RunPanel = async () => {
  throw new AppError("source_unavailable", "The query runner is not available on this instance.");
};

/**
 * Panels through the guarded runner: the panel's source is read from the config store at every
 * tick (a refreshed catalog or a changed connection applies at once) and must belong to the
 * dashboard's workspace. A stopped poller's signal is checked after that read, so no metric query
 * starts once the drain began.
 */
export function runPanelWith(runner: Pick<QueryRunner, "run">, deps: Pick<ServiceDeps, "pool">): RunPanel {
  return async (panel, dashboard, range, signal) => {
    const source = await getSource(deps.pool, panel.sourceId);
    if (!source || source.workspaceId !== dashboard.workspaceId) {
      throw new AppError("not_found", "The panel's source does not exist in this workspace.");
    }
    if (signal.aborted) throw new AppError("source_unavailable", "The stream host is shutting down.");
    return runner.run({ source, workspaceId: dashboard.workspaceId, sql: panel.sql, range });
  };
}

/** The production runner: guard from config, secrets from files/env/Secrets Manager, metrics on the host's registry. */
export async function createGuardedRunner(
  config: Config,
  deps: Pick<ServiceDeps, "metrics" | "pool">,
): Promise<{ runner: QueryRunner; runPanel: RunPanel; closeQueries(): Promise<void> }> {
  await loadGuardParser();
  const runner = createQueryRunner({
    config,
    metrics: deps.metrics,
    guard: createGuard(guardOptionsFromConfig(config)),
    intervalFor,
    secrets: createSecretResolverFromConfig(config),
  });
  return { runner, runPanel: runPanelWith(runner, deps), closeQueries: () => runner.closeAll() };
}
