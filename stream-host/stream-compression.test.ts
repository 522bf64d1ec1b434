import zlib from "node:zlib";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { HEARTBEAT_FRAME, type Sink, drainingFrame, encodeEvent, sessionExpiredFrame } from "./sse.ts";
import {
  FIRST_PIECE_BYTES,
  acceptsDeflate,
  adler32,
  adler32Combine,
  createFrameDeflater,
  deflateSink,
  streamEncoding,
} from "./stream-compression.ts";

/** A sink that keeps every chunk it is handed; `refuse` makes its next writes fail as an over-bound socket's do. */
function recordingSink() {
  const chunks: Buffer[] = [];
  let ended = false;
  const rec = {
    chunks,
    refuse: false,
    get ended() {
      return ended;
    },
    sink: {
      get closed() {
        return ended;
      },
      write(frame: Uint8Array) {
        if (rec.refuse) return false;
        chunks.push(frame as Buffer);
        return true;
      },
      end(frame?: Uint8Array) {
        if (frame) chunks.push(Buffer.from(frame));
        ended = true;
        return Promise.resolve();
      },
      destroy() {
        ended = true;
      },
      onClose() {},
    } satisfies Sink,
  };
  return rec;
}

const panelFrame = (i: number) =>
  encodeEvent("panel", {
    panelId: `p${i % 4}`,
    at: 1_700_000_000_000 + i * 2000,
    result: {
      columns: [
        { name: "time", type: "timestamptz" },
        { name: "host", type: "text" },
        { name: "cpu", type: "float8" },
      ],
      rows: Array.from({ length: 8 }, (_, r) => [1_700_000_000_000 + r * 60_000, `host-${r % 4}`, (i * 31 + r * 17) % 100]),
      truncated: false,
      elapsedMs: 3,
    },
  });

