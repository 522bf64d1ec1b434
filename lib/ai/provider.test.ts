import { recordingGate } from "./testing/recording-gate.ts";
import { generateText, streamText } from "ai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { AppError } from "../http/errors.ts";
import { createLogger } from "../log/logger.ts";
import { ModelCallError, generateStructured } from "./invoke.ts";
import { type ProviderConfig, createAiProvider, requireProvider } from "./provider.ts";
import { type FakeOpenAI, startFakeOpenAI } from "./testing/fake-openai.ts";

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(() => fake.close());

function config(api: "chat" | "responses", over: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    AI_PROVIDER: "compat",
    AI_MODEL: "fake-model",
    AI_GATEWAY_API_KEY: undefined,
    AI_GATEWAY_BASE_URL: undefined,
    AI_COMPAT_BASE_URL: fake.baseURL,
    AI_COMPAT_API_KEY: fake.apiKey,
    AI_COMPAT_API: api,
    ...over,
  };
}

describe("provider factory", () => {
  test.each([
    [{ AI_PROVIDER: undefined }, "AI_PROVIDER"],
    [{ AI_MODEL: "" }, "AI_MODEL"],
    [{ AI_COMPAT_BASE_URL: undefined }, "AI_COMPAT_BASE_URL"],
    [{ AI_COMPAT_API_KEY: undefined }, "AI_COMPAT_API_KEY"],
    [{ AI_PROVIDER: "gateway" as const }, "AI_GATEWAY_API_KEY"],
  ])("names the first missing variable (%o → %s) and requireProvider answers ai_not_configured", (over, missing) => {
    const state = createAiProvider(config("chat", over));
    expect(state).toEqual({ ok: false, missing });
    const err = (() => {
      try {
        requireProvider(state);
      } catch (e) {
        return e as AppError;
      }
    })();
    expect(err).toBeInstanceOf(AppError);
    expect(err?.code).toBe("ai_not_configured");
    expect(err?.status).toBe(503);
    expect(err?.detail).toContain(missing);
  });

  test("the gateway provider is built from AI_GATEWAY_API_KEY without any call", () => {
    const state = createAiProvider(config("chat", { AI_PROVIDER: "gateway", AI_GATEWAY_API_KEY: "gw-key" }));
    expect(state.ok).toBe(true);
    if (state.ok) expect(state.provider.kind).toBe("gateway");
  });

  test.each(["chat", "responses"] as const)("compat/%s: the model is built once, on the first loadModel()", async (api) => {
    const provider = requireProvider(createAiProvider(config(api)));
    expect(provider.kind).toBe(`compat/${api}`);
    const model = await provider.loadModel();
    expect(await provider.loadModel()).toBe(model);
    expect(model).toMatchObject({ modelId: "fake-model", provider: `compat.${api}` });
  });
});

