import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type FakeTurn, type RecordingFake, chunksOf, readBody, sendMalformed, startRecordingFake } from "./fake-server.ts";

/**
 * What the fake answers to one language-model request. Same vocabulary as the fake OpenAI server
 * (lib/ai/testing/fake-openai.ts) so tests can be written the same way for either provider.
 */
export type FakeGatewayReply =
  /** A normal answer; streaming requests get `text` split into `chunks` (default: about 8 characters each). */
  | { kind: "text"; text: string; usage?: { input: number; output: number }; chunks?: string[] }
  /** An HTTP error with the gateway's error body `{error: {message, type}, generationId}`. */
  | { kind: "error"; status: number; type?: string; message?: string }
  /** A 200 whose body is not valid JSON (or, streaming, whose events are not). */
  | { kind: "malformed" }
  /** Never answers; the connection stays open until the client gives up or the server closes. */
  | { kind: "hang" };

/** One request the fake received. */
export interface RecordedGatewayRequest {
  path: string;
  /** From the `ai-language-model-streaming` header: the body carries no stream flag. */
  stream: boolean;
  /** Every request header, lower-cased names (as node gives them). */
  headers: Record<string, string | undefined>;
  /** The LanguageModelV3 call options the SDK sent (prompt, responseFormat, providerOptions, ...). */
  body: Record<string, unknown>;
  /** Every text of the prompt (system, user and assistant turns), joined for easy assertions. */
  text: string;
}

export type FakeGateway = RecordingFake<RecordedGatewayRequest, FakeGatewayReply>;

/**
 * A real HTTP server speaking the Vercel AI Gateway's language-model protocol as the installed
 * `@ai-sdk/gateway` client (v3.x, used by `ai` v6 through `createGateway`) speaks it:
 *
 * - `POST <baseURL>/language-model`, JSON body = the LanguageModelV3 call options minus abortSignal;
 *   headers `Authorization: Bearer <AI_GATEWAY_API_KEY>`, `ai-gateway-auth-method: api-key`,
 *   `ai-gateway-protocol-version: 0.0.1`, `ai-language-model-specification-version: 3`,
 *   `ai-language-model-id: <model>`, `ai-language-model-streaming: true|false`.
 * - Non-streaming: a JSON LanguageModelV3 generate result (`content`, `finishReason`, `usage`, ...),
 *   which the client spreads into its result unvalidated.
 * - Streaming: Server-Sent Events, each `data:` a LanguageModelV3 stream part
 *   (`response-metadata`, `text-start`, `text-delta`, `text-end`, `finish` with usage).
 * - Errors: `{error: {message, type}}` with `type` one of the gateway's error types; the client turns
 *   them into GatewayError subclasses (`internal_server_error` → GatewayInternalServerError, ...).
 *
 * It checks the bearer key like the gateway and answers 401 `authentication_error` to a wrong one.
 */
export async function startFakeGateway(opts: { apiKey?: string } = {}): Promise<FakeGateway> {
  const apiKey = opts.apiKey ?? `gw-fake-${randomBytes(12).toString("hex")}`;
  return startRecordingFake<RecordedGatewayRequest, FakeGatewayReply>({
    apiKey,
    basePath: "/v3/ai",
    defaultReply: { kind: "text", text: "ok", usage: { input: 1, output: 1 } },
    crashBody: (err) => ({ error: { message: String(err), type: "internal_server_error" } }),
    handle,
  });

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    turn: FakeTurn<RecordedGatewayRequest, FakeGatewayReply>,
  ): Promise<void> {
    const path = (req.url ?? "").split("?")[0]!;
    if (req.method !== "POST" || path !== "/v3/ai/language-model") {
      return sendError(res, 404, "not_found", "not found");
    }
    const body = JSON.parse(await readBody(req));
    const headers: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : v;
    const recorded: RecordedGatewayRequest = {
      path,
      stream: headers["ai-language-model-streaming"] === "true",
      headers,
      body,
      text: collectText(body.prompt),
    };
    turn.record(recorded);
    if (headers.authorization !== `Bearer ${apiKey}`) {
      return sendError(res, 401, "authentication_error", "Invalid API key");
    }
    if (headers["ai-language-model-specification-version"] !== "3" || !headers["ai-language-model-id"]) {
      return sendError(res, 400, "invalid_request_error", "missing or unsupported language model headers");
    }
    const model = headers["ai-language-model-id"];
    const reply = turn.nextReply(recorded);
    switch (reply.kind) {
      case "hang":
        return;
      case "error":
        return sendError(res, reply.status, reply.type ?? errorType(reply.status), reply.message ?? `fake gateway error ${reply.status}`);
      case "malformed":
        return sendMalformed(res, recorded.stream);
      case "text":
        return recorded.stream ? streamResult(res, reply, model) : sendResult(res, reply, model);
    }
  }
}

type TextReply = Extract<FakeGatewayReply, { kind: "text" }>;

/** Texts of a LanguageModelV3 prompt: system content is a string, other roles carry parts. */
function collectText(prompt: unknown): string {
  const out: string[] = [];
  if (!Array.isArray(prompt)) return "";
  for (const m of prompt as { content: unknown }[]) {
    if (typeof m.content === "string") out.push(m.content);
    else if (Array.isArray(m.content)) {
      for (const p of m.content as { type?: string; text?: unknown }[]) if (typeof p.text === "string") out.push(p.text);
    }
  }
  return out.join("\n");
}

function errorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 429) return "rate_limit_exceeded";
  if (status === 404) return "model_not_found";
  return status < 500 ? "invalid_request_error" : "internal_server_error";
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type }, generationId: `gen_${randomBytes(6).toString("hex")}` }));
}

/** LanguageModelV3Usage as JSON. */
function usageOf(reply: TextReply) {
  const u = reply.usage ?? { input: 0, output: 0 };
  return {
    inputTokens: { total: u.input, noCache: u.input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: u.output, text: u.output, reasoning: 0 },
  };
}

const FINISH = { unified: "stop", raw: "stop" };

function sendResult(res: ServerResponse, reply: TextReply, model: string): void {
  const generationId = `gen_${randomBytes(6).toString("hex")}`;
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      content: [{ type: "text", text: reply.text }],
      finishReason: FINISH,
      usage: usageOf(reply),
      warnings: [],
      providerMetadata: { gateway: { generationId, routing: { resolvedProvider: "fake" } } },
      response: { id: generationId, modelId: model, timestamp: new Date().toISOString() },
    }),
  );
}

function streamResult(res: ServerResponse, reply: TextReply, model: string): void {
  const generationId = `gen_${randomBytes(6).toString("hex")}`;
  const part = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  part({ type: "stream-start", warnings: [] });
  part({ type: "response-metadata", id: generationId, modelId: model, timestamp: new Date().toISOString() });
  part({ type: "text-start", id: "0", providerMetadata: { gateway: { generationId } } });
  for (const delta of chunksOf(reply)) part({ type: "text-delta", id: "0", delta });
  part({ type: "text-end", id: "0" });
  part({ type: "finish", finishReason: FINISH, usage: usageOf(reply), providerMetadata: { gateway: { generationId } } });
  res.end();
}
