import { z } from "@hono/zod-openapi";
import type pg from "pg";
import type { ChatStore } from "../../../lib/ai/chat-store.ts";
import type { AiServices } from "../../../lib/ai/services.ts";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import type { Config } from "../../../lib/config/parse.ts";
import type { Metrics } from "../../../lib/metrics/metrics.ts";
import type { Guard } from "../../../lib/sql-guard/verdict.ts";
import { problemResponse } from "../../openapi.ts";

/** What the AI routes (generate, source draft, chat, generation log) need; built once per app by createApp. */
export interface AiRouteDeps {
  config: Config;
  pool: pg.Pool;
  metrics: Metrics;
  auth: Auth;
  guard: Guard;
  ai: AiServices;
  chats: ChatStore;
  now: () => number;
}

/** Token usage of one model answer. */
export const UsageSchema = z.object({ input: z.number().int(), output: z.number().int() });

/**
 * The 429 and 503 of every route that calls the model: admission (lib/ai/admission.ts) refuses with
 * Retry-After; an unconfigured provider, or a config store that does not answer, is a 503.
 */
export const MODEL_CALL_PROBLEMS = {
  429: problemResponse(
    "Over the per-minute rate (`rate_limited`) or the workspace's daily token budget (`over_budget`), with Retry-After",
    true,
  ),
  503: problemResponse(
    "`ai_not_configured` (no model provider: AI_PROVIDER, AI_MODEL and its key, named in `missing`), or `config_store_unavailable` (with Retry-After)",
    true,
  ),
};
