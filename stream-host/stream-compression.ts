import zlib from "node:zlib";
import type { Sink } from "./sse.ts";

/** STREAM_COMPRESSION: `off` sends frames as they are; `deflate` compresses streams whose request accepts it. */
export type StreamCompression = "off" | "deflate";

/**
 * One element of Accept-Encoding (RFC 9110 section 12.5.3): a coding token, then optionally a weight
 * `;q=` qvalue (0 to 1, at most three decimals), with optional spaces or tabs around the `;`.
 */
const ELEMENT = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)(?:[ \t]*;[ \t]*[qQ]=(0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?))?$/;

/**
 * Whether an Accept-Encoding header accepts `deflate`: the coding's own weight when listed (case-insensitive;
 * listed more than once, the lowest counts), else the weight of `*`; no header, an empty one, or neither listed:
 * no. `q=0` refuses. An element outside the grammar (`deflate;q=2`, `deflate;q=`, `deflate;q=0;q=1`, a quoted
 * or parameterised coding) counts as absent: a stream goes out compressed only when the client clearly takes
 * deflate. The grammar admits no quoted strings, so splitting at commas is exact (hence no general Accept parser).
 */
export function acceptsDeflate(header: string | undefined): boolean {
  if (!header) return false;
  let own: number | undefined;
  let any: number | undefined;
  for (const element of header.split(",")) {
    const m = ELEMENT.exec(element.replace(/^[ \t]+|[ \t]+$/g, ""));
    if (!m) continue;
    const q = m[2] === undefined ? 1 : Number(m[2]);
    const coding = m[1].toLowerCase();
    if (coding === "deflate") own = Math.min(own ?? 1, q);
    else if (coding === "*") any = Math.min(any ?? 1, q);
  }
  return (own ?? any ?? 0) > 0;
}

/** The coding a stream goes out in under `compression`, given its request's Accept-Encoding. */
export function streamEncoding(compression: StreamCompression, acceptEncoding: string | undefined): "deflate" | null {
  return compression === "deflate" && acceptsDeflate(acceptEncoding) ? "deflate" : null;
}

/** One frame's deflate blocks (no BFINAL, ending byte-aligned on a sync flush) and the Adler-32 of its bytes. */
export interface DeflatedFrame {
  bytes: Buffer;
  adler: number;
  /** The zlib header and `bytes`, made once when the frame is some stream's first (a view's snapshot goes to each new viewer). */
  headed?: Buffer;
}

/**
 * A frame longer than this, deflated for a stream's first write (a view's snapshot: megabytes for a large dashboard),
 * is deflated in two pieces, and the first (its start: the dashboard and the first panels' results) is written
 * before the rest is compressed: the viewer's first bytes then wait for 256 KiB of compression (about 5 ms) rather
 * than the whole snapshot's (50 ms for 2.5 MB, during which the socket stayed empty). Two writes and no more: the
 * second is checked against the subscriber's bound with at most the first piece buffered (tens of KB deflated, far
 * under the default 1 MiB), so a snapshot that went out whole still does; more pieces could pass the bound on a slow
 * link and drop a viewer mid-snapshot.
 */
export const FIRST_PIECE_BYTES = 256 * 1024;

/**
 * Compresses frames once each: a frame buffer the hub hands to N subscribers (a tick's panel frames, a view's
 * snapshot, the heartbeat) is deflated on its first write and its bytes are reused for the others, kept as long
 * as the frame buffer itself lives (a WeakMap keyed by it). Each frame is deflated on a fresh compressor ending
 * on a sync flush: no block is final and no back-reference reaches into an earlier frame, so the bytes can
 * follow whatever any one subscriber received before them and still decode. `frame(f, first)` hands a long frame's
 * first piece (FIRST_PIECE_BYTES of it, deflated on its own compressor, ending on a sync flush too) to `first`
 * before it compresses the rest, when it is not cached yet; the cached bytes are the two pieces joined.
 */
export function createFrameDeflater(opts: { deflateRaw?: (frame: Uint8Array) => Buffer } = {}) {
  const deflateRaw = opts.deflateRaw ?? ((frame: Uint8Array) => zlib.deflateRawSync(frame, { finishFlush: zlib.constants.Z_SYNC_FLUSH }));
  const cache = new WeakMap<Uint8Array, DeflatedFrame>();
  // The hub writes one frame to every subscriber in turn: the last one found answers the fan-out loop without a lookup.
  let last: Uint8Array | null = null;
  let lastDeflated: DeflatedFrame | null = null;
  return {
    frame(frame: Uint8Array, first?: (piece: Buffer) => void): DeflatedFrame {
      if (frame === last) return lastDeflated!;
      let d = cache.get(frame);
      if (!d) {
        if (first && frame.byteLength > FIRST_PIECE_BYTES) {
          const head = deflateRaw(frame.subarray(0, FIRST_PIECE_BYTES));
          first(head);
          d = { bytes: Buffer.concat([head, deflateRaw(frame.subarray(FIRST_PIECE_BYTES))]), adler: adler32(frame) };
        } else d = { bytes: deflateRaw(frame), adler: adler32(frame) };
        cache.set(frame, d);
      }
      last = frame;
      lastDeflated = d;
      return d;
    },
  };
}

