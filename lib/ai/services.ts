import type pg from "pg";
import type { Config } from "../config/parse.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type AdmissionGate, createAdmissionGate } from "./admission.ts";
import { type GenerationLog, createGenerationLog } from "./generation-log.ts";
import type { ModelCallDeps } from "./invoke.ts";
import { type AiProviderState, createAiProvider, requireProvider } from "./provider.ts";

/** Everything the AI routes share, built once per process (provider clients are never built per request). */
export interface AiServices {
  provider: AiProviderState;
  gate: AdmissionGate;
  generationLog: GenerationLog;
  log: Logger;
  config: Config;
  now: () => number;
  /** The model-call deps, or the `ai_not_configured` problem naming the missing variable. */
  modelDeps(): ModelCallDeps;
}

/** What the AI services are built from: the process's config, pool, metrics, log and clock. */
export interface AiServicesDeps {
  config: Config;
  pool: pg.Pool;
  metrics: Metrics;
  log: Logger;
  now: () => number;
  fetch?: typeof globalThis.fetch;
  /** Tests may pass a provider state; by default it is built from the AI_* config. */
  provider?: AiProviderState;
}

/** Builds the AI services from the process's config, pool, metrics and clock. */
export function createAiServices(deps: AiServicesDeps): AiServices {
  const { config } = deps;
  const provider = deps.provider ?? createAiProvider(config, { fetch: deps.fetch });
  const gate = createAdmissionGate({
    pool: deps.pool,
    metrics: deps.metrics,
    defaults: { ratePerMinute: config.LLM_RATE_PER_MINUTE, dailyTokenBudget: config.LLM_DAILY_TOKEN_BUDGET },
    now: deps.now,
  });
  const generationLog = createGenerationLog({
    pool: deps.pool,
    retentionDays: config.GENERATION_LOG_RETENTION_DAYS,
    costPerMTok: { input: config.AI_INPUT_COST_PER_MTOK, output: config.AI_OUTPUT_COST_PER_MTOK },
    maxChars: config.AI_LOG_MAX_CHARS,
    now: deps.now,
  });
  return {
    provider,
    gate,
    generationLog,
    log: deps.log,
    config,
    now: deps.now,
    modelDeps: () => ({
      provider: requireProvider(provider),
      gate,
      log: deps.log,
      timeoutMs: config.AI_REQUEST_TIMEOUT_MS,
      maxOutputTokens: config.AI_MAX_OUTPUT_TOKENS,
    }),
  };
}
