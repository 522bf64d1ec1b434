import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type FakeTurn, type RecordingFake, chunksOf, readBody, sendMalformed, startRecordingFake } from "./fake-server.ts";

/** What the fake answers to one model request. */
export type FakeReply =
  /** A normal answer; streaming requests get `text` split into `chunks` (default: about 8 characters each). */
  | {
      kind: "text";
      text: string;
      usage?: { input: number; output: number };
      chunks?: string[];
      /** Streaming only: send this many chunks, then drop the connection (a provider failing mid-answer). */
      dropAfterChunks?: number;
      /** With dropAfterChunks: the drop waits for this (so the client has seen the first chunks). */
      dropWhen?: Promise<void>;
      /** Resolves before the answer is sent (a gate promise, for tests that need a request held open). */
      wait?: Promise<void>;
    }
  /** An HTTP error with an OpenAI-style error body. */
  | { kind: "error"; status: number; message?: string }
  /** A 200 whose body is not valid JSON (or, streaming, whose events are not). */
  | { kind: "malformed" }
  /** Never answers; the connection stays open until the client gives up or the server closes. */
  | { kind: "hang" };

/** One request the fake received. */
export interface RecordedRequest {
  api: "chat" | "responses";
  stream: boolean;
  authorization: string | undefined;
  body: Record<string, unknown>;
  /** Every text the request carried (system, user and assistant turns), joined for easy assertions. */
  text: string;
}

export type FakeOpenAI = RecordingFake<RecordedRequest, FakeReply>;

/**
 * A real HTTP server speaking the OpenAI-compatible protocol (POST /v1/chat/completions and
 * POST /v1/responses, streaming and not) so tests run the real AI SDK provider code end to end.
 * It checks the bearer key like a real endpoint and answers 401 to a wrong one.
 */
export async function startFakeOpenAI(opts: { apiKey?: string } = {}): Promise<FakeOpenAI> {
  const apiKey = opts.apiKey ?? `sk-fake-${randomBytes(8).toString("hex")}`;
  return startRecordingFake<RecordedRequest, FakeReply>({
    apiKey,
    basePath: "/v1",
    defaultReply: { kind: "text", text: "ok", usage: { input: 1, output: 1 } },
    crashBody: (err) => ({ error: { message: String(err), type: "server_error" } }),
    handle,
  });

  async function handle(req: IncomingMessage, res: ServerResponse, turn: FakeTurn<RecordedRequest, FakeReply>): Promise<void> {
    const path = (req.url ?? "").split("?")[0];
    const api = path === "/v1/chat/completions" ? "chat" : path === "/v1/responses" ? "responses" : null;
    if (req.method !== "POST" || !api) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "not found", type: "invalid_request_error" } }));
      return;
    }
    const raw = await readBody(req);
    const body = JSON.parse(raw);
    const recorded: RecordedRequest = {
      api,
      stream: body.stream === true,
      authorization: req.headers.authorization,
      body,
      text: collectText(body),
    };
    turn.record(recorded);
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      return sendError(res, 401, "Incorrect API key provided.");
    }
    const reply = turn.nextReply(recorded);
    switch (reply.kind) {
      case "hang":
        return; // the socket stays open; closeAllConnections or the client's abort ends it
      case "error":
        return sendError(res, reply.status, reply.message ?? `fake error ${reply.status}`);
      case "malformed":
        return sendMalformed(res, recorded.stream);
      case "text":
        if (reply.wait) await reply.wait;
        if (api === "chat") return recorded.stream ? streamChat(res, reply, body.model) : sendChat(res, reply, body.model);
        return recorded.stream ? streamResponses(res, reply, body.model) : sendResponses(res, reply, body.model);
    }
  }
}

type TextReply = Extract<FakeReply, { kind: "text" }>;

function collectText(body: Record<string, unknown>): string {
  const out: string[] = [];
  const visit = (v: unknown) => {
    if (typeof v === "string") out.push(v);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === "object") {
      const o = v as Record<string, unknown>;
      for (const key of ["content", "text", "input", "instructions"]) if (key in o) visit(o[key]);
    }
  };
  visit(body.messages);
  visit(body.input);
  visit(body.instructions);
  return out.join("\n");
}

function sendError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type: status < 500 ? "invalid_request_error" : "server_error", code: null } }));
}

const created = () => Math.floor(Date.now() / 1000);

function sendChat(res: ServerResponse, reply: TextReply, model: string): void {
  const usage = reply.usage ?? { input: 0, output: 0 };
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: `chatcmpl-${randomBytes(6).toString("hex")}`,
      object: "chat.completion",
      created: created(),
      model,
      choices: [{ index: 0, message: { role: "assistant", content: reply.text }, finish_reason: "stop" }],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
    }),
  );
}

function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

async function drop(res: ServerResponse, reply: TextReply): Promise<void> {
  await reply.dropWhen;
  res.socket?.destroy();
}

async function streamChat(res: ServerResponse, reply: TextReply, model: string): Promise<void> {
  const usage = reply.usage ?? { input: 0, output: 0 };
  const id = `chatcmpl-${randomBytes(6).toString("hex")}`;
  const base = { id, object: "chat.completion.chunk", created: created(), model };
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  sse(res, { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] });
  let sent = 0;
  for (const piece of chunksOf(reply)) {
    if (reply.dropAfterChunks !== undefined && sent++ >= reply.dropAfterChunks) return drop(res, reply);
    sse(res, { ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
  }
  sse(res, { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
  sse(res, {
    ...base,
    choices: [],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
  });
  sse(res, "[DONE]");
  res.end();
}

function responsesUsage(reply: TextReply) {
  const usage = reply.usage ?? { input: 0, output: 0 };
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input + usage.output,
  };
}

function sendResponses(res: ServerResponse, reply: TextReply, model: string): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: `resp_${randomBytes(6).toString("hex")}`,
      object: "response",
      created_at: created(),
      model,
      status: "completed",
      error: null,
      incomplete_details: null,
      output: [
        {
          type: "message",
          id: `msg_${randomBytes(6).toString("hex")}`,
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: reply.text, annotations: [] }],
        },
      ],
      usage: responsesUsage(reply),
    }),
  );
}

async function streamResponses(res: ServerResponse, reply: TextReply, model: string): Promise<void> {
  const id = `resp_${randomBytes(6).toString("hex")}`;
  const itemId = `msg_${randomBytes(6).toString("hex")}`;
  let seq = 0;
  const event = (type: string, data: Record<string, unknown>) => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  };
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  event("response.created", { response: { id, object: "response", created_at: created(), model, status: "in_progress" } });
  event("response.output_item.added", {
    output_index: 0,
    item: { type: "message", id: itemId, role: "assistant", status: "in_progress", content: [] },
  });
  let sent = 0;
  for (const piece of chunksOf(reply)) {
    if (reply.dropAfterChunks !== undefined && sent++ >= reply.dropAfterChunks) return drop(res, reply);
    event("response.output_text.delta", { item_id: itemId, output_index: 0, content_index: 0, delta: piece });
  }
  event("response.output_item.done", {
    output_index: 0,
    item: {
      type: "message",
      id: itemId,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: reply.text, annotations: [] }],
    },
  });
  event("response.completed", {
    response: {
      id,
      object: "response",
      created_at: created(),
      model,
      status: "completed",
      incomplete_details: null,
      usage: responsesUsage(reply),
    },
  });
  res.end();
}
