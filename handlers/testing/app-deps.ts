// Test-only: the deps of createApp, built the way the entry points build them (lib/service), with the
// test's pool, log, clock and any service the test brings (a fixture's runner, a shared guard).
import type { Config } from "../../lib/config/parse.ts";
import { buildServiceDeps } from "../../lib/service/build-deps.ts";
import type { AppServices, ServiceDeps } from "../../lib/service/deps.ts";
import { buildAppServices } from "../../lib/service/query-services.ts";

/**
 * buildServiceDeps(config, overrides) plus the guard, the query runner and the AI services
 * (buildAppServices). The guard's parser must be loaded before a guarded query runs
 * (loadGuardParser, as the fixtures' beforeAll do).
 */
export function testAppDeps(config: Config, overrides: Partial<ServiceDeps> & Partial<AppServices> = {}): ServiceDeps & AppServices {
  const { guard, queryRunner, ai, guardReady, ...service } = overrides;
  const deps = buildServiceDeps(config, service);
  return { ...deps, ...buildAppServices(deps, { guard, queryRunner, ai, guardReady }) };
}
