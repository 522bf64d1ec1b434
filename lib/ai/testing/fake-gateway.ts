import { randomBytes } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

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
  body: any;
  /** Every text of the prompt (system, user and assistant turns), joined for easy assertions. */
  text: string;
}

export interface FakeGateway {
  /** Base URL to pass as AI_GATEWAY_BASE_URL (the SDK appends `/language-model`). */
  baseURL: string;
  apiKey: string;
  requests: RecordedGatewayRequest[];
  /** Queues replies, used in order; when the queue is empty `fallback` answers. */
  enqueue(...replies: FakeGatewayReply[]): void;
  /** Forgets queued replies and recorded requests (between tests). */
  reset(): void;
  /** Answers requests when the queue is empty (default: a short text). */
  fallback: (req: RecordedGatewayRequest) => FakeGatewayReply;
  close(): Promise<void>;
}

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
  const queue: FakeGatewayReply[] = [];
  const requests: RecordedGatewayRequest[] = [];
  const fake: FakeGateway = {
    baseURL: "",
    apiKey,
    requests,
    enqueue: (...replies) => queue.push(...replies),
    reset: () => {
      queue.length = 0;
      requests.length = 0;
    },
    fallback: () => ({ kind: "text", text: "ok", usage: { input: 1, output: 1 } }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: String(err), type: "internal_server_error" } }));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    requests.push(recorded);
    if (headers.authorization !== `Bearer ${apiKey}`) {
      return sendError(res, 401, "authentication_error", "Invalid API key");
    }
    if (headers["ai-language-model-specification-version"] !== "3" || !headers["ai-language-model-id"]) {
      return sendError(res, 400, "invalid_request_error", "missing or unsupported language model headers");
    }
    const model = headers["ai-language-model-id"];
    const reply = queue.shift() ?? fake.fallback(recorded);
    switch (reply.kind) {
      case "hang":
        return;
      case "error":
        return sendError(res, reply.status, reply.type ?? errorType(reply.status), reply.message ?? `fake gateway error ${reply.status}`);
      case "malformed":
        if (recorded.stream) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end("data: {not json\n\n");
        } else {
          res.writeHead(200, { "content-type": "application/json" });
          res.end("{not json");
        }
        return;
      case "text":
        return recorded.stream ? streamResult(res, reply, model) : sendResult(res, reply, model);
    }
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  // The gateway's own default is https://ai-gateway.vercel.sh/v3/ai; the fake keeps the path.
  fake.baseURL = `http://127.0.0.1:${port}/v3/ai`;
  return fake;
}

type TextReply = Extract<FakeGatewayReply, { kind: "text" }>;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

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

function chunksOf(reply: TextReply): string[] {
  if (reply.chunks) return reply.chunks;
  const out: string[] = [];
  for (let i = 0; i < reply.text.length; i += 8) out.push(reply.text.slice(i, i + 8));
  return out.length ? out : [""];
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
