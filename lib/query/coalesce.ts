import type { QueryResult } from "./types.ts";

/** Default of how long a shared result is kept for runs that ask for it after it came in. */
export const SHARE_KEEP_MS = 2_000;

interface Shared {
  result: Promise<QueryResult>;
  /** Epoch ms the query settled with a result; undefined while it runs. */
  settledAt?: number;
  /** Callers still waiting whose own signal has not aborted; the query's signal aborts when none is left. */
  waiting: number;
  abort: AbortController;
}

/** Counts of a coalescer (tests and the bench): queries it started, and runs served by one already started. */
export interface CoalesceStats {
  started: number;
  joined: number;
}

/**
 * One query for identical runs: a run whose key (the caller builds it from everything the statement's
 * result depends on: source, guarded statement, bound values, range, tick) matches a query in flight
 * waits for that query, and one that arrives within `keepMs` after it returned gets its result. A failure
 * is shared only by the runs that were waiting for it; the next run queries again. The query is started
 * with a signal that aborts only when every waiting caller's own signal has aborted, so one caller that
 * stops (its viewers left) never cancels the query for the others.
 */
export function createCoalescer(opts: { now?: () => number; keepMs?: number } = {}) {
  const now = opts.now ?? Date.now;
  const keepMs = opts.keepMs ?? SHARE_KEEP_MS;
  const entries = new Map<string, Shared>();
  const stats: CoalesceStats = { started: 0, joined: 0 };
  let lastSweep = 0;

  /** Drops kept results older than keepMs (at most once per keepMs, so a busy tick costs one pass). */
  function sweep(t: number) {
    if (t - lastSweep < keepMs) return;
    lastSweep = t;
    for (const [key, e] of entries) if (e.settledAt !== undefined && t - e.settledAt > keepMs) entries.delete(key);
  }

  function follow(e: Shared, signal: AbortSignal | undefined) {
    if (signal?.aborted) return;
    e.waiting++;
    signal?.addEventListener(
      "abort",
      () => {
        e.waiting--;
        if (e.waiting === 0 && e.settledAt === undefined) e.abort.abort();
      },
      { once: true },
    );
  }

  return {
    /**
     * The result of `start` for `key`, shared with every identical run in flight or kept. Each caller gets
     * its own copy of the result object (its rows are shared and must not be changed).
     */
    share(key: string, signal: AbortSignal | undefined, start: (signal: AbortSignal) => Promise<QueryResult>): Promise<QueryResult> {
      const t = now();
      sweep(t);
      const found = entries.get(key);
      if (found && (found.settledAt === undefined || t - found.settledAt <= keepMs)) {
        stats.joined++;
        if (found.settledAt === undefined) follow(found, signal);
        return found.result.then((r) => ({ ...r }));
      }
      const e: Shared = { result: Promise.resolve() as unknown as Promise<QueryResult>, waiting: 0, abort: new AbortController() };
      if (signal?.aborted) e.abort.abort();
      follow(e, signal);
      stats.started++;
      e.result = start(e.abort.signal).then(
        (r) => {
          e.settledAt = now();
          if (keepMs <= 0 && entries.get(key) === e) entries.delete(key);
          return r;
        },
        (err: unknown) => {
          if (entries.get(key) === e) entries.delete(key);
          throw err;
        },
      );
      entries.set(key, e);
      return e.result.then((r) => ({ ...r }));
    },
    stats,
    /** Queries in flight or kept. */
    get size() {
      return entries.size;
    },
  };
}

export type Coalescer = ReturnType<typeof createCoalescer>;
