import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { StreamEventName, StreamFrames } from "../lib/live/frames.ts";

/** Response headers of every stream (docs/stream-host.md). */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
};

/**
 * Encodes one SSE event of the stream (its payload type from lib/live/frames.ts). JSON never contains a
 * raw newline, so `data` is always a single line.
 */
export function encodeEvent<K extends StreamEventName>(event: K, data: StreamFrames[K]): Buffer {
  return Buffer.from(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * The headers of a stream in `encoding` (stream-host/stream-compression.ts). With compression configured, every
 * stream says `Vary: Accept-Encoding`, compressed or not: its coding followed the request's.
 */
export function sseHeaders(encoding: "deflate" | null, negotiated: boolean): Readonly<Record<string, string>> {
  if (!negotiated) return SSE_HEADERS;
  return { ...SSE_HEADERS, vary: "accept-encoding", ...(encoding ? { "content-encoding": encoding } : {}) };
}

/** The comment heartbeat: keeps proxies from timing the stream out and surfaces dead sockets. */
export const HEARTBEAT_FRAME: Buffer = Buffer.from(": heartbeat\n\n");

/**
 * The terminal drain frame: a `retry:` hint, then an event named `draining`. The event
 * carries a data line because EventSource does not dispatch an event whose data is empty.
 */
export function drainingFrame(retryMs: number): Buffer {
  const frame: StreamFrames["draining"] = { retryMs };
  return Buffer.from(`retry: ${retryMs}\nevent: draining\ndata: ${JSON.stringify(frame)}\n\n`);
}

/**
 * The terminal frame of a stream whose session ended, because its `exp` passed or because it was
 * revoked (logout, "sign out everywhere"): the stream closes after it and a reconnect is refused with
 * 401, so the client signs in again instead of retrying.
 */
export function sessionExpiredFrame(expiresAt: number, reason: "expired" | "revoked" = "expired"): Buffer {
  return encodeEvent("session_expired", reason === "expired" ? { expiresAt } : { expiresAt, reason: "revoked" });
}

/** A per-stream reconnect delay, uniform over 2000..10000 ms, so subscribers do not all return at once. */
export function drainRetryMs(random: () => number = Math.random): number {
  return 2000 + Math.min(8000, Math.floor(random() * 8001));
}

/** One subscriber's outgoing stream, independent of how bytes reach the socket. */
export interface Sink {
  /** Writes a frame; false when the subscriber has not drained beyond its bound and must be dropped. */
  write(frame: Uint8Array): boolean;
  /** Writes an optional last frame and ends the stream; resolves when the bytes are handed to the kernel or the socket closed. */
  end(frame?: Uint8Array): Promise<void>;
  /** Drops the connection without a final frame. */
  destroy(): void;
  /** Called once when the stream closes for any reason (client gone, ended, destroyed). */
  onClose(listener: () => void): void;
  readonly closed: boolean;
}

/** Default bound of bytes a subscriber may leave unread before it is dropped. */
export const DEFAULT_MAX_BUFFERED_BYTES = 1 << 20;

let lastFrame: Uint8Array | null = null;
let lastChunk: Buffer | null = null;

/**
 * The HTTP/1.1 chunk carrying `frame`. Built once per frame: every subscriber gets the same frame in
 * turn, so a one-entry cache serves the whole fan-out.
 */
function chunkOf(frame: Uint8Array): Buffer {
  if (frame !== lastFrame) {
    lastChunk = Buffer.concat([Buffer.from(`${frame.byteLength.toString(16)}\r\n`), frame, Buffer.from("\r\n")]);
    lastFrame = frame;
  }
  return lastChunk!;
}

/**
 * A sink writing straight to the socket under Node's response: after the headers went out, each
 * frame is one pre-framed chunk handed to the socket with no per-subscriber stream machinery and no
 * corking, so the first subscribers receive it while the fan-out loop still runs.
 */
export function nodeSink(res: ServerResponse, opts: { maxBufferedBytes?: number; headers?: Readonly<Record<string, string>> } = {}): Sink {
  return new NodeSink(res, opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES, opts.headers ?? SSE_HEADERS);
}

/** The socket's sink, for the one `close` listener all sinks share. */
const SINK = Symbol("sink");

function onSocketClose(this: Socket) {
  (this as Socket & { [SINK]?: NodeSink })[SINK]?.fire();
}

/** The chunked body's terminator (the last, empty chunk and no trailers). */
const LAST_CHUNK = Buffer.from("0\r\n\r\n");

/**
 * nodeSink's state. One object per subscriber that lives as long as its stream: a class rather than an object of
 * closures, so a subscriber costs a few fields instead of five closures, their context and a dictionary-mode object
 * (an object literal with a getter is one), about 0.8 KB each at 10,000 subscribers (`npm run bench -- fanout`).
 *
 * Once the headers are out, the socket is detached from the response (`detachSocket`, what Node itself does when a
 * response finishes) and the sink holds the socket alone: the response object, its header tables and its writable
 * state are not kept for the hours a stream lives (about 1 KB per subscriber). The sink writes the chunked framing
 * itself, ends the body with the last chunk and closes the connection after it, and learns of the end from the
 * socket's `close`.
 */
class NodeSink implements Sink {
  #socket: Socket | null;
  #bound: number;
  #chunked: boolean;
  #closed = false;
  #listeners: (() => void)[] | null = null;

  constructor(res: ServerResponse, bound: number, headers: Readonly<Record<string, string>>) {
    this.#bound = bound;
    const socket = res.socket;
    socket?.setNoDelay(true);
    // Streams are long-lived by design; no idle timeout may cut them (disconnects surface through writes and close).
    socket?.setTimeout(0);
    res.writeHead(200, headers);
    res.flushHeaders();
    this.#chunked = (res as unknown as { chunkedEncoding?: boolean }).chunkedEncoding === true;
    if (!socket || socket.destroyed) {
      this.#socket = null;
      this.#closed = true;
      return;
    }
    res.detachSocket(socket);
    (socket as Socket & { [SINK]?: NodeSink })[SINK] = this;
    socket.on("close", onSocketClose);
    this.#socket = socket;
  }

  fire() {
    if (this.#closed) return;
    this.#closed = true;
    const listeners = this.#listeners;
    this.#listeners = null;
    for (const l of listeners ?? []) l();
  }

  get closed() {
    return this.#closed || this.#socket === null || this.#socket.destroyed;
  }

  write(frame: Uint8Array) {
    const socket = this.#socket;
    if (this.#closed || socket === null || socket.destroyed || socket.writableEnded) return false;
    // A subscriber whose earlier frames still sit in our buffer beyond the bound is not reading.
    if (socket.writableLength > this.#bound) return false;
    socket.write(this.#chunked ? chunkOf(frame) : frame);
    return true;
  }

  end(frame?: Uint8Array) {
    const socket = this.#socket;
    if (this.#closed || socket === null || socket.destroyed || socket.writableEnded) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.fire();
        resolve();
      };
      socket.once("close", done);
      if (frame) socket.write(this.#chunked ? chunkOf(frame) : frame);
      // The body ends here and so does the connection: no later response may follow on a socket the response no
      // longer owns. Closed once the bytes are handed to the kernel, whether or not the client closes its side.
      const closeAfter = () => {
        socket.destroy();
        done();
      };
      if (this.#chunked) socket.end(LAST_CHUNK, closeAfter);
      else socket.end(closeAfter);
    });
  }

  destroy() {
    this.#socket?.destroy();
  }

  onClose(listener: () => void) {
    if (this.closed) listener();
    else if (this.#listeners) this.#listeners.push(listener);
    else this.#listeners = [listener];
  }
}

/**
 * A sink over a web ReadableStream, for runtimes without a Node response (and app.request() tests).
 * The queue is bounded by bytes; a subscriber over the bound is dropped the same way.
 */
export function webSink(opts: { maxBufferedBytes?: number } = {}): { sink: Sink; body: ReadableStream<Uint8Array> } {
  const bound = opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  const listeners: (() => void)[] = [];
  const fire = () => {
    if (closed) return;
    closed = true;
    for (const l of listeners.splice(0)) l();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      cancel() {
        fire();
      },
    },
    { highWaterMark: bound, size: (chunk) => chunk.byteLength },
  );
  const sink: Sink = {
    get closed() {
      return closed;
    },
    write(frame) {
      if (closed) return false;
      if ((controller.desiredSize ?? 0) < 0) return false;
      controller.enqueue(frame);
      return true;
    },
    end(frame) {
      if (!closed) {
        if (frame) controller.enqueue(frame);
        controller.close();
        fire();
      }
      return Promise.resolve();
    },
    destroy() {
      if (closed) return;
      controller.error(new Error("subscriber dropped"));
      fire();
    },
    onClose(listener) {
      if (closed) listener();
      else listeners.push(listener);
    },
  };
  return { sink, body };
}
