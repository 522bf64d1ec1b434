// Who hears that a statement outlived its timeout and is being held. A source that does not answer (a frozen
// host) or runs a statement that ignores the cancel keeps the statement's backend busy after the runner's
// watchdog closed the connection; the runner then holds the statement, and the caller's query slot, until the
// source confirms the backend ended (docs/query-runner.md). Meanwhile the caller can already say why its
// panel has nothing new. The listener is given per request (ExecuteRequest.onHeld) or, for a caller behind
// wrappers that forward fixed arguments (the stream host's incremental ticks), for everything one async call
// runs (`whileHeldTell`).
import { AsyncLocalStorage } from "node:async_hooks";
import type { AppError } from "../http/errors.ts";

/** Told once per held statement, with the coded error that names the cause (`query_timeout`, reason `query_held`). */
export type HeldListener = (notice: AppError) => void;

const listeners = new AsyncLocalStorage<HeldListener>();

/** Runs `fn` with `listener` told of every statement `fn`'s queries hold past their timeout. */
export function whileHeldTell<T>(listener: HeldListener, fn: () => Promise<T>): Promise<T> {
  return listeners.run(listener, fn);
}

/** The listener of the current async call (whileHeldTell), if any. */
export function heldListener(): HeldListener | undefined {
  return listeners.getStore();
}