describe("a deflated stream", () => {
  test("decodes byte-identical, frame by frame as each write arrives, with zlib, a raw inflate and the web's DecompressionStream", async () => {
    const rec = recordingSink();
    const sink = deflateSink(rec.sink, createFrameDeflater());
    const frames = [
      encodeEvent("snapshot", { dashboard: { id: "d" }, panels: [] } as never),
      panelFrame(1),
      HEARTBEAT_FRAME,
      panelFrame(2),
    ];
    // A streaming inflate fed each write in turn has decoded exactly the frames written so far: nothing waits
    // in the compressor for a later frame.
    const inflate = zlib.createInflate();
    const decoded: Buffer[] = [];
    inflate.on("data", (c: Buffer) => decoded.push(c));
    let sent = Buffer.alloc(0);
    for (const f of frames) {
      expect(sink.write(f)).toBe(true);
      await new Promise<void>((r) => inflate.write(rec.chunks.at(-1)!, () => r()));
      await new Promise<void>((r) => inflate.flush(zlib.constants.Z_SYNC_FLUSH, () => r()));
      sent = Buffer.concat([sent, f]);
      expect(Buffer.concat(decoded).equals(sent)).toBe(true);
    }
    const terminal = drainingFrame(4321);
    await sink.end(terminal);
    const ended = new Promise((r) => inflate.once("end", r));
    inflate.end(rec.chunks.at(-1)!);
    await ended;
    const all = Buffer.concat([...frames, terminal]);
    expect(Buffer.concat(decoded).equals(all)).toBe(true);
    expect(Buffer.concat(decoded).toString()).toContain("retry: 4321\nevent: draining\n");

    const body = Buffer.concat(rec.chunks);
    // The whole body is one zlib stream (header, blocks, final block, Adler-32 checked by inflateSync).
    expect(zlib.inflateSync(body).equals(all)).toBe(true);
    // Between the 2-byte header and the 4-byte trailer, a raw deflate stream.
    expect(zlib.inflateRawSync(body.subarray(2, -4)).equals(all)).toBe(true);
    const web = new Response(new Blob([body]).stream().pipeThrough(new DecompressionStream("deflate")));
    expect(Buffer.from(await web.arrayBuffer()).equals(all)).toBe(true);
  });

  test("a frame is compressed once for every subscriber, and subscribers that joined at different frames each decode their own stream", async () => {
    let compressions = 0;
    const deflater = createFrameDeflater({
      deflateRaw: (f) => {
        compressions++;
        return zlib.deflateRawSync(f, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
      },
    });
    const frames = Array.from({ length: 6 }, (_, i) => panelFrame(i));
    const early = Array.from({ length: 50 }, () => recordingSink());
    const late = Array.from({ length: 50 }, () => recordingSink());
    const earlySinks = early.map((r) => deflateSink(r.sink, deflater));
    const lateSinks: Sink[] = [];
    for (const [i, f] of frames.entries()) {
      if (i === 3) lateSinks.push(...late.map((r) => deflateSink(r.sink, deflater)));
      for (const s of [...earlySinks, ...lateSinks]) s.write(f);
    }
    expect(compressions).toBe(frames.length);
    // After a subscriber's first write (which carries the zlib header), it is handed the very same bytes as the others.
    expect(early[7].chunks[4]).toBe(early[0].chunks[4]);
    expect(late[9].chunks[2]).toBe(early[3].chunks[5]);
    // Subscribers whose first frame is the same (a view's snapshot) share its header-led bytes as well.
    expect(late[9].chunks[0]).toBe(late[0].chunks[0]);
    expect(early[9].chunks[0]).toBe(early[0].chunks[0]);

    const expiry = [sessionExpiredFrame(1_700_000_100_000), sessionExpiredFrame(1_700_000_100_000, "revoked")];
    await earlySinks[0].end(expiry[0]);
    await lateSinks[0].end(expiry[1]);
    expect(zlib.inflateSync(Buffer.concat(early[0].chunks)).equals(Buffer.concat([...frames, expiry[0]]))).toBe(true);
    expect(zlib.inflateSync(Buffer.concat(late[0].chunks)).equals(Buffer.concat([...frames.slice(3), expiry[1]]))).toBe(true);
  });

  test("a stream ended before any frame, or without a last frame, is a complete empty or whole zlib stream", async () => {
    const empty = recordingSink();
    await deflateSink(empty.sink).end();
    expect(zlib.inflateSync(Buffer.concat(empty.chunks)).length).toBe(0);
    const some = recordingSink();
    const s = deflateSink(some.sink);
    s.write(panelFrame(1));
    await s.end();
    expect(zlib.inflateSync(Buffer.concat(some.chunks)).equals(panelFrame(1))).toBe(true);
  });

  test("a refused write (a subscriber over its bound) leaves the checksum of what was sent intact", async () => {
    const rec = recordingSink();
    const s = deflateSink(rec.sink);
    s.write(panelFrame(1));
    rec.refuse = true;
    expect(s.write(panelFrame(2))).toBe(false);
    rec.refuse = false;
    await s.end(drainingFrame(2000));
    expect(zlib.inflateSync(Buffer.concat(rec.chunks)).equals(Buffer.concat([panelFrame(1), drainingFrame(2000)]))).toBe(true);
  });

  /** A snapshot event of about 1.1 MB: 40 panels of 1,200 rows, as the hub encodes it. */
  const bigSnapshot = () =>
    encodeEvent("snapshot", {
      dashboard: { id: "d" },
      panels: Array.from({ length: 40 }, (_, p) => ({
        panelId: `p${p}`,
        at: 1_700_000_000_000,
        result: {
          columns: [
            { name: "time", type: "timestamptz" },
            { name: "cpu", type: "float8" },
          ],
          rows: Array.from({ length: 1200 }, (_, r) => [1_700_000_000_000 + r * 60_000, ((p * 7919 + r * 104_729) % 100_003) / 1000]),
          truncated: false,
          elapsedMs: 3,
        },
      })),
    } as never);

  test("a long first frame not compressed yet: its first piece is written before the rest is compressed, and every write decodes as it arrives", async () => {
    const log: string[] = [];
    const deflater = createFrameDeflater({
      deflateRaw: (f) => {
        log.push(`deflate ${f.byteLength}`);
        return zlib.deflateRawSync(f, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
      },
    });
    const rec = recordingSink();
    const write = rec.sink.write;
    rec.sink.write = (b) => {
      log.push("write");
      return write(b);
    };
    const snapshot = bigSnapshot();
    expect(snapshot.byteLength).toBeGreaterThan(2 * FIRST_PIECE_BYTES);
    const sink = deflateSink(rec.sink, deflater);
    expect(sink.write(snapshot)).toBe(true);
    expect(log).toEqual([`deflate ${FIRST_PIECE_BYTES}`, "write", `deflate ${snapshot.byteLength - FIRST_PIECE_BYTES}`, "write"]);
    // The first write alone (header included) decodes to the frame's first piece: nothing of it waits for the rest.
    const inflate = zlib.createInflate();
    const decoded: Buffer[] = [];
    inflate.on("data", (c: Buffer) => decoded.push(c));
    for (const [i, upTo] of [FIRST_PIECE_BYTES, snapshot.byteLength].entries()) {
      await new Promise<void>((r) => inflate.write(rec.chunks[i]!, () => r()));
      await new Promise<void>((r) => inflate.flush(zlib.constants.Z_SYNC_FLUSH, () => r()));
      expect(Buffer.concat(decoded).equals(snapshot.subarray(0, upTo))).toBe(true);
    }
    // Later frames, long or not, go out whole; the stream ends as one zlib stream with its checksum.
    const later = bigSnapshot();
    expect(sink.write(panelFrame(1))).toBe(true);
    expect(sink.write(later)).toBe(true);
    expect(rec.chunks).toHaveLength(4);
    await sink.end(drainingFrame(2000));
    expect(zlib.inflateSync(Buffer.concat(rec.chunks)).equals(Buffer.concat([snapshot, panelFrame(1), later, drainingFrame(2000)]))).toBe(
      true,
    );

    // The next viewer of the same snapshot gets the cached bytes, the two pieces joined, in one write.
    log.length = 0;
    const next = recordingSink();
    const nextSink = deflateSink(next.sink, deflater);
    expect(nextSink.write(snapshot)).toBe(true);
    expect(log).toEqual([]);
    expect(next.chunks).toHaveLength(1);
    expect(next.chunks[0]!.subarray(2).equals(Buffer.concat(rec.chunks.slice(0, 2)).subarray(2))).toBe(true);
    await nextSink.end();
    expect(zlib.inflateSync(Buffer.concat(next.chunks)).equals(snapshot)).toBe(true);
  });

  test("a long first frame refused at its first piece sends nothing; refused after it, the write fails (a drop follows)", async () => {
    const none = recordingSink();
    none.refuse = true;
    const s = deflateSink(none.sink, createFrameDeflater());
    expect(s.write(bigSnapshot())).toBe(false);
    expect(none.chunks).toHaveLength(0);
    none.refuse = false;
    await s.end();
    expect(zlib.inflateSync(Buffer.concat(none.chunks)).length).toBe(0);

    const cut = recordingSink();
    const write = cut.sink.write;
    let writes = 0;
    cut.sink.write = (b) => (++writes === 2 ? false : write(b));
    expect(deflateSink(cut.sink, createFrameDeflater()).write(bigSnapshot())).toBe(false);
    expect(cut.chunks).toHaveLength(1);
  });

  test("Adler-32 is zlib's, and combining two checksums gives the checksum of the concatenation", () => {
    const zlibAdler = (b: Uint8Array) => zlib.deflateSync(b).readUInt32BE(zlib.deflateSync(b).length - 4);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 20_000 }), fc.uint8Array({ maxLength: 20_000 }), (a, b) => {
        expect(adler32(a)).toBe(zlibAdler(a));
        expect(adler32Combine(adler32(a), adler32(b), b.length)).toBe(adler32(Buffer.concat([a, b])));
      }),
      { numRuns: 200 },
    );
    // Long runs of 0xff push the running sums furthest before each reduction.
    const ones = Buffer.alloc(200_000, 0xff);
    expect(adler32(ones)).toBe(zlibAdler(ones));
  });
});

