import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** The part every fake model server shares: recorded requests, a reply queue with a fallback, its URL. */
export interface RecordingFake<Req, Reply> {
  /** Base URL to give the SDK (the fake's path prefix included). */
  baseURL: string;
  apiKey: string;
  requests: Req[];
  /** Queues replies, used in order; when the queue is empty `fallback` answers. */
  enqueue(...replies: Reply[]): void;
  /** Forgets queued replies and recorded requests (between tests). */
  reset(): void;
  /** Answers requests when the queue is empty (default: a short text). */
  fallback: (req: Req) => Reply;
  close(): Promise<void>;
}

/** What a fake's request handler gets besides the request: where to record it and where to take its reply. */
export interface FakeTurn<Req, Reply> {
  record(req: Req): void;
  nextReply(req: Req): Reply;
}

/**
 * Starts a real HTTP server on a loopback port for a fake model provider. The fake supplies the
 * protocol (`handle`) and the body of a crash answer (`crashBody`); queueing, recording and shutdown live here.
 */
export async function startRecordingFake<Req, Reply>(opts: {
  apiKey: string;
  /** Path prefix appended to the server's origin to form baseURL (e.g. "/v1"). */
  basePath: string;
  defaultReply: Reply;
  handle(req: IncomingMessage, res: ServerResponse, turn: FakeTurn<Req, Reply>): Promise<void>;
  crashBody(err: unknown): unknown;
}): Promise<RecordingFake<Req, Reply>> {
  const queue: Reply[] = [];
  const requests: Req[] = [];
  const server: Server = createServer((req, res) => {
    void opts.handle(req, res, turn).catch((err) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify(opts.crashBody(err)));
    });
  });
  const fake: RecordingFake<Req, Reply> = {
    baseURL: "",
    apiKey: opts.apiKey,
    requests,
    enqueue: (...replies) => queue.push(...replies),
    reset: () => {
      queue.length = 0;
      requests.length = 0;
    },
    fallback: () => opts.defaultReply,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const turn: FakeTurn<Req, Reply> = {
    record: (req) => requests.push(req),
    nextReply: (req) => queue.shift() ?? fake.fallback(req),
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  fake.baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}${opts.basePath}`;
  return fake;
}

/** The whole request body as text. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

/** A 200 whose body (or, streaming, whose event) is not valid JSON. */
export function sendMalformed(res: ServerResponse, stream: boolean): void {
  if (stream) {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end("data: {not json\n\n");
  } else {
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{not json");
  }
}

/** A text reply's streamed pieces: its own `chunks`, else about 8 characters each. */
export function chunksOf(reply: { text: string; chunks?: string[] }): string[] {
  if (reply.chunks) return reply.chunks;
  const out: string[] = [];
  for (let i = 0; i < reply.text.length; i += 8) out.push(reply.text.slice(i, i + 8));
  return out.length ? out : [""];
}
