import type { CoalescedSignals } from "../lib/lifecycle/coalesced-signals.ts";
import { SIGNAL_EXIT_CODE, type ShutdownSignal } from "../lib/lifecycle/shutdown.ts";
import { type Timers, systemTimers } from "../lib/lifecycle/timers.ts";

/** Thrown at a checkpoint of the start once a signal arrived: the start unwinds to its one interrupted line. */
export class StartInterrupted extends Error {}

/**
 * `npm start`'s answer to Ctrl-C (or SIGTERM) before it serves, from its first line to its last: one line on stderr
 * and exit 130 (143 for SIGTERM), every time, with everything started so far stopped. The step under way is given
 * `noticeMs` (10 s) to notice (the terminal's SIGINT also stops the embedded PostgreSQL under it, so its connections fail
 * and it throws), then, or at once on a second signal, the start ends without it; stopping what was started is
 * bounded by `stopMs` (10 s) so a stuck stop cannot hold the terminal. Once the start serves, `release` hands the signals
 * to the drain.
 */
export function createStartInterrupt(opts: {
  signals: CoalescedSignals;
  write(line: string): void;
  exit(code: number): void;
  /** What the line says was not yet serving ("the demo", "Pulseboard"); may change as the start learns. */
  what(): string;
  noticeMs?: number;
  stopMs?: number;
  timers?: Timers;
}) {
  const timers = opts.timers ?? systemTimers;
  /** What the start brought up, stopped in this order (newest first) on the way out. */
  const cleanups: (() => Promise<void>)[] = [];
  let interrupted: ShutdownSignal | undefined;
  let ending: Promise<void> | undefined;

  const end = (): Promise<void> => {
    ending ??= (async () => {
      const sig = interrupted ?? "SIGINT";
      const stopAll = (async () => {
        for (const c of cleanups) await c().catch(() => {});
      })();
      await Promise.race([stopAll, new Promise<void>((r) => timers.setTimeout(r, opts.stopMs ?? 10_000))]);
      opts.write(
        `start interrupted (${sig === "SIGINT" ? "Ctrl-C" : sig}) before ${opts.what()} was serving; everything it started is stopped`,
      );
      opts.exit(SIGNAL_EXIT_CODE[sig]);
    })();
    return ending;
  };
  const onSignal = (sig: ShutdownSignal) => {
    if (interrupted) {
      void end();
      return;
    }
    interrupted = sig;
    timers.setTimeout(() => void end(), opts.noticeMs ?? 10_000);
  };
  const onInt = () => onSignal("SIGINT");
  const onTerm = () => onSignal("SIGTERM");
  opts.signals.on("SIGINT", onInt);
  opts.signals.on("SIGTERM", onTerm);

  return {
    cleanups,
    get interrupted() {
      return interrupted;
    },
    /** Throws StartInterrupted once a signal arrived; called between the steps of the start. */
    checkpoint(): void {
      if (interrupted) throw new StartInterrupted();
    },
    /** Stops what was started, says so in one line and exits; the same promise however often it is called. */
    end,
    /** From here the drain owns SIGINT and SIGTERM. */
    release(): void {
      opts.signals.off("SIGINT", onInt);
      opts.signals.off("SIGTERM", onTerm);
    },
  };
}

export type StartInterrupt = ReturnType<typeof createStartInterrupt>;
