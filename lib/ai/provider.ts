import type { LanguageModel } from "ai";
import type { Config } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { checkAiConfig } from "../probes/ready.ts";
import { loadAiSdk, loadOpenAiProvider } from "./sdk.ts";
import { memoUntilFailure } from "../lifecycle/memo.ts";

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
    const build = async (): Promise<LanguageModel> => {
      const { createGateway } = await loadAiSdk();
      // AI_GATEWAY_BASE_URL unset: the SDK's default endpoint (https://ai-gateway.vercel.sh/v3/ai).
      const gateway = createGateway({ apiKey: config.AI_GATEWAY_API_KEY, baseURL: config.AI_GATEWAY_BASE_URL, fetch: opts.fetch });
      return gateway(modelId);
    };
    return { ok: true, provider: { loadModel: perKey(() => config.AI_GATEWAY_API_KEY, build), modelId, kind: "gateway" } };
  }
  const api = config.AI_COMPAT_API ?? "chat";
  const build = async (): Promise<LanguageModel> => {
    const { createOpenAI } = await loadOpenAiProvider();
    const openai = createOpenAI({
      baseURL: config.AI_COMPAT_BASE_URL,
      apiKey: config.AI_COMPAT_API_KEY,
      name: "compat",
      fetch: opts.fetch,
    });
    return api === "responses" ? openai.responses(modelId) : openai.chat(modelId);
  };
  return { ok: true, provider: { loadModel: perKey(() => config.AI_COMPAT_API_KEY, build), modelId, kind: `compat/${api}` } };
}

/**
 * `load` runs on the first call, and again when the API key changed: `config` is the live config object,
 * into which a key re-read from Secrets Manager (APP_SECRETS_AWS) lands, so a rotated key is used by the
 * next model call without a restart. Calls with the same key share one promise.
 */
function perKey<T>(key: () => string | undefined, load: () => Promise<T>): () => Promise<T> {
  let built: { key: string | undefined; load: () => Promise<T> } | undefined;
  return () => {
    const current = key();
    // memoUntilFailure: a failed build is tried again by the next call rather than kept until the key changes.
    if (built === undefined || built.key !== current) built = { key: current, load: memoUntilFailure(load) };
    return built.load();
  };
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
