import type { Timers } from "./timers.ts";

interface Entry {
  id: number;
  at: number;
  fn: () => void;
  every?: number;
}

/**
 * Timers driven by the test: nothing fires until `advance` or `runNext` says so. `now` is the
 * manual clock the timers run on (pass it as the host's clock too).
 */
export function createManualTimers(start = 1_700_000_000_000) {
  let now = start;
  let seq = 0;
  const entries = new Map<number, Entry>();

  const timers: Timers = {
    setTimeout(fn, ms) {
      const id = ++seq;
      entries.set(id, { id, at: now + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(h) {
      entries.delete(h as number);
    },
    setInterval(fn, ms) {
      const id = ++seq;
      entries.set(id, { id, at: now + ms, fn, every: ms });
      return id;
    },
    clearInterval(h) {
      entries.delete(h as number);
    },
  };

  function next(): Entry | undefined {
    let best: Entry | undefined;
    for (const e of entries.values()) if (!best || e.at < best.at || (e.at === best.at && e.id < best.id)) best = e;
    return best;
  }

  function fire(e: Entry) {
    now = Math.max(now, e.at);
    if (e.every) e.at = now + e.every;
    else entries.delete(e.id);
    e.fn();
  }

  return {
    timers,
    now: () => now,
    /** Moves the clock forward by `ms`, firing every timer that comes due on the way, in order. */
    advance(ms: number) {
      const until = now + ms;
      for (let e = next(); e && e.at <= until; e = next()) fire(e);
      now = until;
    },
    /** Fires the earliest pending timer (moving the clock to it); false when none is pending. */
    runNext(): boolean {
      const e = next();
      if (!e) return false;
      fire(e);
      return true;
    },
    /** Delays (from now) of the pending one-shot timers. */
    pendingDelays(): number[] {
      return [...entries.values()].filter((e) => !e.every).map((e) => e.at - now);
    },
    get pending() {
      return entries.size;
    },
  };
}

export type ManualTimers = ReturnType<typeof createManualTimers>;
