// The `compression` scenario of `npm run bench -- fanout`, on the product: a real stream host child process with
// STREAM_COMPRESSION=off and then =deflate, side by side in one run, its viewers all sending a browser's
// Accept-Encoding. The panels are the `deltas` scenario's (4 time-bucketed panels over 6 h, rows inserted every
// second, refresh 2 s), with incremental ticks on (panel-delta frames, the steady state) and off (a full result
// every tick). Per arm: bytes per viewer per minute on the wire, the stream host's CPU per minute and RSS, and
// delivery latency (receipt minus the frame's `at`) from 20 decoding viewers spread over the connection order;
// the other viewers are raw sockets that only count bytes, so the client process measures as little of itself
// as possible and the same way in both arms.
// FANOUT_COMPRESSION_FRAMES=delta,full picks the frame kinds (default both).
import http from "node:http";
import net from "node:net";
import zlib from "node:zlib";
import {
  type BenchDatabases,
  mb,
  ms,
  onPanelLatency,
  percentile,
  rssOf,
  startBenchHost,
  stopHost,
  until,
} from "../stream-host/testing/bench-env.ts";

const REFRESH_MS = 2000;
const MEASURED_TICKS = 10;
const PANELS = 4;
/** What Chromium sends. */
const ACCEPT_ENCODING = "gzip, deflate, br, zstd";

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** What bench/fanout.ts lends this scenario (its series set-up and CPU reading), so neither file imports the other's internals. */
export interface CompressionDeps {
  db: BenchDatabases;
  viewers: number;
  prepareSeries(
    db: BenchDatabases,
  ): Promise<{ prepare: NonNullable<Parameters<typeof startBenchHost>[1]["prepare"]>; stop(): Promise<void> }>;
  cpuSecondsOf(pid: number): number;
}

interface Counter {
  status: number;
  bytes: number;
  closed: boolean;
  destroy(): void;
}