export type FrameDeflater = ReturnType<typeof createFrameDeflater>;

/** The deflater of the process: one per process, so every view and viewer shares its cache. */
export const processDeflater: FrameDeflater = createFrameDeflater();

/** A zlib stream header (RFC 1950): deflate, 32 KiB window, default level, no preset dictionary. */
const ZLIB_HEADER = Buffer.from([0x78, 0x9c]);
/** A final fixed-Huffman block holding nothing but its end: closes the deflate stream after a sync flush. */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);

/**
 * A sink sending `Content-Encoding: deflate` over `inner`: the zlib format of RFC 9110 (what `deflate` means in
 * HTTP, and what Chromium, Firefox and Safari decode; Chromium and Firefox also take a bare deflate stream).
 * Its first write carries the 2-byte zlib header, every frame goes out as the shared deflate blocks of
 * `deflater` (the same bytes for every subscriber), and its end adds a final block and the Adler-32 of
 * everything this subscriber received, combined from each frame's own checksum (no per-subscriber pass over
 * the bytes). Every write is complete up to a flush point, so the client decodes each frame, the terminal
 * frame and its `retry:` included, as soon as it arrives.
 */
export function deflateSink(inner: Sink, deflater: FrameDeflater = processDeflater): Sink {
  let started = false;
  let adler = 1;
  return {
    get closed() {
      return inner.closed;
    },
    write(frame) {
      if (inner.closed) return false;
      // A stream's first frame not deflated yet (a view's snapshot just built): its first piece goes out before
      // the rest is compressed (FIRST_PIECE_BYTES), the rest follows in one write.
      let sent = -1;
      const d = deflater.frame(
        frame,
        started
          ? undefined
          : (piece) => {
              sent = inner.write(Buffer.concat([ZLIB_HEADER, piece])) ? piece.byteLength : -2;
            },
      );
      if (sent === -2) return false;
      if (sent >= 0) {
        started = true;
        // Refused here, the stream ends with part of the frame: a refused write is followed by a drop.
        if (!inner.write(d.bytes.subarray(sent))) return false;
      } else {
        if (!started) d.headed ??= Buffer.concat([ZLIB_HEADER, d.bytes]);
        // A first write shares its header-led bytes too: no per-viewer copy of a snapshot, and one HTTP chunk of it for all.
        // The checksum counts only what reached the stream: a refused write is followed by a drop, not by more bytes.
        if (!inner.write(started ? d.bytes : d.headed!)) return false;
        started = true;
      }
      adler = adler32Combine(adler, d.adler, frame.byteLength);
      return true;
    },
    end(frame) {
      if (inner.closed) return inner.end();
      const parts: Buffer[] = started ? [] : [ZLIB_HEADER];
      if (frame) {
        const d = deflater.frame(frame);
        parts.push(d.bytes);
        adler = adler32Combine(adler, d.adler, frame.byteLength);
      }
      const trailer = Buffer.alloc(4);
      trailer.writeUInt32BE(adler >>> 0);
      started = true;
      return inner.end(Buffer.concat([...parts, FINAL_BLOCK, trailer]));
    },
    destroy() {
      inner.destroy();
    },
    onClose(listener) {
      inner.onClose(listener);
    },
  };
}

const ADLER_BASE = 65521;
/** Bytes that can be summed before the running sums must be reduced (zlib's NMAX) to stay exact. */
const ADLER_NMAX = 5552;

/** Adler-32 (RFC 1950) of `bytes`. Node's zlib does not expose it; zlib's own algorithm, in a dozen lines. */
export function adler32(bytes: Uint8Array): number {
  let a = 1;
  let b = 0;
  for (let i = 0; i < bytes.length; ) {
    const end = Math.min(i + ADLER_NMAX, bytes.length);
    for (; i < end; i++) {
      a += bytes[i];
      b += a;
    }
    a %= ADLER_BASE;
    b %= ADLER_BASE;
  }
  return ((b << 16) | a) >>> 0;
}

/** The Adler-32 of A followed by B, from A's and B's checksums and B's length (zlib's adler32_combine). */
export function adler32Combine(adlerA: number, adlerB: number, lengthB: number): number {
  const rem = lengthB % ADLER_BASE;
  let sum1 = adlerA & 0xffff;
  let sum2 = (rem * sum1) % ADLER_BASE;
  sum1 += (adlerB & 0xffff) + ADLER_BASE - 1;
  sum2 += ((adlerA >>> 16) & 0xffff) + ((adlerB >>> 16) & 0xffff) + ADLER_BASE - rem;
  if (sum1 >= ADLER_BASE) sum1 -= ADLER_BASE;
  if (sum1 >= ADLER_BASE) sum1 -= ADLER_BASE;
  if (sum2 >= ADLER_BASE * 2) sum2 -= ADLER_BASE * 2;
  if (sum2 >= ADLER_BASE) sum2 -= ADLER_BASE;
  return ((sum2 << 16) | sum1) >>> 0;
}
