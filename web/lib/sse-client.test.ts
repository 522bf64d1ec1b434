import { describe, expect, test } from "vitest";
import { MAX_BACKOFF_MS, openStream, reconnectDelay, type StreamState } from "./sse-client.ts";

describe("reconnect delay", () => {
  test("after a drain frame, exactly the server's retry hint", () => {
    expect(reconnectDelay({ retryMs: 7345, failures: 3, draining: true, random: () => 0.9 })).toBe(7345);
  });

  test("after failures, exponential backoff from the hint with bounded jitter, capped", () => {
    const mid = () => 0.5; // jitter factor 1.0
    expect(reconnectDelay({ retryMs: null, failures: 1, draining: false, random: mid })).toBe(2000);
    expect(reconnectDelay({ retryMs: 3000, failures: 2, draining: false, random: mid })).toBe(6000);
    expect(reconnectDelay({ retryMs: 3000, failures: 20, draining: false, random: mid })).toBe(MAX_BACKOFF_MS);
    expect(reconnectDelay({ retryMs: 1000, failures: 1, draining: false, random: () => 0 })).toBe(800);
    expect(reconnectDelay({ retryMs: 1000, failures: 1, draining: false, random: () => 1 })).toBe(1200);
  });
});

/** A scripted server: each connection gets the next response; timers run only when the test says. */
function harness(responses: (() => Response)[]) {
  const timers: { fn: () => void; ms: number }[] = [];
  const requests: RequestInit[] = [];
  const events: [string, string][] = [];
  const states: [StreamState, number | undefined][] = [];
  let fatal: number | null = null;
  const fetchFn = (async (_url: string, init: RequestInit) => {
    requests.push(init);
    const next = responses.shift();
    if (!next) return new Promise<Response>(() => {}); // hangs, like an open stream
    return next();
  }) as unknown as typeof fetch;
  const stream = openStream(
    "/api/dashboards/d1/stream",
    {
      onEvent: (e, d) => events.push([e, d]),
      onState: (s, info) => states.push([s, info.retryInMs]),
      onFatal: (status) => {
        fatal = status;
      },
    },
    {
      fetch: fetchFn,
      setTimeout: (fn, ms) => {
        const t = { fn, ms };
        timers.push(t);
        return t;
      },
      clearTimeout: (h) => {
        const i = timers.indexOf(h as (typeof timers)[number]);
        if (i >= 0) timers.splice(i, 1);
      },
      random: () => 0.5,
    },
  );
  return { timers, requests, events, states, stream, fatal: () => fatal };
}

const sse =
  (text: string, status = 200) =>
  () =>
    new Response(new Blob([text]).stream(), { status, headers: { "content-type": "text/event-stream" } });

const settle = () => new Promise((r) => setTimeout(r, 0));
async function until(cond: () => boolean) {
  for (let i = 0; i < 200 && !cond(); i++) await settle();
  if (!cond()) throw new Error("condition never held");
}

