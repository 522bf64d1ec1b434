import type { ShutdownSignal } from "./shutdown.ts";

/** Where the signals come from: `process`, or an EventEmitter in tests. */
export interface SignalEmitter {
  on(signal: ShutdownSignal, listener: () => void): unknown;
}

/**
 * One Ctrl-C reaches `npm start` twice: the terminal sends SIGINT to the whole process group, and npm, which is in
 * that group, forwards the SIGINT it got to the script it runs. Without this, the copy counts as a second signal
 * (an exit at once, skipping the drain or the start-up's cleanup). A signal that repeats the previous one within
 * `windowMs` is the same keypress and is dropped; a different signal, or the same one later, is passed on.
 */
export function coalescedSignals(opts: { proc: SignalEmitter; windowMs: number; now?: () => number }) {
  const now = opts.now ?? (() => performance.now());
  const listeners = new Map<ShutdownSignal, Set<() => void>>();
  let last: { sig: ShutdownSignal; at: number } | undefined;
  const dispatch = (sig: ShutdownSignal) => {
    const at = now();
    if (last && last.sig === sig && at - last.at < opts.windowMs) return;
    last = { sig, at };
    for (const l of [...(listeners.get(sig) ?? [])]) l();
  };
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    listeners.set(sig, new Set());
    opts.proc.on(sig, () => dispatch(sig));
  }
  return {
    on(sig: ShutdownSignal, listener: () => void) {
      listeners.get(sig)!.add(listener);
      return this;
    },
    off(sig: ShutdownSignal, listener: () => void) {
      listeners.get(sig)!.delete(listener);
      return this;
    },
  };
}

export type CoalescedSignals = ReturnType<typeof coalescedSignals>;
