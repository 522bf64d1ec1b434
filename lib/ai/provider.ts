import type { LanguageModel } from "ai";
import type { Config } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { checkAiConfig } from "../probes/ready.ts";
import { loadAiSdk, loadOpenAiProvider } from "./sdk.ts";
import { memoPerKey } from "../lifecycle/memo.ts";

/** The configured model, built once per process and passed to every AI route. */
export interface AiProvider {
  /**
   * The AI SDK model. The SDK and the provider package load on the first call (not at start, which only
   * answers probes and pages), and the model is built once; every later call returns the same one.
   */
  loadModel(): Promise<LanguageModel>;
  /** AI_MODEL: the model id; also the `model` metric label and the generation_log column. */
  modelId: string;
  /** `gateway`, `compat/chat` or `compat/responses`, for logs. */
  kind: string;
}

/** A provider, or the name of the first missing variable (the readiness `aiProvider` reason). */
export type AiProviderState = { ok: true; provider: AiProvider } | { ok: false; missing: string };

/** The AI variables of Config. */
export type ProviderConfig = Pick<
  Config,
  "AI_PROVIDER" | "AI_MODEL" | "AI_GATEWAY_API_KEY" | "AI_GATEWAY_BASE_URL" | "AI_COMPAT_BASE_URL" | "AI_COMPAT_API_KEY" | "AI_COMPAT_API"
>;

/**
 * The AI provider of the config. It never calls a model and loads no SDK code (that waits for the first
 * `loadModel()`); with a variable missing it returns `{ ok: false, missing }` naming the same variable
 * the readiness check names.
 */
export function createAiProvider(config: ProviderConfig, opts: { fetch?: typeof globalThis.fetch } = {}): AiProviderState {
  // checkAiConfig reads only the AI variables; the readiness fields it also types are not consulted.
  const check = checkAiConfig(config as unknown as Parameters<typeof checkAiConfig>[0]);
  if (check.status === "failed") return { ok: false, missing: check.reason };
  const modelId = config.AI_MODEL;
  if (config.AI_PROVIDER === "gateway") {
    const build = async (apiKey: string | undefined): Promise<LanguageModel> => {
      const { createGateway } = await loadAiSdk();
      // AI_GATEWAY_BASE_URL unset: the SDK's default endpoint (https://ai-gateway.vercel.sh/v3/ai).
      const gateway = createGateway({ apiKey, baseURL: config.AI_GATEWAY_BASE_URL, fetch: opts.fetch });
      return gateway(modelId);
    };
    // The key is read from the live config on every call: a key rotated in Secrets Manager (APP_SECRETS_AWS)
    // is used by the next model call without a restart.
    return { ok: true, provider: { loadModel: memoPerKey(() => config.AI_GATEWAY_API_KEY, build), modelId, kind: "gateway" } };
  }
  const api = config.AI_COMPAT_API ?? "chat";
  const build = async (apiKey: string | undefined): Promise<LanguageModel> => {
    const { createOpenAI } = await loadOpenAiProvider();
    const openai = createOpenAI({
      baseURL: config.AI_COMPAT_BASE_URL,
      apiKey,
      name: "compat",
      fetch: opts.fetch,
    });
    return api === "responses" ? openai.responses(modelId) : openai.chat(modelId);
  };
  return { ok: true, provider: { loadModel: memoPerKey(() => config.AI_COMPAT_API_KEY, build), modelId, kind: `compat/${api}` } };
}

/** The provider, or the `ai_not_configured` problem naming the missing variable. */
export function requireProvider(state: AiProviderState): AiProvider {
  if (state.ok) return state.provider;
  throw new AppError(
    "ai_not_configured",
    `AI features are not configured: set ${state.missing} (see the AI section of the documentation).`,
    { missing: state.missing },
  );
}
