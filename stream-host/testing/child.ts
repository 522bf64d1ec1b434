import { type ChildProcess, spawn } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";
import zlib from "node:zlib";
import { createSseParser, type SseFrame } from "./sse-parse.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** A stream host running as a real child process (`stream-host/main.ts` under tsx). */
export interface HostProcess {
  child: ChildProcess;
  port: number;
  /** Every JSON log line the child wrote to stderr so far. */
  logs: Record<string, unknown>[];
  /** Resolves with the exit code (or 128 + signal number when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first log line matching `pred`. */
  waitForLog(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * Starts `stream-host/main.ts` (or `entry`) with `env` and waits until it listens. A `.ts` entry runs under tsx; a
 * built bundle (`.mjs`, e.g. dist/stream-host/main.mjs) runs on plain node, as the container runs it. `nodeFlags` go to
 * node before the entry (the image's CMD gives some: imageNodeFlags).
 */
export async function spawnStreamHost(
  env: Record<string, string>,
  entry = "stream-host/main.ts",
  nodeFlags: readonly string[] = [],
): Promise<HostProcess> {
  const child = spawn(process.execPath, [...nodeFlags, ...(entry.endsWith(".mjs") ? [entry] : ["--import", "tsx", entry])], {
    cwd: root,
    // Tests stand many viewers on one session cookie; the per-session cap has its own test.
    env: { PATH: process.env.PATH ?? "", STREAMS_PER_SESSION_MAX: "100000", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: Record<string, unknown>[] = [];
  const waiters: { pred: (l: Record<string, unknown>) => boolean; resolve(l: Record<string, unknown>): void }[] = [];
  let pending = "";
  let raw = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    raw += chunk;
    pending += chunk;
    let i = pending.indexOf("\n");
    while (i !== -1) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      i = pending.indexOf("\n");
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue;
      }
      logs.push(parsed);
      for (const w of [...waiters]) {
        if (w.pred(parsed)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    }
  });
  child.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );

  function waitForLog(pred: (l: Record<string, unknown>) => boolean, timeoutMs = 20_000) {
    const found = logs.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`log line not seen in time; stderr:\n${raw.slice(-4000)}`)), timeoutMs);
      const w = {
        pred,
        resolve: (l: Record<string, unknown>) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      waiters.push(w);
      void exited.then(() => {
        if (waiters.includes(w)) {
          clearTimeout(timer);
          reject(new Error(`child exited before the log line; stderr:\n${raw.slice(-4000)}`));
        }
      });
    });
  }

  const listening = await waitForLog((l) => l.msg === "stream host listening", 30_000);
  return {
    child,
    port: Number(listening.port),
    logs,
    exited,
    waitForLog,
    kill: (signal) => child.kill(signal),
  };
}

/**
 * One SSE connection over a real socket, recording every frame with its arrival time. A stream sent with
 * `Content-Encoding: deflate` (asked for with an Accept-Encoding header) is decoded as it arrives.
 */
export interface StreamClient {
  status: number;
  headers: http.IncomingHttpHeaders;
  frames: { frame: SseFrame; at: number }[];
  /** Resolves with the next frame matching `pred` (already received ones included). */
  waitFor(pred: (f: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>;
  /** Resolves when the server closed the stream. */
  closed: Promise<void>;
  close(): void;
  /** Stops reading from the socket (the kernel buffers fill, the server sees backpressure). */
  pause(): void;
  resume(): void;
}

export function openStream(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  opts: { agent?: http.Agent; now?: () => number } = {},
): Promise<StreamClient> {
  const now = opts.now ?? (() => performance.now());
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path, headers, agent: opts.agent ?? false }, (res) => {
      const parser = createSseParser();
      const frames: { frame: SseFrame; at: number }[] = [];
      const waiters: { pred: (f: SseFrame) => boolean; resolve(f: SseFrame): void }[] = [];
      let closedResolve!: () => void;
      const closed = new Promise<void>((r) => {
        closedResolve = r;
      });
      const inflate = res.headers["content-encoding"] === "deflate" ? zlib.createInflate() : null;
      const body = inflate ? res.pipe(inflate) : res;
      body.setEncoding("utf8");
      body.on("data", (chunk: string) => {
        const at = now();
        for (const frame of parser.push(chunk)) {
          frames.push({ frame, at });
          for (const w of [...waiters]) {
            if (w.pred(frame)) {
              waiters.splice(waiters.indexOf(w), 1);
              w.resolve(frame);
            }
          }
        }
      });
      body.on("end", () => closedResolve());
      // Decoding, what arrived before the close is still in the inflater: closed once it has come out.
      res.on("close", () => (inflate ? inflate.flush(() => closedResolve()) : closedResolve()));
      res.on("error", () => closedResolve());
      body.on("error", () => closedResolve());
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        frames,
        closed,
        waitFor(pred, timeoutMs = 20_000) {
          const hit = frames.find((f) => pred(f.frame));
          if (hit) return Promise.resolve(hit.frame);
          return new Promise((res2, rej) => {
            const timer = setTimeout(() => rej(new Error("frame not received in time")), timeoutMs);
            waiters.push({
              pred,
              resolve: (f) => {
                clearTimeout(timer);
                res2(f);
              },
            });
          });
        },
        close: () => req.destroy(),
        pause: () => res.pause(),
        resume: () => res.resume(),
      });
    });
    req.on("error", reject);
  });
}

/** A plain GET over a fresh connection: status, headers and body text. */
export function get(port: number, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path, headers, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
  });
}
