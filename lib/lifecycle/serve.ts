import { type ServerType, serve } from "@hono/node-server";
import type { Config } from "../config/parse.ts";
import type { Logger } from "../log/logger.ts";
import type { DrainState } from "./drain-state.ts";
import { exitOnListenFailure } from "./listen-failure.ts";
import { type Drainable, type Shutdown, type SignalSource, createShutdown, installSignalHandlers } from "./shutdown.ts";
import { type Timers, systemTimers } from "./timers.ts";

/** What answers a request: a Hono app's `fetch`. */
type FetchCallback = Parameters<typeof serve>[0]["fetch"];

/**
 * One process's serving half, the same for the handlers, the stream host and the all-in-one `npm start`:
 * what answers requests, where it listens, and how it drains and closes when asked to stop.
 */
export interface ProcessServing {
  /** Starts the one line a failed bind ends in (`handlers: port 8080 is already in use …`). */
  name: string;
  config: Pick<Config, "SHUTDOWN_GRACE_MS" | "FRAMEWORK_MANUAL_SIG_HANDLE" | "isDevelopment" | "LISTEN_HOST">;
  /** The port, and the variable that moves it (named by a failed bind). */
  port: number;
  portVariable: "PORT" | "STREAM_PORT";
  /** Answers every request. */
  fetch: FetchCallback;
  /** The process-wide drain flag (readiness answers 503 `draining` once it is set). */
  drain: DrainState;
  /** Drain steps 2-4 of this process: pollers and streams (none in the handlers), then in-flight work. */
  host: Drainable;
  /** The end of step 4, once the host settled: the config store's connections (see closeConfigStore). */
  closeStores(): Promise<void>;
  log: Logger;
  /** Ends the process: process.exit, or one that first stops what the process started. */
  exit(code: number): void;
  /** Once the listener is bound: the port, and whether a signal drains or exits at once. */
  onListening(info: { port: number; signals: "drain" | "immediate" }): void;
  /** Test seams; production defaults: Node's timers and `process`. */
  timers?: Timers;
  proc?: SignalSource;
}

/**
 * Serves a process until it is asked to stop: the shutdown of the instance lifecycle (lib/lifecycle/shutdown.ts:
 * SIGTERM sets the drain flag, runs the drain steps and exits 0 within SHUTDOWN_GRACE_MS, when
 * FRAMEWORK_MANUAL_SIG_HANDLE=true), its signal handlers, and the HTTP listener on LISTEN_HOST, which stays open
 * while draining. A listener that cannot bind ends the process in one line on stderr, through `exit(1)`.
 */
export function serveProcess(p: ProcessServing): { server: ServerType; shutdown: Shutdown; signals: "drain" | "immediate" } {
  const shutdown = createShutdown({
    drain: p.drain,
    host: p.host,
    closeStores: p.closeStores,
    graceMs: p.config.SHUTDOWN_GRACE_MS,
    timers: p.timers ?? systemTimers,
    log: p.log,
    exit: p.exit,
  });
  const signals = installSignalHandlers({ proc: p.proc ?? process, config: p.config, shutdown, exit: p.exit });
  const server = serve({ fetch: p.fetch, port: p.port, hostname: p.config.LISTEN_HOST }, (info) =>
    p.onListening({ port: info.port, signals }),
  );
  exitOnListenFailure(server, { prefix: p.name, port: p.port, host: p.config.LISTEN_HOST, portVariable: p.portVariable }, (line) => {
    process.stderr.write(`${line}\n`);
    p.exit(1);
  });
  return { server, shutdown, signals };
}

/**
 * The end of drain step 4 in every process: readiness's own connection first (draining readiness answers
 * without it), then the config-store pool, whose end() resolves only once every checked-out client has been
 * released and closed.
 */
export async function closeConfigStore(stores: { readiness: { close(): Promise<void> }; pool: { end(): Promise<void> } }): Promise<void> {
  await stores.readiness.close();
  await stores.pool.end();
}
