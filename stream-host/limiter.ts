/**
 * A concurrency limit per key (per source): at most `limit` tasks of one key run at once, the
 * rest wait in arrival order. Shared by every poller of the process, so one busy source cannot
 * take all of its pool's connections and a slow source never holds up another.
 */
export function createKeyedLimiter(limit: number) {
  if (!Number.isInteger(limit) || limit < 1) throw new Error("limit must be a positive integer");
  const lanes = new Map<string, { running: number; queue: (() => void)[] }>();

  /** Resolves when a slot of `key` is free; the caller must call the returned release exactly once. */
  async function acquire(key: string): Promise<() => void> {
    let lane = lanes.get(key);
    if (!lane) {
      lane = { running: 0, queue: [] };
      lanes.set(key, lane);
    }
    const l = lane;
    if (l.running >= limit) await new Promise<void>((resolve) => l.queue.push(resolve));
    else l.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = l.queue.shift();
      // The slot passes straight to the next waiter, so `running` only drops when nobody waits.
      if (next) next();
      else if (--l.running === 0) lanes.delete(key);
    };
  }

  return {
    acquire,
    /** Tasks of `key` running now. */
    running: (key: string) => lanes.get(key)?.running ?? 0,
    /** Tasks of `key` waiting for a slot. */
    waiting: (key: string) => lanes.get(key)?.queue.length ?? 0,
  };
}

export type KeyedLimiter = ReturnType<typeof createKeyedLimiter>;
