import type { APICallError, FlexibleSchema, LanguageModelUsage } from "ai";
import type { z } from "zod";
import { AppError } from "../http/errors.ts";
import type { Logger } from "../log/logger.ts";
import type { AdmissionGate, AdmissionScope } from "./admission.ts";
import type { GenerationOutcome } from "./generation-log.ts";
import { modelOutputIssue, modelOutputTextIssue, unfence } from "./output-bounds.ts";
import type { AiProvider } from "./provider.ts";
import { type AiSdk, loadAiSdk } from "./sdk.ts";

/** Tokens one model call reported (0 when the provider reported nothing). */
export interface TokenUsage {
  input: number;
  output: number;
}

/** Everything a model call needs, built once per process. */
export interface ModelCallDeps {
  provider: AiProvider;
  gate: AdmissionGate;
  log: Logger;
  /** AI_REQUEST_TIMEOUT_MS. */
  timeoutMs: number;
  /** AI_MAX_OUTPUT_TOKENS: sent with every call, so no answer can run on without bound. */
  maxOutputTokens: number;
}

/** A failed model call as the HTTP edge sees it (502/504), carrying the tokens the provider still reported. */
export class ModelCallError extends AppError {
  constructor(
    code: "ai_provider_error" | "ai_provider_timeout",
    detail: string,
    readonly outcome: GenerationOutcome,
    readonly usage: TokenUsage,
  ) {
    super(code, detail);
  }
}

// Sent with every structured call: strict JSON-schema mode rejects optional properties, which the
// dashboard spec has; validation happens on our side with the zod schema either way.
const PROVIDER_OPTIONS = { openai: { strictJsonSchema: false } };

/** Tokens of an AI SDK usage record. */
export function tokensOf(usage: LanguageModelUsage | undefined): TokenUsage {
  return { input: usage?.inputTokens ?? 0, output: usage?.outputTokens ?? 0 };
}

/** An abort signal that fires after `ms`, and whether it was the timer that fired. */
export function deadline(ms: number): { signal: AbortSignal; timedOut: () => boolean; clear: () => void } {
  const controller = new AbortController();
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    controller.abort(new Error("AI request timed out"));
  }, ms);
  timer.unref?.();
  return { signal: controller.signal, timedOut: () => fired, clear: () => clearTimeout(timer) };
}

/**
 * Maps any failure of a model call to a ModelCallError and writes one log line with codes only:
 * provider error bodies can echo keys or prompt text, so neither the message nor the body is logged.
 */
export function classifyFailure(
  err: unknown,
  ctx: { sdk: AiSdk; timedOut: boolean; log: Logger; scope: AdmissionScope; provider: AiProvider; usage?: TokenUsage },
): ModelCallError {
  const { RetryError, NoObjectGeneratedError } = ctx.sdk;
  const inner = RetryError.isInstance(err) ? err.lastError : err;
  const apiError = apiCallErrorOf(ctx.sdk, inner);
  const usage = ctx.usage ?? (NoObjectGeneratedError.isInstance(inner) ? tokensOf(inner.usage) : { input: 0, output: 0 });
  let failure: ModelCallError;
  let status: number | undefined;
  if (ctx.timedOut) {
    failure = new ModelCallError(
      "ai_provider_timeout",
      "The AI provider did not answer in time. Try again, or ask for something smaller.",
      "provider_timeout",
      usage,
    );
  } else if (apiError && apiError.statusCode !== undefined && apiError.statusCode < 300 && isOutputError(apiError.cause)) {
    // A 2xx whose body did not parse: the SDK reports it as an API call error caused by a parse error.
    status = apiError.statusCode;
    failure = new ModelCallError("ai_provider_error", "The AI provider returned a malformed response.", "invalid_output", usage);
  } else if (apiError) {
    status = apiError.statusCode;
    failure = new ModelCallError(
      "ai_provider_error",
      status ? `The AI provider answered HTTP ${status}.` : "The AI provider could not be reached.",
      "provider_error",
      usage,
    );
  } else if (NoObjectGeneratedError.isInstance(inner) || isOutputError(inner)) {
    failure = new ModelCallError(
      "ai_provider_error",
      "The AI provider returned output that was malformed or did not match the expected shape.",
      "invalid_output",
      usage,
    );
  } else {
    failure = new ModelCallError("ai_provider_error", "The AI provider call failed.", "provider_error", usage);
  }
  ctx.log.warn("ai provider call failed", {
    route: ctx.scope.route,
    workspace: ctx.scope.workspaceId,
    provider: ctx.provider.kind,
    model: ctx.provider.modelId,
    code: failure.code,
    outcome: failure.outcome,
    status,
    error: inner instanceof Error ? inner.name : typeof inner,
    inputTokens: usage.input,
    outputTokens: usage.output,
  });
  return failure;
}

