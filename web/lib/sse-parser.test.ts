import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { createSseParser, type SseMessage } from "./sse-parser.ts";

const events = (msgs: SseMessage[]) => msgs.filter((m) => m.kind === "event");

describe("SSE frame parser", () => {
  test("parses the stream host's frames: snapshot, panel, heartbeat, drain", () => {
    const p = createSseParser();
    const out = p.feed(
      'event: snapshot\ndata: {"dashboard":{"id":"d"},"panels":[]}\n\n' +
        ": heartbeat\n\n" +
        'event: panel\ndata: {"panelId":"a","at":1}\n\n' +
        'retry: 4321\nevent: draining\ndata: {"retryMs":4321}\n\n',
    );
    expect(out).toEqual([
      { kind: "event", event: "snapshot", data: '{"dashboard":{"id":"d"},"panels":[]}' },
      { kind: "comment", text: "heartbeat" },
      { kind: "event", event: "panel", data: '{"panelId":"a","at":1}' },
      { kind: "retry", ms: 4321 },
      { kind: "event", event: "draining", data: '{"retryMs":4321}' },
    ]);
  });

  test("a frame split across chunks is emitted once, when complete", () => {
    const p = createSseParser();
    expect(p.feed("event: pan")).toEqual([]);
    expect(p.feed('el\ndata: {"x"')).toEqual([]);
    expect(p.feed(":1}\n")).toEqual([]);
    expect(p.feed("\n")).toEqual([{ kind: "event", event: "panel", data: '{"x":1}' }]);
  });

  test("pending: the event being read, its data so far with the line in progress, until it ends", () => {
    const p = createSseParser();
    expect(p.pending()).toBeNull();
    p.feed("event: snapshot\nda");
    // The field name is not complete: no data yet.
    expect(p.pending()).toBeNull();
    p.feed('ta: {"a":');
    expect(p.pending()?.event).toBe("snapshot");
    expect(p.pending()?.data()).toBe('{"a":');
    p.feed("[1,");
    p.feed("2");
    expect(p.pending()?.data()).toBe('{"a":[1,2');
    p.feed("]}\ndata: x");
    expect(p.pending()?.data()).toBe('{"a":[1,2]}\nx');
    expect(p.feed("\n\n")).toEqual([{ kind: "event", event: "snapshot", data: '{"a":[1,2]}\nx' }]);
    expect(p.pending()).toBeNull();
    // A data line ended, the event not yet; another field's line in progress.
    p.feed("data: y\nid: 4");
    expect(p.pending()).toEqual({ event: "message", data: expect.any(Function) });
    expect(p.pending()?.data()).toBe("y");
    // Reading the data so far changes nothing about what the event delivers.
    expect(p.feed("2\n\n")).toEqual([{ kind: "event", event: "message", data: "y", id: "42" }]);
  });

  test("CRLF and lone CR line endings, including a CR at a chunk edge", () => {
    const p = createSseParser();
    expect(events(p.feed("data: a\r\ndata: b\r"))).toEqual([]);
    expect(events(p.feed("\n\r\n"))).toEqual([{ kind: "event", event: "message", data: "a\nb" }]);
    expect(events(p.feed("data: c\r\r"))).toEqual([{ kind: "event", event: "message", data: "c" }]);
  });

  test("spec details: one leading space dropped, no-colon field, empty data, unknown fields, ids", () => {
    const p = createSseParser();
    expect(p.feed("data:  two spaces\n\n")).toEqual([{ kind: "event", event: "message", data: " two spaces" }]);
    expect(p.feed("data\n\n")).toEqual([{ kind: "event", event: "message", data: "" }]);
    expect(p.feed("event: x\n\n")).toEqual([]); // no data: not dispatched, and the name does not leak
    expect(p.feed("data: y\n\n")).toEqual([{ kind: "event", event: "message", data: "y" }]);
    expect(p.feed("foo: bar\nid: 7\ndata: z\n\n")).toEqual([{ kind: "event", event: "message", data: "z", id: "7" }]);
    expect(p.lastEventId).toBe("7");
  });

  test.each(["retry: 12a", "retry: -5", "retry: 1.5", "retry:", "retry: ∞"])("ignores an invalid %j", (line) => {
    expect(createSseParser().feed(`${line}\n\n`)).toEqual([]);
  });

  test("reset drops a partial frame", () => {
    const p = createSseParser();
    p.feed("event: panel\ndata: half");
    p.reset();
    expect(p.feed("data: whole\n\n")).toEqual([{ kind: "event", event: "message", data: "whole" }]);
  });

  test("a line of megabytes fed in many chunks (a snapshot) is one event with all of its data", () => {
    const data = JSON.stringify({ rows: Array.from({ length: 40_000 }, (_, i) => [i, `host-${i % 4}`, i / 7]) });
    const stream = `event: snapshot\ndata: ${data}\n\nevent: panel\ndata: {}\n\n`;
    const p = createSseParser();
    const got: SseMessage[] = [];
    for (let i = 0; i < stream.length; i += 65_536) got.push(...p.feed(stream.slice(i, i + 65_536)));
    expect(got).toEqual([
      { kind: "event", event: "snapshot", data },
      { kind: "event", event: "panel", data: "{}" },
    ]);
  });

  test("any chunking of a stream gives the same messages", () => {
    const stream = 'event: snapshot\ndata: {"a":1}\n\n: heartbeat\r\n\r\nretry: 2500\revent: draining\rdata: {}\r\rdata: x\ndata: y\n\n';
    const whole = createSseParser().feed(stream);
    fc.assert(
      fc.property(fc.array(fc.nat({ max: stream.length }), { maxLength: 12 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const p = createSseParser();
        const got: SseMessage[] = [];
        let prev = 0;
        for (const c of [...points, stream.length]) {
          got.push(...p.feed(stream.slice(prev, c)));
          prev = c;
        }
        expect(got).toEqual(whole);
      }),
    );
  });
});
