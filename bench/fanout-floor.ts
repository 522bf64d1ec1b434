// The fan-out floor: a minimal node:http SSE broadcaster sending the stream host's frames (a snapshot on attach,
// then every panel's `event: panel` frame each tick, one write per subscriber per tick), with nothing else: no
// auth, no config store, no query. bench/fanout.ts starts it as a child process and connects the same clients as
// to the stream host, so the difference is what the product costs on top of writing bytes to sockets.
//
// Environment: FLOOR_PORT, FLOOR_PANELS (panel count), FLOOR_REFRESH_MS, FLOOR_ROWS (rows per panel result: 1 is
// the fan-out scenarios' counted panel; thousands make a full timeseries frame), FLOOR_COMPRESS:
// - `none`: the frames as they are;
// - `gzip`: a gzip stream per connection (Content-Encoding: gzip), flushed after every tick's write: the usual way
//   to compress SSE, one compressor (and its window) per viewer;
// - `shared`: each tick's frames deflated once, with a full flush, and the same bytes written to every viewer
//   (Content-Encoding: deflate, raw): a full flush resets the dictionary, so one compressor's output after it can
//   follow any viewer's own start (its snapshot, deflated for it alone) in one valid stream.
import http from "node:http";
import zlib from "node:zlib";

const PORT = Number(process.env.FLOOR_PORT ?? 0);
const PANELS = Number(process.env.FLOOR_PANELS ?? 4);
const REFRESH_MS = Number(process.env.FLOOR_REFRESH_MS ?? 2000);
const ROWS = Number(process.env.FLOOR_ROWS ?? 1);
const COMPRESS = process.env.FLOOR_COMPRESS ?? "none";
if (!["none", "gzip", "shared"].includes(COMPRESS)) throw new Error(`FLOOR_COMPRESS must be none, gzip or shared, got ${COMPRESS}`);

/** A panel's result like the runner's: one counted value, or a timeseries of ROWS rows over 4 hosts. */
function result(now: number) {
  if (ROWS <= 1) return { columns: [{ name: "n", type: "int4" }], rows: [[1]], truncated: false, elapsedMs: 1 };
  const rows: (number | string)[][] = [];
  for (let i = 0; i < ROWS; i++) {
    const t = now - Math.floor(ROWS / 4 - i / 4) * 60_000;
    rows.push([t - (t % 60_000), `host-${i % 4}`, Math.round(Math.random() * 10_000) / 100]);
  }
  return {
    columns: [
      { name: "time", type: "timestamptz" },
      { name: "host", type: "text" },
      { name: "cpu", type: "float8" },
    ],
    rows,
    truncated: false,
    elapsedMs: 3,
    stepMs: 60_000,
  };
}

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

function tickFrames(now: number): Buffer {
  let text = "";
  for (let p = 1; p <= PANELS; p++) text += frame("panel", { panelId: `p${p}`, at: now, result: result(now) });
  return Buffer.from(text);
}

let latest = tickFrames(Date.now());
const snapshot = () =>
  Buffer.from(
    frame("snapshot", { dashboard: { id: "floor" }, panels: Array.from({ length: PANELS }, (_, i) => ({ panelId: `p${i + 1}` })) }),
  );

interface Viewer {
  res: http.ServerResponse;
  gzip?: zlib.Gzip;
}
const viewers = new Set<Viewer>();
const shared = COMPRESS === "shared" ? zlib.createDeflateRaw() : null;

/** Deflates `buf` on the shared compressor and returns what it wrote up to a full flush. */
function deflateShared(buf: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    const onData = (c: Buffer) => parts.push(c);
    shared!.on("data", onData);
    shared!.write(buf);
    shared!.flush(zlib.constants.Z_FULL_FLUSH, () => {
      shared!.off("data", onData);
      resolve(Buffer.concat(parts));
    });
  });
}

const server = http.createServer((req, res) => {
  // The bench reads the broadcaster's heap between its connection stages (not a viewer; nothing is broadcast to it).
  if (req.url === "/memory") {
    res.end(JSON.stringify(process.memoryUsage()));
    return;
  }
  res.socket?.setNoDelay(true);
  const headers: Record<string, string> = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    "x-accel-buffering": "no",
  };
  if (COMPRESS === "gzip") headers["content-encoding"] = "gzip";
  if (COMPRESS === "shared") headers["content-encoding"] = "deflate";
  res.writeHead(200, headers);
  const viewer: Viewer = { res };
  const start = Buffer.concat([snapshot(), latest]);
  if (COMPRESS === "gzip") {
    viewer.gzip = zlib.createGzip();
    viewer.gzip.pipe(res);
    viewer.gzip.write(start);
    viewer.gzip.flush(zlib.constants.Z_SYNC_FLUSH);
  } else if (COMPRESS === "shared") {
    // This viewer's own start, on its own compressor, ending on a full flush: the shared bytes follow it.
    res.write(zlib.deflateRawSync(start, { finishFlush: zlib.constants.Z_FULL_FLUSH }));
  } else res.write(start);
  viewers.add(viewer);
  req.on("close", () => {
    viewers.delete(viewer);
    viewer.gzip?.destroy();
  });
});

async function tick() {
  latest = tickFrames(Date.now());
  const bytes = shared ? await deflateShared(latest) : latest;
  for (const v of viewers) {
    if (v.gzip) {
      v.gzip.write(bytes);
      v.gzip.flush(zlib.constants.Z_SYNC_FLUSH);
    } else v.res.write(bytes);
  }
}

server.listen(PORT, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === "object" && address ? address.port : PORT}\n`);
  setInterval(() => void tick(), REFRESH_MS);
});
