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

/** Milliseconds per interval unit, as PostgreSQL spells them (a month counts 30 days, a year 365.25, as interval arithmetic does). */
const UNIT_MS: Record<string, number> = {
  microsecond: 0.001,
  microseconds: 0.001,
  us: 0.001,
  millisecond: 1,
  milliseconds: 1,
  ms: 1,
  second: SECOND,
  seconds: SECOND,
  sec: SECOND,
  secs: SECOND,
  s: SECOND,
  minute: MINUTE,
  minutes: MINUTE,
  min: MINUTE,
  mins: MINUTE,
  m: MINUTE,
  hour: HOUR,
  hours: HOUR,
  hr: HOUR,
  hrs: HOUR,
  h: HOUR,
  day: DAY,
  days: DAY,
  d: DAY,
  week: 7 * DAY,
  weeks: 7 * DAY,
  w: 7 * DAY,
  month: 30 * DAY,
  months: 30 * DAY,
  mon: 30 * DAY,
  mons: 30 * DAY,
  year: 365.25 * DAY,
  years: 365.25 * DAY,
  y: 365.25 * DAY,
};

const CLOCK = /^(\d{1,4}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$/;
const INTERVAL_PART = /\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*/y;

/**
 * The length of an interval literal's text in milliseconds ('1 minute', '5 minutes', '1 hour 30 minutes',
 * '1h', '00:05:00'), or undefined for anything else (a negative or zero interval included): callers refuse
 * what they cannot measure.
 */
export function intervalLiteralMs(text: string): number | undefined {
  const t = text.trim().toLowerCase();
  const clock = CLOCK.exec(t);
  if (clock) {
    const ms = Number(clock[1]) * HOUR + Number(clock[2]) * MINUTE + Number(clock[3] ?? 0) * SECOND;
    return ms > 0 ? ms : undefined;
  }
  // Sticky, so each exec reads from lastIndex; set before every use, so sharing one object is safe.
  const re = INTERVAL_PART;
  let total = 0;
  let i = 0;
  while (i < t.length) {
    re.lastIndex = i;
    const m = re.exec(t);
    if (!m) return undefined;
    const unit = UNIT_MS[m[2]];
    if (unit === undefined) return undefined;
    total += Number(m[1]) * unit;
    i = re.lastIndex;
  }
  return i > 0 && total > 0 && Number.isFinite(total) ? total : undefined;
}

/** Units whose length varies (a month, a year): an interval using one has no fixed width. */
const VARYING_UNITS: ReadonlySet<string> = new Set(["month", "months", "mon", "mons", "year", "years", "y"]);

/**
 * As intervalLiteralMs, for intervals of a fixed length only: undefined when a month or a year is part of it
 * (a bucket of "1 month" has no one width in milliseconds).
 */
export function fixedIntervalMs(text: string): number | undefined {
  const units = text.toLowerCase().match(/[a-z]+/g) ?? [];
  if (units.some((u) => VARYING_UNITS.has(u))) return undefined;
  return intervalLiteralMs(text);
}

/** Units date_trunc takes, by how far a truncation can move a time back. */
export const TRUNCATION_MS: Record<string, number> = {
  microseconds: 0.001,
  milliseconds: 1,
  second: SECOND,
  minute: MINUTE,
  hour: HOUR,
  day: DAY,
  week: 7 * DAY,
  month: 31 * DAY,
  quarter: 92 * DAY,
  year: 366 * DAY,
  decade: 3653 * DAY,
  century: 36525 * DAY,
  millennium: 365250 * DAY,
};
