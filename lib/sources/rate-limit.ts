import { AppError } from "../http/errors.ts";

/**
 * A token bucket per key held in this process's memory: each instance counts on its own, so N instances admit up
 * to N times the rate. Used for source creates and connection tests, which are cheap to refuse and rare.
 */
export interface RateLimiter {
  /** Takes one token for `key` or throws AppError `rate_limited` (429) with Retry-After to the next token. */
  take(key: string): void;
}

export interface RateLimiterOptions {
  /** Sustained rate and burst size; 0 disables. */
  perMinute: number;
  now?: () => number;
  /** Buckets kept at most; past it the fullest are dropped (a dropped bucket is a full one). */
  maxKeys?: number;
  /** Names what is limited in the message ("source creates and connection tests"). */
  what: string;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Builds a limiter. */
export function createRateLimiter(opts: RateLimiterOptions): RateLimiter {
  const now = opts.now ?? Date.now;
  const maxKeys = opts.maxKeys ?? 10_000;
  const rate = opts.perMinute;
  const buckets = new Map<string, Bucket>();
  const refill = (b: Bucket, at: number) => Math.min(rate, b.tokens + (Math.max(0, at - b.at) * rate) / 60_000);

  function prune(at: number): void {
    for (const [key, b] of buckets) if (refill(b, at) >= rate) buckets.delete(key);
    // Still too many keys that each spent tokens: drop the oldest, which refill first.
    for (const key of buckets.keys()) {
      if (buckets.size < maxKeys) break;
      buckets.delete(key);
    }
  }

  return {
    take(key) {
      if (rate <= 0) return;
      const at = now();
      const b = buckets.get(key);
      const tokens = b ? refill(b, at) : rate;
      if (tokens < 1) {
        // Whole milliseconds first: float noise must not turn an exact 1 s into 2.
        const retryAfter = Math.max(1, Math.ceil(Math.round(((1 - tokens) * 60_000) / rate) / 1000));
        throw new AppError(
          "rate_limited",
          `Too many ${opts.what}: the limit is ${rate} per minute per person.`,
          { retryAfterSeconds: retryAfter },
          { "Retry-After": String(retryAfter) },
        );
      }
      if (!b && buckets.size >= maxKeys) prune(at);
      // Delete first so the map stays ordered by last use (the oldest are dropped first).
      buckets.delete(key);
      buckets.set(key, { tokens: tokens - 1, at });
    },
  };
}