/** A raw socket that asks for the stream as a browser does and counts the bytes after the response head. */
function counter(port: number, path: string, cookie: string): Promise<Counter> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const c: Counter = { status: 0, bytes: 0, closed: false, destroy: () => socket.destroy() };
    let head: Buffer | null = Buffer.alloc(0);
    socket.on("connect", () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: ${cookie}\r\nAccept: text/event-stream\r\nAccept-Encoding: ${ACCEPT_ENCODING}\r\n\r\n`,
      ),
    );
    socket.on("data", (chunk: Buffer) => {
      if (head === null) {
        c.bytes += chunk.length;
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end === -1) return;
      c.status = Number(head.subarray(9, 12).toString());
      c.bytes += head.length - end - 4;
      head = null;
      resolve(c);
    });
    socket.on("close", () => {
      c.closed = true;
      if (head !== null) reject(new Error("connection closed before the response"));
    });
    socket.on("error", (err) => {
      if (head !== null) reject(err);
    });
  });
}

/** Opens `paths.length` counters, 250 connection attempts at a time; 503 and 429 retry after a second, as the web client does. */
async function counters(port: number, paths: string[], cookie: string): Promise<Counter[]> {
  const out: Counter[] = [];
  let next = 0;
  async function worker() {
    while (next < paths.length) {
      const path = paths[next++];
      let c = await counter(port, path, cookie);
      for (let attempt = 0; attempt < 10 && (c.status === 503 || c.status === 429); attempt++) {
        c.destroy();
        await new Promise((r) => setTimeout(r, 1000));
        c = await counter(port, path, cookie);
      }
      if (c.status !== 200) throw new Error(`a viewer was refused with ${c.status}`);
      out.push(c);
    }
  }
  await Promise.all(Array.from({ length: 250 }, worker));
  return out;
}

interface Sampled {
  encoding: string;
  latencies: number[];
  frames: number;
  errors: number;
  destroy(): void;
}

/** A viewer that decodes the stream as a browser does (inflate when deflated) and records each panel frame's latency. */
function sampled(port: number, path: string, cookie: string): Promise<Sampled> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: "127.0.0.1", port, path, agent: false, headers: { cookie, accept: "text/event-stream", "accept-encoding": ACCEPT_ENCODING } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`a sampled viewer was refused with ${res.statusCode}`));
          return;
        }
        const encoding = res.headers["content-encoding"] ?? "identity";
        const body = encoding === "deflate" ? res.pipe(zlib.createInflate()) : res;
        const v: Sampled = { encoding, latencies: [], frames: 0, errors: 0, destroy: () => req.destroy() };
        onPanelLatency(body, (latency) => {
          v.frames++;
          v.latencies.push(latency);
        });
        body.on("error", () => {
          v.errors++;
        });
        resolve(v);
      },
    );
    req.on("error", reject);
  });
}

interface Arm {
  bytesPerViewerMinute: number;
  cpuPerMinute: number;
  rssMax: number;
  latencies: number[];
}

async function arm(
  deps: CompressionDeps,
  label: string,
  env: Record<string, string>,
  series: Awaited<ReturnType<CompressionDeps["prepareSeries"]>>,
): Promise<Arm> {
  const panels = Array.from({ length: PANELS }, (_, i) => ({ id: `p${i + 1}`, view: `counted_v AS p${i + 1}` }));
  const { host, fixture, cookie } = await startBenchHost(deps.db, {
    dashboards: 1,
    panels,
    refreshIntervalMs: REFRESH_MS,
    env,
    prepare: series.prepare,
  });
  try {
    const path = `/api/dashboards/${fixture.dashboardIds[0]}/stream`;
    const subs: Counter[] = [];
    const sample: Sampled[] = [];
    // One decoding viewer before each twentieth of the counters: the host writes in connection order.
    for (let i = 0; i < 20; i++) {
      sample.push(await sampled(host.port, path, cookie));
      const n = Math.floor(((i + 1) * deps.viewers) / 20) - Math.floor((i * deps.viewers) / 20);
      if (n > 0)
        subs.push(
          ...(await counters(
            host.port,
            Array.from({ length: n }, () => path),
            cookie,
          )),
        );
    }
    await until(() => sample.every((v) => v.frames >= PANELS), 120_000, "every sampled viewer's first tick");
    for (const v of sample) v.latencies.length = 0;
    const cpu0 = deps.cpuSecondsOf(host.child.pid!);
    const bytes0 = subs.reduce((n, x) => n + x.bytes, 0);
    const t0 = Date.now();
    let rssMax = 0;
    while (Date.now() < t0 + MEASURED_TICKS * REFRESH_MS) {
      rssMax = Math.max(rssMax, rssOf(host.child.pid!).rss);
      await new Promise((r) => setTimeout(r, 250));
    }
    const windowMs = Date.now() - t0;
    const cpu = deps.cpuSecondsOf(host.child.pid!) - cpu0;
    const bytes = subs.reduce((n, x) => n + x.bytes, 0) - bytes0;
    const latencies = sample.flatMap((v) => v.latencies);
    const dropped = subs.filter((x) => x.closed).length;
    const errors = sample.reduce((n, v) => n + v.errors, 0);
    const encodings = [...new Set(sample.map((v) => v.encoding))].join(", ");
    for (const x of subs) x.destroy();
    for (const v of sample) v.destroy();
    const r: Arm = {
      bytesPerViewerMinute: (bytes / Math.max(1, subs.length)) * (60_000 / windowMs),
      cpuPerMinute: (cpu / windowMs) * 60_000,
      rssMax,
      latencies,
    };
    console.log(
      `${label}: viewers ${subs.length} (+20 decoding, content-encoding ${encodings}), bytes per viewer per minute ${kb(r.bytesPerViewerMinute)}, stream host CPU ${r.cpuPerMinute.toFixed(1)} s per minute, p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))} over ${latencies.length} deliveries, RSS ${mb(rssMax)}, dropped ${dropped}, decode errors ${errors}`,
    );
    return r;
  } finally {
    await stopHost(host);
  }
}

const median = (xs: number[]) => percentile(xs, 50);

/**
 * Runs the product arms and prints one comparison line per frame kind. FANOUT_COMPRESSION_ROUNDS=N (default 1) runs
 * N pairs, alternating which arm goes first (off, deflate, then deflate, off, ...) so that a machine's load drifting
 * over the run does not favour one arm, and compares the medians.
 */
export async function productCompression(deps: CompressionDeps): Promise<void> {
  const kinds = (process.env.FANOUT_COMPRESSION_FRAMES ?? "delta,full").split(",").map((k) => k.trim());
  for (const k of kinds)
    if (k !== "delta" && k !== "full") throw new Error(`FANOUT_COMPRESSION_FRAMES: unknown kind ${k}; choose delta, full`);
  const rounds = Number(process.env.FANOUT_COMPRESSION_ROUNDS ?? 1);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error("FANOUT_COMPRESSION_ROUNDS must be a whole number of rounds (1 or more)");
  const series = await deps.prepareSeries(deps.db);
  try {
    for (const kind of kinds) {
      const every = kind === "delta" ? "720" : "0";
      console.log(
        `-- compression on the stream host, ${deps.viewers.toLocaleString("en-US")} viewers, 4 time-bucketed panels over 6 h, ${kind} frames, STREAM_COMPRESSION off and deflate, ${rounds} round(s)`,
      );
      const arms: Record<"off" | "deflate", Arm[]> = { off: [], deflate: [] };
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? (["off", "deflate"] as const) : (["deflate", "off"] as const);
        for (const mode of order) {
          arms[mode].push(
            await arm(deps, `stream host ${kind} ${mode}`, { INCREMENTAL_FULL_QUERY_EVERY_TICKS: every, STREAM_COMPRESSION: mode }, series),
          );
        }
      }
      const m = (mode: "off" | "deflate", f: (a: Arm) => number) => median(arms[mode].map(f));
      const bytes = (mode: "off" | "deflate") => m(mode, (a) => a.bytesPerViewerMinute);
      const cpu = (mode: "off" | "deflate") => m(mode, (a) => a.cpuPerMinute);
      const rss = (mode: "off" | "deflate") => m(mode, (a) => a.rssMax);
      const p99 = (mode: "off" | "deflate") => m(mode, (a) => percentile(a.latencies, 99));
      console.log(
        `compression on the stream host (${kind} frames${rounds > 1 ? `, medians of ${rounds} rounds` : ""}): bytes per viewer per minute off ${kb(bytes("off"))} deflate ${kb(bytes("deflate"))} (${(bytes("off") / Math.max(1, bytes("deflate"))).toFixed(1)}x less); CPU s per minute off ${cpu("off").toFixed(1)} deflate ${cpu("deflate").toFixed(1)} (${(cpu("deflate") / Math.max(0.01, cpu("off"))).toFixed(2)}x); RSS off ${mb(rss("off"))} deflate ${mb(rss("deflate"))}; p99 off ${ms(p99("off"))} deflate ${ms(p99("deflate"))}`,
      );
    }
  } finally {
    await series.stop();
  }
}
