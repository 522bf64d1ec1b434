import { createSseParser } from "./sse-parser.ts";

export type StreamState = "connecting" | "open" | "reconnecting" | "draining" | "closed";

export interface StreamHandlers {
  /** A named event with its raw data (JSON text for the stream host's events). */
  onEvent(event: string, data: string): void;
  /** Connection state changes; `retryInMs` is set while waiting to reconnect. */
  onState?(state: StreamState, info: { retryInMs?: number; status?: number }): void;
  /** The server refused for good (401, 403, 404), or the session expired mid-stream (401): no reconnect. */
  onFatal?(status: number): void;
  /**
   * An event still arriving, after each chunk that ends inside its data: its name and its data so far (the function
   * joins what was received, once per call). The event itself is delivered by onEvent when it ends, whole. The live
   * page reads the first panel of a snapshot from it (web/lib/snapshot-intake.ts). Returning true says the page took
   * something it will draw: the client then waits until the next frame is painted (afterPaint) before it reads on,
   * so that frame is not held behind the decoding of the chunks already received.
   */
  onPartial?(event: string, data: () => string): boolean | undefined;
}

export interface StreamOptions {
  fetch?: typeof fetch;
  setTimeout?: (fn: () => void, ms: number) => unknown;
  clearTimeout?: (handle: unknown) => void;
  random?: () => number;
  /** No bytes for this long (a frame or a heartbeat comes at least every 22.5 s) means a dead connection. */
  idleTimeoutMs?: number;
  /**
   * The first connection, already opened for this URL before the bundle ran (web/lib/early-stream.ts): used instead
   * of a fetch for the first connection only; reconnects fetch as usual.
   */
  early?: { response: Promise<Response>; abort(): void } | null;
  /**
   * Resolves once the next frame is painted: awaited when onPartial took something to draw. Default: an
   * animation-frame callback posts a task, which runs after that frame's paint (a task where there are no frames).
   */
  afterPaint?: () => Promise<void>;
}

/**
 * Chunks already received are read in one run of promise callbacks, which no frame can interrupt: a page that took
 * the first panel of a snapshot from its first chunk would paint it only after decoding the rest. A yield to the
 * task queue is not enough either (the reads that follow may run before the frame): this waits for the frame.
 */
function nextPaint(): Promise<void> {
  return new Promise((resolve) => {
    const post = () => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        channel.port1.close();
        resolve();
      };
      channel.port2.postMessage(null);
    };
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(post);
    else post();
  });
}

/** The reconnect delay used when the server gave no `retry:` hint. */
export const DEFAULT_RETRY_MS = 2000;
export const MAX_BACKOFF_MS = 30_000;

/**
 * How long to wait before reconnecting. After a drain frame the server's `retry:` hint is used as
 * is: the server already spread it over 2–10 s so instances are not stampeded. Other failures back
 * off exponentially from the hint (or 2 s) up to 30 s, with ±20 % jitter.
 */
export function reconnectDelay(o: { retryMs: number | null; failures: number; draining: boolean; random?: () => number }): number {
  const base = o.retryMs ?? DEFAULT_RETRY_MS;
  if (o.draining) return base;
  const exp = Math.min(MAX_BACKOFF_MS, base * 2 ** Math.max(0, o.failures - 1));
  const jitter = 0.8 + 0.4 * (o.random ?? Math.random)();
  return Math.round(Math.min(MAX_BACKOFF_MS, exp * jitter));
}

/** Statuses after which reconnecting cannot help (400: a view parameter in the URL is bad). */
const FATAL = new Set([400, 401, 403, 404, 410]);

/**
 * Subscribes to an SSE endpoint with fetch (so a 401 can send the user to sign in, which
 * EventSource cannot tell apart from a network error) and reconnects on its own: after the
 * server's `retry:` hint when it drained, with backoff after failures, and when heartbeats stop.
 */
export function openStream(url: string, handlers: StreamHandlers, opts: StreamOptions = {}): { close(): void } {
  const doFetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  const later = opts.setTimeout ?? ((fn, ms) => globalThis.setTimeout(fn, ms));
  const cancel = opts.clearTimeout ?? ((h) => globalThis.clearTimeout(h as number));
  const idleMs = opts.idleTimeoutMs ?? 45_000;
  const afterPaint = opts.afterPaint ?? nextPaint;
  let closed = false;
  let retryMs: number | null = null;
  let failures = 0;
  let controller: AbortController | null = null;
  let timer: unknown = null;
  let lastEventId: string | undefined;
  let early = opts.early ?? null;

  const state = (s: StreamState, info: { retryInMs?: number; status?: number } = {}) => handlers.onState?.(s, info);

  function schedule(draining: boolean): void {
    if (closed) return;
    const delay = reconnectDelay({ retryMs, failures, draining, random: opts.random });
    state(draining ? "draining" : "reconnecting", { retryInMs: delay });
    timer = later(() => {
      timer = null;
      void connect();
    }, delay);
  }

  async function connect(): Promise<void> {
    if (closed) return;
    state(failures === 0 ? "connecting" : "reconnecting");
    controller = new AbortController();
    const ctl = controller;
    let idle: unknown = null;
    const armIdle = () => {
      if (idle !== null) cancel(idle);
      idle = later(() => ctl.abort(), idleMs);
    };
    let draining = false;
    try {
      const headers: Record<string, string> = { accept: "text/event-stream" };
      if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
      armIdle();
      const first = early;
      early = null;
      if (first) ctl.signal.addEventListener("abort", () => first.abort(), { once: true });
      const res = first
        ? await first.response
        : await doFetch(url, { headers, credentials: "same-origin", cache: "no-store", signal: ctl.signal });
      if (FATAL.has(res.status)) {
        closed = true;
        state("closed", { status: res.status });
        handlers.onFatal?.(res.status);
        return;
      }
      if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
      const parser = createSseParser();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let opened = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        armIdle();
        for (const m of parser.feed(value)) {
          if (m.kind === "retry") retryMs = m.ms;
          else if (m.kind === "event") {
            if (!opened) {
              opened = true;
              failures = 0;
              state("open");
            }
            if (m.event === "draining") draining = true;
            handlers.onEvent(m.event, m.data);
            // The session ended: a reconnect would only get a 401, so the page signs in again now. Access to
            // the workspace ended: a reconnect would only get the 404 of anyone without a role there.
            if (m.event === "session_expired" || m.event === "forbidden") {
              const status = m.event === "forbidden" ? 404 : 401;
              closed = true;
              ctl.abort();
              state("closed", { status });
              handlers.onFatal?.(status);
              return;
            }
          }
        }
        lastEventId = parser.lastEventId ?? lastEventId;
        if (handlers.onPartial) {
          const pending = parser.pending();
          if (pending && handlers.onPartial(pending.event, pending.data) === true) await afterPaint();
        }
      }
    } catch {
      // Network error, abort by the idle timer, or a non-200: reconnect below.
    } finally {
      if (idle !== null) cancel(idle);
    }
    if (closed) return;
    if (!draining) failures++;
    schedule(draining);
  }

  void connect();
  return {
    close() {
      closed = true;
      early?.abort();
      early = null;
      if (timer !== null) cancel(timer);
      controller?.abort();
      state("closed");
    },
  };
}
