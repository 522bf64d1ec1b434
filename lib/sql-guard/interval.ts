const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Readable steps, smallest first; beyond the last one whole days are used. */
const LADDER: readonly [number, string][] = [
  [SECOND, "1 second"],
  [2 * SECOND, "2 seconds"],
  [5 * SECOND, "5 seconds"],
  [10 * SECOND, "10 seconds"],
  [15 * SECOND, "15 seconds"],
  [30 * SECOND, "30 seconds"],
  [MINUTE, "1 minute"],
  [2 * MINUTE, "2 minutes"],
  [5 * MINUTE, "5 minutes"],
  [10 * MINUTE, "10 minutes"],
  [15 * MINUTE, "15 minutes"],
  [30 * MINUTE, "30 minutes"],
  [HOUR, "1 hour"],
  [2 * HOUR, "2 hours"],
  [3 * HOUR, "3 hours"],
  [6 * HOUR, "6 hours"],
  [12 * HOUR, "12 hours"],
  [DAY, "1 day"],
  [2 * DAY, "2 days"],
  [7 * DAY, "7 days"],
  [14 * DAY, "14 days"],
  [30 * DAY, "30 days"],
];

/** Epoch-aligned buckets (date_bin with origin 'epoch') that [from, to] touches at this step. */
export function bucketCount(fromMs: number, toMs: number, stepMs: number): number {
  return Math.floor(toMs / stepMs) - Math.floor(fromMs / stepMs) + 1;
}

/**
 * The `$__interval` value: the smallest readable step (e.g. "1 minute", "5 minutes", "1 hour") for which
 * `date_bin(step, col, timestamptz 'epoch')` gives at most `maxPoints` buckets over [fromMs, toMs].
 * Bad input (non-finite times, a reversed range, maxPoints < 1 or NaN) degrades to a valid step, never throws.
 */
export function intervalFor(fromMs: number, toMs: number, maxPoints: number): string {
  const from = Number.isFinite(fromMs) ? fromMs : 0;
  const to = Number.isFinite(toMs) && toMs > from ? toMs : from;
  const points = maxPoints >= 1 ? Math.floor(maxPoints) : 1; // NaN → 1, Infinity → the smallest step
  for (const [ms, text] of LADDER) if (bucketCount(from, to, ms) <= points) return text;
  let days = Math.max(31, Math.ceil((to - from) / DAY / points));
  while (bucketCount(from, to, days * DAY) > points) days = days < 10_000 ? days + 1 : Math.ceil(days * 1.1);
  return `${days} days`;
}
