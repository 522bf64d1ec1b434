import { createAiServices } from "../ai/services.ts";
import type { Config } from "../config/parse.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type QueryRunner, createQueryRunner } from "../query/runner.ts";
import { createSecretResolverFromConfig } from "../secrets/index.ts";
import { type Guard, createGuard, guardOptionsFromConfig, intervalFor, loadGuardParser } from "../sql-guard/index.ts";
import type { AppServices, ServiceDeps } from "./deps.ts";

/**
 * The SQL guard and the guarded query runner, built once per process: the guard after libpg-query's
 * WebAssembly parser has loaded, the runner with per-source pools and credentials resolved per connection.
 */
export async function buildQueryServices(
  config: Config,
  metrics: Pick<Metrics, "observeQuery" | "countGuardRejection" | "dropSource">,
): Promise<{ guard: Guard; queryRunner: QueryRunner }> {
  await loadGuardParser();
  return createQueryServices(config, metrics);
}

function createQueryServices(
  config: Config,
  metrics: Pick<Metrics, "observeQuery" | "countGuardRejection" | "dropSource">,
  guard: Guard = createGuard(guardOptionsFromConfig(config)),
): { guard: Guard; queryRunner: QueryRunner } {
  const queryRunner = createQueryRunner({
    config,
    metrics,
    guard,
    intervalFor,
    secrets: createSecretResolverFromConfig(config),
  });
  return { guard, queryRunner };
}

/**
 * The handlers app's services (guard, query runner, AI services), built once per process by its entry point;
 * tests give some of them instead (handlers/testing/app-deps.ts), and a given guard is also the one the
 * built runner checks with. The guard's parser starts loading here and is not awaited, so the listener opens
 * while it loads (about a seventh of a cold start): `guardReady` settles once it has loaded, and the app holds
 * every request but the probes and the scrape until then (handlers/app.ts).
 */
export function buildAppServices(deps: ServiceDeps, given: Partial<AppServices> = {}): AppServices {
  const query = given.queryRunner
    ? { guard: given.guard ?? createGuard(guardOptionsFromConfig(deps.config)), queryRunner: given.queryRunner }
    : createQueryServices(deps.config, deps.metrics, given.guard);
  return { ...query, ai: given.ai ?? createAiServices(deps), guardReady: given.guardReady ?? loadGuardParser() };
}