describe("Accept-Encoding", () => {
  test.each([
    ["gzip, deflate, br, zstd", true],
    ["deflate", true],
    ["DEFLATE", true],
    ["Deflate;Q=0.5", true],
    ["deflate;q=1", true],
    ["deflate;q=1.000", true],
    ["deflate;q=0.001", true],
    ["deflate ; q=0.5", true],
    ["gzip;q=1.0, deflate;q=0.5, *;q=0", true],
    ["*", true],
    ["br, *;q=0.1", true],
    // Refusals and absences.
    [undefined, false],
    ["", false],
    ["   ", false],
    ["identity", false],
    ["gzip, br", false],
    ["deflate;q=0", false],
    ["deflate;q=0.0", false],
    ["deflate;q=0.000", false],
    ["DEFLATE;Q=0", false],
    ["*;q=0", false],
    ["*, deflate;q=0", false],
    ["deflate;q=0, *", false],
    ["deflate, deflate;q=0", false],
    // Outside the grammar (not a qvalue, a repeated or empty weight, another parameter, a quoted string): absent.
    ["deflate;q=2", false],
    ["deflate;q=1.5", false],
    ["deflate;q=-1", false],
    ["deflate;q=abc", false],
    ["deflate;q=NaN", false],
    ["deflate;q=Infinity", false],
    ["deflate;q=0.0001", false],
    ["deflate;q=1e0", false],
    ["deflate;q=0x1", false],
    ["deflate;q= ", false],
    // Other codings whose names contain it.
    ["x-deflate", false],
    ["deflate-raw", false],
    ["deflatex", false],
    ["de flate", false],
    ['"deflate"', false],
    // Garbage.
    [";;;,,,", false],
    [",deflate;q=0,", false],
    ["\t,\t", false],
    ["deflate;q=0;q=1", false],
    ["deflate;level=9", false],
    ['deflate;foo="a,b";q=0.7', false],
    ["deflate;q=abc, *", true],
    ["deflate;q=abc, *;q=0", false],
    [`${"gzip;q=0.5,".repeat(2000)}deflate`, true],
    [`${"x,".repeat(5000)}`, false],
  ])("%j → %s", (header, expected) => {
    expect(acceptsDeflate(header)).toBe(expected);
  });

  test("the answer is the lowest listed weight of deflate, else of *, for any list of codings and weights", () => {
    const coding = fc.constantFrom("deflate", "DEFLATE", "gzip", "br", "zstd", "identity", "*", "x-deflate", "deflate-raw");
    const weight = fc.option(fc.constantFrom("0", "0.0", "0.5", "1", "1.000", "0.001", "2", "abc", "-0"), { nil: undefined });
    const valid = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
    fc.assert(
      fc.property(fc.array(fc.tuple(coding, weight, fc.constantFrom("", " ", "\t")), { maxLength: 8 }), (entries) => {
        const header = entries.map(([c, q, ws]) => `${ws}${c}${q === undefined ? "" : `${ws};${ws}q=${q}`}`).join(",");
        const weightOf = (name: string) => {
          // An element whose weight is not a qvalue is outside the grammar and counts as absent.
          const qs = entries
            .filter(([c, q]) => c.toLowerCase() === name && (q === undefined || valid.test(q)))
            .map(([, q]) => (q === undefined ? 1 : Number(q)));
          return qs.length ? Math.min(...qs) : undefined;
        };
        expect(acceptsDeflate(header)).toBe((weightOf("deflate") ?? weightOf("*") ?? 0) > 0);
      }),
      { numRuns: 500 },
    );
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (header) => typeof acceptsDeflate(header) === "boolean"));
  });

  test("STREAM_COMPRESSION=off never compresses; deflate compresses what the request accepts", () => {
    expect(streamEncoding("off", "deflate")).toBeNull();
    expect(streamEncoding("deflate", "gzip, deflate")).toBe("deflate");
    expect(streamEncoding("deflate", "gzip")).toBeNull();
    expect(streamEncoding("deflate", undefined)).toBeNull();
  });
});
