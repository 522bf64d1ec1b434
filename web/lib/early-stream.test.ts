import { runInNewContext } from "node:vm";
import { describe, expect, test } from "vitest";
import { EARLY_STREAM_GLOBAL, EARLY_STREAM_SCRIPT, EARLY_STREAM_UNCLAIMED_MS } from "../../lib/live/early-stream.ts";
import { takeEarlyStream } from "./early-stream.ts";
import { openStream } from "./sse-client.ts";

const enc = new TextEncoder();

/** A server's response whose body the test writes chunk by chunk. */
function controlledResponse(status = 200) {
  let ctrl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      ctrl = c;
    },
  });
  return {
    response: new Response(body, { status, headers: { "content-type": "text/event-stream" } }),
    push: (s: string) => ctrl.enqueue(enc.encode(s)),
    end: () => ctrl.close(),
  };
}

/** Runs the page's inline script as the browser would, in a window of its own, with a fetch the test answers. */
function runScript(attr: string | null, answer: (url: string, init: RequestInit) => Promise<Response>) {
  const calls: { url: string; init: RequestInit }[] = [];
  const timers: { fn: () => void; ms: number }[] = [];
  // The page's window, as the bundle sees it (a plain object outside the script's context).
  const win: Record<string, unknown> = {};
  runInNewContext(EARLY_STREAM_SCRIPT, {
    window: win,
    document: { currentScript: { getAttribute: (n: string) => (n === "data-stream" ? attr : null) } },
    fetch: (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return answer(url, init);
    },
    AbortController,
    ReadableStream,
    setTimeout: (fn: () => void, ms: number) => timers.push({ fn, ms }),
  });
  return { win, calls, timers };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("the early stream: opened by the page's inline script, taken over by the stream client", () => {
  test("the script asks for the stream as the client does, and the client reads what came before it took over, then the rest", async () => {
    const server = controlledResponse();
    const { win, calls } = runScript("/api/dashboards/d/stream?from=now-6h", async () => server.response);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe("/api/dashboards/d/stream?from=now-6h");
    expect(calls[0]!.init).toMatchObject({ headers: { accept: "text/event-stream" }, credentials: "same-origin", cache: "no-store" });
    server.push('event: snapshot\ndata: {"dashboard":{"id":"d"},');
    server.push('"view":{},"panels":[]}\n\n');
    await tick();
    const events: string[] = [];
    const states: string[] = [];
    const fetches: string[] = [];
    const s = openStream(
      "/api/dashboards/d/stream?from=now-6h",
      { onEvent: (e, d) => events.push(`${e} ${d}`), onState: (st) => states.push(st) },
      {
        early: takeEarlyStream("/api/dashboards/d/stream?from=now-6h", win),
        fetch: async (u) => {
          fetches.push(String(u));
          return new Response(null, { status: 500 });
        },
      },
    );
    await tick();
    expect(events).toEqual(['snapshot {"dashboard":{"id":"d"},"view":{},"panels":[]}']);
    server.push('event: panel\ndata: {"panelId":"a","at":1}\n\n');
    await tick();
    await tick();
    expect(events.at(-1)).toBe('panel {"panelId":"a","at":1}');
    expect(fetches).toEqual([]);
    expect(states).toEqual(["connecting", "open"]);
    expect(win[EARLY_STREAM_GLOBAL]).toBeUndefined();
    s.close();
  });

  test("once taken over, the script reads no further than its read in progress: the rest is read as the page reads it, in order", async () => {
    // A body that makes a chunk, a task later, each time it is read: the count of its reads is how far it was read.
    let made = 0;
    const body = new ReadableStream<Uint8Array>(
      {
        pull: (c) =>
          new Promise<void>((done) =>
            setTimeout(() => {
              made++;
              c.enqueue(enc.encode(`${made},`));
              done();
            }, 0),
          ),
      },
      { highWaterMark: 0 },
    );
    const { win } = runScript("/s", async () => new Response(body, { status: 200 }));
    for (let i = 0; i < 5; i++) await tick();
    // Before the bundle runs, the script reads as the bytes come.
    const beforeTake = made;
    expect(beforeTake).toBeGreaterThan(3);
    const early = takeEarlyStream("/s", win)!;
    const res = await early.response;
    for (let i = 0; i < 10; i++) await tick();
    // After it, at most the read that was in progress.
    const atTake = made;
    expect(atTake).toBeLessThanOrEqual(beforeTake + 1);
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let text = "";
    for (let i = 0; i < 3 + atTake; i++) {
      const x = await reader.read();
      text += dec.decode(x.value);
    }
    // The chunks kept, then one read of the body per read of the page's, none lost or reordered.
    expect(text).toBe(Array.from({ length: 3 + atTake }, (_, i) => `${i + 1},`).join(""));
    for (let i = 0; i < 10; i++) await tick();
    expect(made).toBeLessThanOrEqual(atTake + 3 + 1);
    await reader.cancel();
  });

  test("taken once: a second take, or one for another URL, gets null; another URL also ends the early connection", async () => {
    let signal: AbortSignal | undefined;
    const { win } = runScript("/s?a", async (_u, init) => {
      signal = init.signal ?? undefined;
      return controlledResponse().response;
    });
    expect(takeEarlyStream("/s?b", win)).toBeNull();
    expect(signal?.aborted).toBe(true);
    expect(takeEarlyStream("/s?a", win)).toBeNull();
    const other = runScript("/s?a", async () => controlledResponse().response);
    expect(takeEarlyStream("/s?a", other.win)).not.toBeNull();
    expect(takeEarlyStream("/s?a", other.win)).toBeNull();
  });

  test("left unclaimed (the bundle never ran), the early stream is closed and dropped; once taken, the timer leaves it", async () => {
    let signal: AbortSignal | undefined;
    const { win, timers } = runScript("/s", async (_u, init) => {
      signal = init.signal ?? undefined;
      return controlledResponse().response;
    });
    expect(timers.map((t) => t.ms)).toEqual([EARLY_STREAM_UNCLAIMED_MS]);
    timers[0]!.fn();
    expect(signal?.aborted).toBe(true);
    expect(win[EARLY_STREAM_GLOBAL]).toBeUndefined();

    const taken = runScript("/s", async (_u, init) => {
      signal = init.signal ?? undefined;
      return controlledResponse().response;
    });
    expect(takeEarlyStream("/s", taken.win)).not.toBeNull();
    taken.timers[0]!.fn();
    expect(signal?.aborted).toBe(false);
  });

  test("no attribute, no stream: the client opens its own", () => {
    const { win, calls } = runScript(null, async () => controlledResponse().response);
    expect(calls).toEqual([]);
    expect(takeEarlyStream("/s", win)).toBeNull();
  });

  test("a refusal (401) reaches the client as it would have from its own fetch", async () => {
    const { win } = runScript("/s", async () => new Response("no", { status: 401 }));
    const fatal: number[] = [];
    openStream("/s", { onEvent: () => {}, onFatal: (st) => fatal.push(st) }, { early: takeEarlyStream("/s", win) });
    await tick();
    expect(fatal).toEqual([401]);
  });

  test("closing the client ends the early connection, and a dropped one reconnects with a fetch of its own", async () => {
    let signal: AbortSignal | undefined;
    const { win } = runScript("/s", async (_u, init) => {
      signal = init.signal ?? undefined;
      return controlledResponse().response;
    });
    const s = openStream("/s", { onEvent: () => {} }, { early: takeEarlyStream("/s", win) });
    await tick();
    s.close();
    expect(signal?.aborted).toBe(true);

    const dropped = controlledResponse();
    const again = runScript("/s", async () => dropped.response);
    const fetches: string[] = [];
    const timers: (() => void)[] = [];
    const c = openStream(
      "/s",
      { onEvent: () => {} },
      {
        early: takeEarlyStream("/s", again.win),
        fetch: async (u) => {
          fetches.push(String(u));
          return controlledResponse().response;
        },
        setTimeout: (fn) => timers.push(fn),
        clearTimeout: () => {},
      },
    );
    await tick();
    dropped.end();
    await tick();
    await tick();
    // The reconnect is scheduled (the idle timer is the first one armed); running it fetches anew.
    timers.at(-1)!();
    await tick();
    expect(fetches).toEqual(["/s"]);
    c.close();
  });
});
