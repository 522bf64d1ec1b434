import type pg from "pg";
import type { AiServices } from "../ai/services.ts";
import type { Config } from "../config/parse.ts";
import type { DrainState } from "../lifecycle/drain-state.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { BuildInfo } from "../probes/health.ts";
import type { Readiness } from "../probes/ready.ts";
import type { QueryRunner } from "../query/runner.ts";
import type { Guard } from "../sql-guard/verdict.ts";

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

/**
 * What the handlers app needs on top of ServiceDeps, built once per process from them
 * (lib/service/query-services.ts buildAppServices): no route builds its own.
 */
export interface AppServices {
  /** The SQL guard every save, preview, generation and chat proposal goes through. */
  guard: Guard;
  /** Settles once the guard's parser has loaded (loadGuardParser); rejects when it cannot load. */
  guardReady: Promise<void>;
  /** The guarded query runner (per-source pools); the entry point closes it on shutdown. */
  queryRunner: QueryRunner;
  /** The AI provider, admission gate and generation log of the AI routes. */
  ai: AiServices;
}
