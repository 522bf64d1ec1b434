import { memoUntilFailure } from "../lifecycle/memo.ts";

/** The parts of the AI SDK (`ai`) the service uses: model-call functions, error classes, the gateway provider. */
export type AiSdk = typeof import("./sdk-exports.ts");
/** The OpenAI-compatible provider package (AI_PROVIDER=compat). */
export type OpenAiSdk = typeof import("./openai-exports.ts");

const sdk = memoUntilFailure<AiSdk>(() => import("./sdk-exports.ts"));
const openai = memoUntilFailure<OpenAiSdk>(() => import("./openai-exports.ts"));

/**
 * Loads the AI SDK on the first model call instead of at start: with its providers it is about a third of
 * the handlers bundle, and a cold start that only answers probes or reads dashboards never needs it
 * (the bundle keeps it in chunks of its own; docs/build.md, "Cold start").
 */
export function loadAiSdk(): Promise<AiSdk> {
  return sdk();
}

/** Loads the OpenAI-compatible provider on the first model call of a compat deployment (see loadAiSdk). */
export function loadOpenAiProvider(): Promise<OpenAiSdk> {
  return openai();
}
