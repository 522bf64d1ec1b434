import { readFileSync } from "node:fs";
import { Registry } from "prom-client";
import type { Config } from "../config/parse.ts";
import { createDrainState } from "../lifecycle/drain-state.ts";
import { createLogger } from "../log/logger.ts";
import { createMetrics } from "../metrics/metrics.ts";
import { buildInfo, buildVersion } from "../probes/health.ts";
import { createReadiness } from "../probes/ready.ts";
import { createConfigStorePool } from "../store/pool.ts";
import type { ServiceDeps } from "./deps.ts";

function manifestVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

/** Builds the process's dependencies from validated config; called once by each entry point. */
export function buildServiceDeps(config: Config, overrides: Partial<ServiceDeps> = {}): ServiceDeps {
  const pool =
    overrides.pool ??
    createConfigStorePool({
      connectionString: config.DATABASE_URL,
      max: config.PG_POOL_MAX,
      statementTimeoutMs: config.CONFIG_STORE_STATEMENT_TIMEOUT_MS,
      // A store that does not accept a connection, or answer a query, within the readiness bound is not
      // ready either: a request waiting for it gives up (503 config_store_unavailable) as readiness does.
      connectTimeoutMs: config.READINESS_CHECK_TIMEOUT_MS,
      answerTimeoutMs: config.READINESS_CHECK_TIMEOUT_MS,
    });
  const drain = overrides.drain ?? createDrainState();
  const now = overrides.now ?? Date.now;
  const fetchFn = overrides.fetch ?? globalThis.fetch;
  return {
    config,
    pool,
    drain,
    now,
    fetch: fetchFn,
    metrics: overrides.metrics ?? createMetrics(new Registry()),
    log: overrides.log ?? createLogger({ now, level: config.LOG_LEVEL }),
    readiness: overrides.readiness ?? createReadiness({ pool, config, drain, fetch: fetchFn, now }),
    build: overrides.build ?? buildInfo(config, buildVersion(manifestVersion)),
  };
}