/**
 * The HTTP-level error behind a failure: an APICallError itself, or the one a provider wrapped.
 * The gateway provider (`@ai-sdk/gateway`) turns every APICallError into a GatewayError subclass
 * (GatewayInternalServerError, GatewayResponseError, ...) whose `cause` is the original.
 */
function apiCallErrorOf({ APICallError }: AiSdk, err: unknown): APICallError | undefined {
  if (APICallError.isInstance(err)) return err;
  if (err instanceof Error && APICallError.isInstance(err.cause)) return err.cause;
  return undefined;
}

function isOutputError(err: unknown): boolean {
  const name = err instanceof Error ? err.name : "";
  return [
    "AI_TypeValidationError",
    "AI_JSONParseError",
    "AI_InvalidResponseDataError",
    "AI_NoOutputGeneratedError",
    "AI_NoContentGeneratedError",
    "AI_EmptyResponseBodyError",
  ].includes(name);
}

export { unfence };

/**
 * One structured model call behind the admission gate: admits (or throws 429), calls with a
 * deadline and no SDK retries (a retry would be a model call the gate never saw), validates the
 * output with `schema`, and adds the reported tokens to the budget, on failure too.
 */
export async function generateStructured<T>(
  deps: ModelCallDeps,
  scope: AdmissionScope,
  req: { system: string; prompt: string; schema: z.ZodType<T>; name: string; description?: string },
): Promise<{ value: T; usage: TokenUsage }> {
  // The SDK and the model load before admission: a load that fails costs the user no rate-limit token.
  const sdk = await loadAiSdk();
  const { NoObjectGeneratedError, Output } = sdk;
  const model = await deps.provider.loadModel();
  await deps.gate.admit(scope);
  const clock = deadline(deps.timeoutMs);
  let usage: TokenUsage | undefined;
  try {
    const result = await sdk.generateText({
      model,
      system: req.system,
      prompt: req.prompt,
      output: Output.object({ schema: req.schema as FlexibleSchema<T>, name: req.name, description: req.description }),
      maxRetries: 0,
      maxOutputTokens: deps.maxOutputTokens,
      abortSignal: clock.signal,
      providerOptions: PROVIDER_OPTIONS,
    });
    usage = tokensOf(result.usage);
    return { value: bounded(result.output as T, usage, deps, scope, result.text), usage };
  } catch (err) {
    if (err instanceof ModelCallError) throw err;
    // Local models often wrap JSON in a code fence; accept it when what is inside validates.
    if (NoObjectGeneratedError.isInstance(err) && err.text && !clock.timedOut()) {
      const salvaged = salvage(err.text, req.schema);
      if (salvaged.ok) {
        usage = tokensOf(err.usage);
        return { value: bounded(salvaged.value, usage, deps, scope, err.text), usage };
      }
    }
    // A call cut off by the deadline never gets the provider's usage report, yet the provider read the
    // prompt: charge an estimate of it (about 4 characters a token), or prompts made to run past the
    // deadline would cost the workspace's LLM_DAILY_TOKEN_BUDGET nothing.
    const cutOff =
      clock.timedOut() && !NoObjectGeneratedError.isInstance(err)
        ? { input: Math.ceil((req.system.length + req.prompt.length) / 4), output: 0 }
        : undefined;
    const failure = classifyFailure(err, { sdk, timedOut: clock.timedOut(), log: deps.log, scope, provider: deps.provider, usage: cutOff });
    usage = failure.usage;
    throw failure;
  } finally {
    clock.clear();
    if (usage) await deps.gate.recordUsage(scope.workspaceId, deps.provider.modelId, usage);
  }
}

/**
 * `value` when it is within the limits of a request body (lib/ai/output-bounds.ts), checked before anything else of
 * ours walks it; else an `invalid_output` failure carrying the tokens the answer cost (the caller's finally still
 * charges them, and the route writes its generation_log row).
 */
function bounded<T>(value: T, usage: TokenUsage, deps: ModelCallDeps, scope: AdmissionScope, text: string): T {
  // The answer as the model wrote it too: schema validation drops unknown keys, which may hold anything.
  const issue = modelOutputTextIssue(text) ?? modelOutputIssue(value);
  if (!issue) return value;
  deps.log.warn("ai output refused", {
    route: scope.route,
    workspace: scope.workspaceId,
    reason: issue.startsWith("nests") ? "depth" : "size",
  });
  throw new ModelCallError(
    "ai_provider_error",
    `The AI provider returned output that ${issue}, past what a request may carry.`,
    "invalid_output",
    usage,
  );
}

function salvage<T>(text: string, schema: z.ZodType<T>): { ok: true; value: T } | { ok: false } {
  const inner = unfence(text);
  if (inner === text) return { ok: false };
  try {
    const parsed = schema.safeParse(JSON.parse(inner));
    return parsed.success ? { ok: true, value: parsed.data } : { ok: false };
  } catch {
    return { ok: false };
  }
}
