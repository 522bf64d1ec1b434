import type { Hono } from "hono";
import { createChatStore } from "../../../lib/ai/chat-store.ts";
import { type AiServices, type AiServicesDeps, createAiServices } from "../../../lib/ai/services.ts";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import type { Guard } from "../../../lib/sql-guard/verdict.ts";
import { createGuard, guardOptionsFromConfig } from "../../../lib/sql-guard/index.ts";
import type { AiRouteDeps } from "./shared.ts";
import { registerAiGenerate } from "./generate.ts";
import { registerAiSourceDraft } from "./source-draft.ts";
import { registerChat } from "../chat/routes.ts";
import { registerGenerationLog } from "../generation-log/routes.ts";

export type { AiRouteDeps } from "./shared.ts";

/** Every AI route: generate, source draft, dashboard chat (+ apply) and the generation log. */
export function registerAiRoutes(app: Hono<any>, deps: AiRouteDeps): void {
  registerAiGenerate(app, deps);
  registerAiSourceDraft(app, deps);
  registerChat(app, deps);
  registerGenerationLog(app, deps);
}

/** Builds the AI route deps once per app: provider, gate, log, chat store, and a guard unless one is shared in. */
export function createAiRouteDeps(
  deps: Omit<AiServicesDeps, "provider"> & { guard?: Guard; ai?: AiServices },
  auth: Auth,
): AiRouteDeps {
  const { config } = deps;
  return {
    config,
    pool: deps.pool,
    metrics: deps.metrics,
    now: deps.now,
    auth,
    guard: deps.guard ?? createGuard(guardOptionsFromConfig(config)),
    ai: deps.ai ?? createAiServices(deps),
    chats: createChatStore({
      pool: deps.pool,
      maxMessages: config.CHAT_HISTORY_MAX_MESSAGES,
      retentionDays: config.CHAT_HISTORY_RETENTION_DAYS,
      now: deps.now,
    }),
  };
}
