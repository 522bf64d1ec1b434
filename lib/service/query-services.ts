import type { Config } from "../config/parse.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type QueryRunner, createQueryRunner } from "../query/runner.ts";
import { createSecretResolverFromConfig } from "../secrets/index.ts";
import { type Guard, createGuard, guardOptionsFromConfig, intervalFor, loadGuardParser } from "../sql-guard/index.ts";

/**
 * The SQL guard and the guarded query runner, built once per process: the guard after libpg-query's
 * WebAssembly parser has loaded, the runner with per-source pools and credentials resolved per connection.
 */
export async function buildQueryServices(
  config: Config,
  metrics: Pick<Metrics, "observeQuery" | "countGuardRejection" | "dropSource">,
): Promise<{ guard: Guard; queryRunner: QueryRunner }> {
  await loadGuardParser();
  const guard = createGuard(guardOptionsFromConfig(config));
  const queryRunner = createQueryRunner({
    config,
    metrics,
    guard,
    intervalFor,
    secrets: createSecretResolverFromConfig(config),
  });
  return { guard, queryRunner };
}
