/**
 * A concurrency limit per key (per source): at most `limit` tasks of one key run at once, the
 * rest wait in arrival order. Shared by every poller of the process, so one busy source cannot
 * take all of its pool's connections and a slow source never holds up another.
 */
export function createKeyedLimiter(limit: number) {
  if (!Number.isInteger(limit) || limit < 1) throw new Error("limit must be a positive integer");
  const lanes = new Map<string, { running: number; queue: (() => void)[] }>();

  function laneOf(key: string) {
    let lane = lanes.get(key);
    if (!lane) {
      lane = { running: 0, queue: [] };
      lanes.set(key, lane);
    }
    return lane;
  }

  /** A slot of `key` if one is free now (the caller must call the release exactly once), else null. */
  function tryAcquire(key: string): (() => void) | null {
    const l = laneOf(key);
    if (l.running >= limit) return null;
    l.running++;
    return releaser(key, l);
  }

  /**
   * Resolves when a slot of `key` is free; the caller must call the returned release exactly once.
   * With `signal`, a wait still queued when it aborts leaves the queue and rejects with SlotWaitAborted.
   */
  async function acquire(key: string, signal?: AbortSignal): Promise<() => void> {
    const l = laneOf(key);
    if (l.running < limit) {
      l.running++;
      return releaser(key, l);
    }
    if (signal?.aborted) throw new SlotWaitAborted();
    await new Promise<void>((resolve, reject) => {
      const granted = () => {
        signal?.removeEventListener("abort", aborted);
        resolve();
      };
      const aborted = () => {
        const i = l.queue.indexOf(granted);
        if (i !== -1) l.queue.splice(i, 1);
        if (l.running === 0 && l.queue.length === 0) lanes.delete(key);
        reject(new SlotWaitAborted());
      };
      l.queue.push(granted);
      signal?.addEventListener("abort", aborted, { once: true });
    });
    return releaser(key, l);
  }

  function releaser(key: string, l: { running: number; queue: (() => void)[] }): () => void {
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
    tryAcquire,
    /** Tasks of `key` running now. */
    running: (key: string) => lanes.get(key)?.running ?? 0,
    /** Tasks of `key` waiting for a slot. */
    waiting: (key: string) => lanes.get(key)?.queue.length ?? 0,
  };
}

export type KeyedLimiter = ReturnType<typeof createKeyedLimiter>;

/** A wait for a slot that was given up (its signal aborted) before a slot came free. */
export class SlotWaitAborted extends Error {
  constructor() {
    super("gave up waiting for a slot");
    this.name = "SlotWaitAborted";
  }
}
