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

/** The handlers app's services (guard, query runner, AI services), built once per process by its entry point. */
export async function buildAppServices(deps: ServiceDeps): Promise<AppServices> {
  await loadGuardParser();
  return createAppServices(deps);
}

/**
 * As buildAppServices, for a caller that has loaded the guard's parser already (tests, through
 * handlers/testing/app-deps.ts), with any of the services given instead of built: a given guard is
 * also the one the built runner checks with.
 */
export function createAppServices(deps: ServiceDeps, given: Partial<AppServices> = {}): AppServices {
  const query = given.queryRunner
    ? { guard: given.guard ?? createGuard(guardOptionsFromConfig(deps.config)), queryRunner: given.queryRunner }
    : createQueryServices(deps.config, deps.metrics, given.guard);
  return { ...query, ai: given.ai ?? createAiServices(deps) };
}
