import { recordingGate } from "./testing/recording-gate.ts";
import { generateText, streamText } from "ai";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { z } from "zod";
import { createLogger } from "../log/logger.ts";
import { ModelCallError, generateStructured } from "./invoke.ts";
import { type ProviderConfig, createAiProvider, requireProvider } from "./provider.ts";
import { type FakeGateway, startFakeGateway } from "./testing/fake-gateway.ts";

// AI_PROVIDER=gateway end to end: the real `createGateway` client (the @ai-sdk/gateway version `ai`
// depends on) against a local server speaking the gateway's language-model protocol.

let fake: FakeGateway;
beforeAll(async () => {
  fake = await startFakeGateway();
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

function config(over: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    AI_PROVIDER: "gateway",
    AI_MODEL: "openai/gpt-5-mini",
    AI_GATEWAY_API_KEY: fake.apiKey,
    AI_GATEWAY_BASE_URL: fake.baseURL,
    AI_COMPAT_BASE_URL: undefined,
    AI_COMPAT_API_KEY: undefined,
    AI_COMPAT_API: "chat",
    ...over,
  };
}

const scope = { route: "generate" as const, workspaceId: "ws", userSub: "u" };
const schema = z.object({ answer: z.number() });

describe("AI_PROVIDER=gateway against a local gateway", () => {
  test("AI_GATEWAY_BASE_URL points the provider at the fake; the call carries the gateway's headers and the key as a bearer token", async () => {
    const provider = requireProvider(createAiProvider(config()));
    expect(provider.kind).toBe("gateway");
    fake.enqueue({ kind: "text", text: "hello there", usage: { input: 11, output: 3 } });
    const r = await generateText({ model: await provider.loadModel(), prompt: "hi", maxRetries: 0 });
    expect(r.text).toBe("hello there");
    expect([r.usage.inputTokens, r.usage.outputTokens]).toEqual([11, 3]);
    const req = fake.requests.at(-1)!;
    expect(req.path).toBe("/v3/ai/language-model");
    expect(req.stream).toBe(false);
    expect(req.headers).toMatchObject({
      authorization: `Bearer ${fake.apiKey}`,
      "ai-gateway-auth-method": "api-key",
      "ai-gateway-protocol-version": "0.0.1",
      "ai-language-model-specification-version": "3",
      "ai-language-model-id": "openai/gpt-5-mini",
      "ai-language-model-streaming": "false",
    });
    // The body is the model call options themselves, not an OpenAI request.
    expect(req.body.prompt).toEqual([{ role: "user", content: [{ type: "text", text: "hi" }] }]);
    expect(req.body).not.toHaveProperty("messages");
    expect(req.body).not.toHaveProperty("abortSignal");
  });

  test("streaming: text deltas and the usage of the finish part", async () => {
    const provider = requireProvider(createAiProvider(config()));
    fake.enqueue({ kind: "text", text: "streamed answer here", usage: { input: 7, output: 4 }, chunks: ["streamed ", "answer ", "here"] });
    const r = streamText({ model: await provider.loadModel(), prompt: "hi", maxRetries: 0 });
    const parts: string[] = [];
    for await (const t of r.textStream) parts.push(t);
    expect(parts).toEqual(["streamed ", "answer ", "here"]);
    const usage = await r.usage;
    expect([usage.inputTokens, usage.outputTokens]).toEqual([7, 4]);
    expect(fake.requests.at(-1)).toMatchObject({ stream: true, headers: { "ai-language-model-streaming": "true" } });
  });

  test("structured output: the JSON schema is sent as responseFormat, the value validated and the usage counted", async () => {
    const deps = {
      provider: requireProvider(createAiProvider(config())),
      gate: recordingGate(),
      log: createLogger({ silent: true }),
      timeoutMs: 5_000,
      maxOutputTokens: 777,
    };
    fake.enqueue({ kind: "text", text: '{"answer":42}', usage: { input: 120, output: 9 } });
    const r = await generateStructured(deps, scope, { system: "be brief", prompt: "the answer?", schema, name: "answer" });
    expect(r).toEqual({ value: { answer: 42 }, usage: { input: 120, output: 9 } });
    expect(deps.gate.admitted).toBe(1);
    expect(deps.gate.usage).toEqual([{ input: 120, output: 9 }]);
    const req = fake.requests.at(-1)!;
    expect(req.body.responseFormat).toMatchObject({ type: "json", name: "answer", schema: { type: "object", required: ["answer"] } });
    expect(req.text).toBe("be brief\nthe answer?");
    // AI_MAX_OUTPUT_TOKENS reaches the gateway as the call option itself.
    expect(req.body.maxOutputTokens).toBe(777);
  });

  test.each([
    [{ kind: "error", status: 500 } as const, "ai_provider_error", 502, "provider_error", { input: 0, output: 0 }],
    [
      { kind: "error", status: 503, type: "failed_dependency" } as const,
      "ai_provider_error",
      502,
      "provider_error",
      { input: 0, output: 0 },
    ],
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
  ])(
    "failure %o → %s %i (%s); tokens counted; one log line without key or provider message",
    async (reply, code, status, outcome, usage) => {
      const lines: string[] = [];
      const deps = {
        provider: requireProvider(createAiProvider(config())),
        gate: recordingGate(),
        log: createLogger({ write: (l) => lines.push(l) }),
        timeoutMs: 1000,
        maxOutputTokens: 100,
      };
      fake.enqueue(reply);
      const err = await generateStructured(deps, scope, { system: "s", prompt: "p", schema, name: "x" }).catch((e) => e);
      expect(err).toBeInstanceOf(ModelCallError);
      expect([err.code, err.status, err.outcome]).toEqual([code, status, outcome]);
      expect(deps.gate.usage).toEqual([usage]);
      expect(fake.requests).toHaveLength(1); // no SDK retry behind the gate's back, also for retryable 5xx/429
      expect(lines).toHaveLength(1);
      const line = JSON.parse(lines[0]!);
      expect(line).toMatchObject({ msg: "ai provider call failed", provider: "gateway", model: "openai/gpt-5-mini", code, outcome });
      if (reply.kind === "error") expect(line.status).toBe(reply.status);
      expect(lines[0]).not.toContain(fake.apiKey);
      expect(lines[0]).not.toContain("fake gateway error");
      expect(err.detail).not.toContain(fake.apiKey);
    },
  );

  test("a wrong key is a 401 authentication_error from the gateway and a 502 here, without the key anywhere", async () => {
    const wrong = "gw-wrong-key-0123456789abcdef";
    const lines: string[] = [];
    const deps = {
      provider: requireProvider(createAiProvider(config({ AI_GATEWAY_API_KEY: wrong }))),
      gate: recordingGate(),
      log: createLogger({ write: (l) => lines.push(l) }),
      timeoutMs: 5_000,
      maxOutputTokens: 100,
    };
    const err = await generateStructured(deps, { ...scope, route: "chat" }, { system: "s", prompt: "p", schema, name: "x" }).catch(
      (e) => e,
    );
    expect(fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${wrong}`);
    expect([err.code, err.status, err.outcome]).toEqual(["ai_provider_error", 502, "provider_error"]);
    expect(err.detail).not.toContain(wrong);
    expect(lines.join("")).not.toContain(wrong);
    // The AI SDK replaces a gateway authentication error with its own (wrapGatewayError), status dropped.
    expect(JSON.parse(lines[0]!)).toMatchObject({ provider: "gateway", error: "GatewayAuthenticationError" });
    expect(JSON.parse(lines[0]!).status).toBeUndefined();
  });
});
