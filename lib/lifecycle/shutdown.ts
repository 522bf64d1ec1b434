import type { Config } from "../config/parse.ts";
import type { DrainState } from "./drain-state.ts";
import type { Logger } from "../log/logger.ts";
import type { Timers } from "./timers.ts";

/** The two halves of the stream host's part of the drain (createStreamHost returns both). */
export interface Drainable {
  /** Steps 2 and 3, synchronously: pollers stopped, terminal frame to every stream, streams closed. */
  beginDrain(): Promise<void>;
  /** Step 4: in-flight metric queries and config-store work settle, the runner's pools are released. */
  settle(): Promise<void>;
}

export type ShutdownSignal = "SIGTERM" | "SIGINT";

/** 128 + signal number: what a shell reports for a process ended by that signal. */
export const SIGNAL_EXIT_CODE: Record<ShutdownSignal, number> = { SIGTERM: 143, SIGINT: 130 };

/**
 * The instance lifecycle (docs/stream-host.md): serving → draining on the first signal, → exited when the
 * drain finishes or SHUTDOWN_GRACE_MS elapses (exit 0 in both cases), or at once on a second
 * SIGTERM or a SIGINT while draining. The listener is never closed: requests that still arrive are
 * served (readiness answers 503 `draining`, health 200, new streams get the terminal frame).
 */
export function createShutdown(opts: {
  drain: DrainState;
  host: Drainable;
  /** The rest of step 4 after the host settled: ends the config-store pool once every client is back. */
  closeStores(): Promise<void>;
  graceMs: number;
  timers: Timers;
  log: Logger;
  exit(code: number): void;
  /** Monotonic milliseconds, for the log line. */
  monotonic?: () => number;
}) {
  const monotonic = opts.monotonic ?? (() => performance.now());
  let state: "serving" | "draining" | "exited" = "serving";
  let grace: unknown = null;
  let started = 0;
  let done!: Promise<void>;
  /** Set once a signal arrived: from then on the drain's end (or the grace bound) exits. */
  let signalled = false;
  /** How the drain ended, once it has. */
  let drained: "drained" | "drain failed" | null = null;

  function exitOnce(code: number, why: string) {
    if (state === "exited") return;
    state = "exited";
    if (grace !== null) opts.timers.clearTimeout(grace);
    opts.log.info("exiting", { code, why, drainMs: Math.round(monotonic() - started) });
    opts.exit(code);
  }

  /** Steps 1-4, without the grace bound; the exit waits for a signal (see `begin`). */
  function startDrain(fields: Record<string, unknown>) {
    state = "draining";
    started = monotonic();
    // Step 1, synchronously: readiness answers 503 `draining` from this instant.
    opts.drain.start();
    opts.log.info("draining", { ...fields, graceMs: opts.graceMs });
    // Steps 2 and 3 run synchronously inside beginDrain, before anything else can be scheduled.
    let flushed: Promise<void>;
    try {
      flushed = opts.host.beginDrain();
    } catch (err) {
      opts.log.error("drain steps 2-3 failed", { error: err instanceof Error ? err.name : "error" });
      flushed = Promise.resolve();
    }
    done = (async () => {
      try {
        await flushed;
        await opts.host.settle();
        await opts.closeStores();
        drained = "drained";
      } catch (err) {
        opts.log.error("drain failed", { error: err instanceof Error ? err.name : "error" });
        drained = "drain failed";
      }
      if (signalled) exitOnce(0, drained);
    })();
  }

  return {
    /** Handles one shutdown signal. */
    signal(sig: ShutdownSignal): void {
      if (state === "exited") return;
      if (signalled) {
        // The remaining wait is skipped.
        exitOnce(SIGNAL_EXIT_CODE[sig], `second signal ${sig} while draining`);
        return;
      }
      signalled = true;
      if (state === "serving") startDrain({ signal: sig });
      else opts.log.info("signal while draining: finishing the drain", { signal: sig, graceMs: opts.graceMs });
      grace = opts.timers.setTimeout(() => exitOnce(0, "grace elapsed"), opts.graceMs);
      // A drain that began before the signal (the task was being stopped) may already be over.
      if (drained !== null) exitOnce(0, drained);
    },
    /**
     * Starts the drain before any signal, when the orchestrator announced the stop another way (the ECS
     * task metadata says the task is being stopped, while the load balancer still holds its connections):
     * steps 1-4 run at once, and the process exits when the signal arrives, at once if the drain is over
     * by then, else when it ends or SHUTDOWN_GRACE_MS after the signal. The signal is not a second signal.
     */
    begin(trigger: string): void {
      if (state !== "serving") return;
      startDrain({ trigger });
    },
    get state() {
      return state;
    },
    /** Resolves when the drain sequence has run to its end (tests). */
    finished: () => done ?? Promise.resolve(),
  };
}

export type Shutdown = ReturnType<typeof createShutdown>;

/** The subset of `process` the handlers need (tests pass an EventEmitter). */
export interface SignalSource {
  on(signal: ShutdownSignal, listener: () => void): unknown;
}

/**
 * Installs the signal handlers. With FRAMEWORK_MANUAL_SIG_HANDLE=true (and not in development mode)
 * SIGTERM and SIGINT drain. Otherwise a signal ends the process at once with 128 + its number
 * (SIGTERM → 143) and no drain: the code is set explicitly so a parent process sees exit code 143,
 * the same value a shell reports for a process killed by SIGTERM.
 */
export function installSignalHandlers(opts: {
  proc: SignalSource;
  config: Pick<Config, "FRAMEWORK_MANUAL_SIG_HANDLE" | "isDevelopment">;
  shutdown: Pick<Shutdown, "signal">;
  exit(code: number): void;
}): "drain" | "immediate" {
  const manual = opts.config.FRAMEWORK_MANUAL_SIG_HANDLE && !opts.config.isDevelopment;
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    opts.proc.on(sig, manual ? () => opts.shutdown.signal(sig) : () => opts.exit(SIGNAL_EXIT_CODE[sig]));
  }
  return manual ? "drain" : "immediate";
}