describe.each(["chat", "responses"] as const)("real provider code against the fake %s endpoint", (api) => {
  const path = api === "chat" ? "chat" : "responses";

  test("non-streaming text with usage", async () => {
    const provider = requireProvider(createAiProvider(config(api)));
    fake.enqueue({ kind: "text", text: "hello there", usage: { input: 11, output: 3 } });
    const r = await generateText({ model: await provider.loadModel(), prompt: "hi", maxRetries: 0 });
    expect(r.text).toBe("hello there");
    expect(r.usage.inputTokens).toBe(11);
    expect(r.usage.outputTokens).toBe(3);
    expect(fake.requests.at(-1)).toMatchObject({ api: path, stream: false, authorization: `Bearer ${fake.apiKey}` });
  });

  test("streaming text with usage", async () => {
    const provider = requireProvider(createAiProvider(config(api)));
    fake.enqueue({ kind: "text", text: "streamed answer here", usage: { input: 7, output: 4 }, chunks: ["streamed ", "answer ", "here"] });
    const r = streamText({ model: await provider.loadModel(), prompt: "hi", maxRetries: 0 });
    const parts: string[] = [];
    for await (const t of r.textStream) parts.push(t);
    expect(parts).toEqual(["streamed ", "answer ", "here"]);
    const usage = await r.usage;
    expect([usage.inputTokens, usage.outputTokens]).toEqual([7, 4]);
    expect(fake.requests.at(-1)).toMatchObject({ api: path, stream: true });
  });

  test("structured output is validated; fenced JSON from a local model is accepted", async () => {
    const state = createAiProvider(config(api));
    const deps = {
      provider: requireProvider(state),
      gate: recordingGate(),
      log: createLogger({ silent: true }),
      timeoutMs: 5_000,
      maxOutputTokens: 1234,
    };
    const schema = z.object({ answer: z.number() });
    const scope = { route: "generate" as const, workspaceId: "ws", userSub: "u" };
    fake.enqueue({ kind: "text", text: '{"answer":42}', usage: { input: 5, output: 2 } });
    expect((await generateStructured(deps, scope, { system: "s", prompt: "p", schema, name: "x" })).value).toEqual({ answer: 42 });
    fake.enqueue({ kind: "text", text: '```json\n{"answer":7}\n```', usage: { input: 5, output: 2 } });
    expect((await generateStructured(deps, scope, { system: "s", prompt: "p", schema, name: "x" })).value).toEqual({ answer: 7 });
    expect(deps.gate.admitted).toBe(2);
    // AI_MAX_OUTPUT_TOKENS reaches the provider: max_tokens (chat completions) or max_output_tokens (responses).
    const sent = fake.requests.slice(-2).map((r) => (api === "chat" ? r.body.max_tokens : r.body.max_output_tokens));
    expect(sent).toEqual([1234, 1234]);
    expect(deps.gate.usage).toEqual([
      { input: 5, output: 2 },
      { input: 5, output: 2 },
    ]);
  });

  test.each([
    [{ kind: "error", status: 500 } as const, "ai_provider_error", 502, "provider_error", { input: 0, output: 0 }],
    [{ kind: "error", status: 429 } as const, "ai_provider_error", 502, "provider_error", { input: 0, output: 0 }],
    [{ kind: "malformed" } as const, "ai_provider_error", 502, "invalid_output", { input: 0, output: 0 }],
    [
      { kind: "text", text: '{"answer":"not a number"}', usage: { input: 9, output: 6 } } as const,
      "ai_provider_error",
      502,
      "invalid_output",
      { input: 9, output: 6 },
    ],
    // Cut off before any usage report: the prompt ("s" + "p") is charged as an estimate, 4 characters a token.
    [{ kind: "hang" } as const, "ai_provider_timeout", 504, "provider_timeout", { input: 1, output: 0 }],
  ])("failure %o → %s %i (%s), reported tokens still counted", async (reply, code, status, outcome, usage) => {
    const lines: string[] = [];
    const deps = {
      provider: requireProvider(createAiProvider(config(api))),
      gate: recordingGate(),
      log: createLogger({ write: (l) => lines.push(l) }),
      timeoutMs: 1000,
      maxOutputTokens: 100,
    };
    fake.enqueue(reply);
    const err = await generateStructured(
      deps,
      { route: "generate", workspaceId: "ws", userSub: "u" },
      {
        system: "s",
        prompt: "p",
        schema: z.object({ answer: z.number() }),
        name: "x",
      },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(ModelCallError);
    expect([err.code, err.status, err.outcome]).toEqual([code, status, outcome]);
    expect(deps.gate.usage).toEqual([usage]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(fake.apiKey);
    expect(lines[0]).toContain(code);
  });

  test("a rotated key (the config object re-read from Secrets Manager) is used by the next call, without a restart", async () => {
    const live = config(api, { AI_COMPAT_API_KEY: "sk-before-rotation-123456789" });
    const deps = {
      provider: requireProvider(createAiProvider(live)),
      gate: recordingGate(),
      log: createLogger({ silent: true }),
      timeoutMs: 5_000,
      maxOutputTokens: 100,
    };
    const call = () =>
      generateStructured(
        deps,
        { route: "chat", workspaceId: "ws", userSub: "u" },
        { system: "s", prompt: "p", schema: z.object({ answer: z.number() }), name: "x" },
      );
    expect((await call().catch((e) => e)).detail).toBe("The AI provider answered HTTP 401.");
    live.AI_COMPAT_API_KEY = fake.apiKey;
    fake.enqueue({ kind: "text", text: '{"answer":2}', usage: { input: 1, output: 1 } });
    expect((await call()).value).toEqual({ answer: 2 });
    expect(fake.requests.at(-1)?.authorization).toBe(`Bearer ${fake.apiKey}`);
  });

  test("a wrong key is a 401 from the endpoint and a 502 here", async () => {
    const deps = {
      provider: requireProvider(createAiProvider(config(api, { AI_COMPAT_API_KEY: "sk-wrong-key-123456789" }))),
      gate: recordingGate(),
      log: createLogger({ silent: true }),
      timeoutMs: 5_000,
      maxOutputTokens: 100,
    };
    const err = await generateStructured(
      deps,
      { route: "chat", workspaceId: "ws", userSub: "u" },
      {
        system: "s",
        prompt: "p",
        schema: z.object({ answer: z.number() }),
        name: "x",
      },
    ).catch((e) => e);
    expect(err.code).toBe("ai_provider_error");
    expect(err.detail).toBe("The AI provider answered HTTP 401.");
    expect(err.detail).not.toContain("sk-wrong");
  });
});