describe("SSE client", () => {
  test("delivers events, then after a drain frame reconnects after the server's retry hint", async () => {
    const h = harness([
      sse('event: snapshot\ndata: {"n":1}\n\n: heartbeat\n\nretry: 6789\nevent: draining\ndata: {"retryMs":6789}\n\n'),
      sse('event: snapshot\ndata: {"n":2}\n\n'),
    ]);
    await until(() => h.states.some(([s]) => s === "draining"));
    expect(h.events).toEqual([
      ["snapshot", '{"n":1}'],
      ["draining", '{"retryMs":6789}'],
    ]);
    const reconnect = h.timers.find((t) => t.ms === 6789);
    expect(reconnect).toBeDefined();
    expect(h.requests).toHaveLength(1);
    reconnect!.fn();
    await until(() => h.events.length === 3);
    expect(h.events[2]).toEqual(["snapshot", '{"n":2}']);
    expect(h.requests).toHaveLength(2);
    h.stream.close();
  });

  test("a server error backs off and retries; a later success resets the backoff", async () => {
    const h = harness([sse("", 503), sse("", 502), sse("event: snapshot\ndata: {}\n\n")]);
    await until(() => h.states.filter(([s, ms]) => s === "reconnecting" && ms !== undefined).length === 1);
    const first = h.timers.at(-1)!;
    expect(first.ms).toBe(2000);
    first.fn();
    await until(() => h.states.filter(([s, ms]) => s === "reconnecting" && ms !== undefined).length === 2);
    const second = h.timers.at(-1)!;
    expect(second.ms).toBe(4000);
    second.fn();
    await until(() => h.events.length === 1);
    expect(h.states.map(([s]) => s)).toContain("open");
    h.stream.close();
  });

  test.each([401, 403, 404])("HTTP %i is final: no reconnect", async (status) => {
    const h = harness([sse("", status)]);
    await until(() => h.fatal() !== null);
    expect(h.fatal()).toBe(status);
    await settle();
    expect(h.timers.filter((t) => t.ms !== 45_000)).toEqual([]);
    expect(h.requests).toHaveLength(1);
  });

  test("event: session_expired is final as a 401 (the page sends the user to sign in): no reconnect", async () => {
    const h = harness([sse('event: snapshot\ndata: {}\n\nevent: session_expired\ndata: {"expiresAt":1}\n\n'), sse("")]);
    await until(() => h.fatal() !== null);
    expect(h.fatal()).toBe(401);
    expect(h.events.map(([e]) => e)).toEqual(["snapshot", "session_expired"]);
    expect(h.states.at(-1)).toEqual(["closed", undefined]);
    await settle();
    expect(h.timers.filter((t) => t.ms !== 45_000)).toEqual([]);
    expect(h.requests).toHaveLength(1);
  });

  test("event: forbidden is final as a 404 (access to the workspace ended): no reconnect", async () => {
    const h = harness([
      sse('event: snapshot\ndata: {}\n\nevent: forbidden\ndata: {"workspaceId":"ws_a","reason":"role_removed"}\n\n'),
      sse(""),
    ]);
    await until(() => h.fatal() !== null);
    expect(h.fatal()).toBe(404);
    expect(h.events.map(([e]) => e)).toEqual(["snapshot", "forbidden"]);
    await settle();
    expect(h.requests).toHaveLength(1);
  });

  test("close stops everything", async () => {
    const h = harness([]);
    await settle();
    h.stream.close();
    expect(h.states.at(-1)![0]).toBe("closed");
    expect((h.requests[0].signal as AbortSignal).aborted).toBe(true);
  });

  test("onPartial: after each chunk that ends inside an event's data, its data so far (a paint awaited when it took something); the event whole at its end", async () => {
    const partial: [string, string][] = [];
    const events: [string, string][] = [];
    const chunks = ['event: snapshot\ndata: {"a"', ":[1,", "2]}\n", "\n"];
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const chunk of chunks) c.enqueue(new TextEncoder().encode(chunk));
      },
    });
    const log: string[] = [];
    const stream = openStream(
      "/s",
      {
        onEvent: (e, d) => events.push([e, d]),
        onPartial: (e, data) => {
          partial.push([e, data()]);
          log.push("partial");
          // The page took something to draw from the second chunk only.
          return partial.length === 2;
        },
      },
      {
        fetch: async () => new Response(body, { headers: { "content-type": "text/event-stream" } }),
        afterPaint: async () => {
          log.push("paint");
        },
      },
    );
    await until(() => events.length === 1);
    expect(partial).toEqual([
      ["snapshot", '{"a"'],
      ["snapshot", '{"a":[1,'],
      ["snapshot", '{"a":[1,2]}'],
    ]);
    expect(events).toEqual([["snapshot", '{"a":[1,2]}']]);
    // The next frame's paint awaited after the chunk the page took something from, before the next is read.
    expect(log).toEqual(["partial", "partial", "paint", "partial"]);
    stream.close();
  });

  test("the request asks for an event stream with the session cookie", async () => {
    const h = harness([]);
    await settle();
    expect(h.requests[0].credentials).toBe("same-origin");
    expect((h.requests[0].headers as Record<string, string>).accept).toBe("text/event-stream");
    h.stream.close();
  });
});
