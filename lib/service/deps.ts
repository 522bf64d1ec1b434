import type pg from "pg";
import type { Config } from "../config/parse.ts";
import type { DrainState } from "../lifecycle/drain-state.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { BuildInfo } from "../probes/health.ts";
import type { Readiness } from "../probes/ready.ts";

/**
 * What every entry point builds once and passes in (no module-level singletons).
 * Tests build their own with a fresh database, registry and clock.
 */
export interface ServiceDeps {
  config: Config;
  /** Config-store pool. */
  pool: pg.Pool;
  metrics: Metrics;
  log: Logger;
  drain: DrainState;
  readiness: Readiness;
  build: BuildInfo;
  now: () => number;
  fetch: typeof globalThis.fetch;
}
