import type { Timers } from "../lib/lifecycle/timers.ts";

/** setTimeout's longest delay; a later instant is re-armed when the timer fires. */
const MAX_TIMER_MS = 2_147_483_647;

/** Items (streams) due at instants (their session's `exp`), all on one timer. */
export interface Expiries<T> {
  /** Schedules `item` for `at` (epoch ms); `onDue` gets it once that instant has passed, unless it was removed. */
  add(item: T, at: number): void;
  /** Unschedules `item` (added for `at`); nothing when it is not scheduled. */
  remove(item: T, at: number): void;
  /** Items scheduled. */
  readonly size: number;
}

/**
 * Every open stream's session expiry on one timer instead of one timer per stream: items are grouped by instant
 * (session tokens expire on whole seconds, so streams of one minute share a few instants), the instants are kept in
 * order, and the single timer is armed for the earliest. A stream costs one set entry; opening or ending one never
 * touches Node's timer lists unless it changes the earliest instant. The timer is cleared when nothing is left.
 */
export function createExpiries<T>(opts: { timers: Timers; now(): number; onDue(item: T, at: number): void }): Expiries<T> {
  const byInstant = new Map<number, Set<T>>();
  /** The instants of `byInstant`, ascending. */
  const order: number[] = [];
  let timer: unknown = null;
  let armedFor = Number.POSITIVE_INFINITY;
  let size = 0;

  /** Index of the first instant in `order` not below `at`. */
  function lowerBound(at: number): number {
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (order[mid] < at) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Arms the one timer for the earliest instant (or clears it when none is left). */
  function arm() {
    const next = order.length > 0 ? order[0] : Number.POSITIVE_INFINITY;
    if (next === armedFor && timer !== null) return;
    if (timer !== null) opts.timers.clearTimeout(timer);
    timer = null;
    armedFor = next;
    if (next === Number.POSITIVE_INFINITY) return;
    timer = opts.timers.setTimeout(fire, Math.max(0, Math.min(next - opts.now(), MAX_TIMER_MS)));
  }

  function fire() {
    timer = null;
    armedFor = Number.POSITIVE_INFINITY;
    const now = opts.now();
    // Every instant that has passed: its items are taken out before any is handed over (onDue may remove others).
    while (order.length > 0 && order[0] <= now) {
      const at = order.shift()!;
      const items = byInstant.get(at)!;
      byInstant.delete(at);
      size -= items.size;
      for (const item of items) opts.onDue(item, at);
    }
    arm();
  }

  return {
    add(item, at) {
      let items = byInstant.get(at);
      if (!items) {
        items = new Set();
        byInstant.set(at, items);
        order.splice(lowerBound(at), 0, at);
      }
      if (items.has(item)) return;
      items.add(item);
      size++;
      if (at < armedFor) arm();
    },
    remove(item, at) {
      const items = byInstant.get(at);
      if (!items?.delete(item)) return;
      size--;
      if (items.size > 0) return;
      byInstant.delete(at);
      order.splice(lowerBound(at), 1);
      if (at === armedFor) arm();
    },
    get size() {
      return size;
    },
  };
}
