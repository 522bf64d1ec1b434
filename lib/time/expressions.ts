import { AppError } from "../http/errors.ts";

/**
 * Time expressions of a dashboard range: `now`, `now-<n><s|m|h|d|w>`, or an ISO-8601 instant (docs/api.md,
 * "Time expressions"). Bounded so that every accepted expression resolves to a date every consumer can
 * format and bind (a Date, PostgreSQL timestamptz, the browser's charts) at any `now` of this era.
 */

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** The longest relative offset: 3660 days (ten years of 366 days), e.g. now-3660d, now-522w, now-87840h. */
export const MAX_RELATIVE_MS = 3660 * UNIT_MS.d;
/** The earliest absolute instant: 1970-01-01T00:00:00Z. */
export const MIN_INSTANT_MS = 0;
/** The latest absolute instant: 9999-12-31T23:59:59.999Z. */
export const MAX_INSTANT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const RELATIVE = /^now-(\d{1,16})([smhdw])$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}/;

/** What a time expression means: `now` minus an offset, or a fixed instant (epoch ms). */
export type TimeExpression = { kind: "relative"; offsetMs: number } | { kind: "absolute"; at: number };

/** Parses a time expression within the bounds; the reason is a sentence naming the rule that failed. */
export function parseTimeExpression(expr: string): { ok: true; value: TimeExpression } | { ok: false; reason: string } {
  if (expr === "now") return { ok: true, value: { kind: "relative", offsetMs: 0 } };
  if (expr.startsWith("now")) {
    const m = RELATIVE.exec(expr);
    if (!m) return { ok: false, reason: "must be now, now-<n><s|m|h|d|w> or an ISO-8601 instant" };
    const offsetMs = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
    if (offsetMs > MAX_RELATIVE_MS) return { ok: false, reason: "must not reach back more than 3660 days (now-3660d)" };
    return { ok: true, value: { kind: "relative", offsetMs } };
  }
  const at = ISO_DATE.test(expr) ? Date.parse(expr) : Number.NaN;
  if (Number.isNaN(at)) return { ok: false, reason: "must be now, now-<n><s|m|h|d|w> or an ISO-8601 instant" };
  if (at < MIN_INSTANT_MS || at > MAX_INSTANT_MS)
    return { ok: false, reason: "must be an instant between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z" };
  return { ok: true, value: { kind: "absolute", at } };
}

/**
 * Thrown by resolveTime. A coded AppError (`validation_failed`, 400), so one that reaches the HTTP edge
 * is a client error, never a 500; the poller turns it into a panel error frame.
 */
export class TimeExpressionError extends AppError {
  constructor(reason: string) {
    super("validation_failed", `Invalid time expression: it ${reason}.`);
    this.name = "TimeExpressionError";
  }
}

/**
 * Resolves a time expression to epoch milliseconds at `now`. Throws TimeExpressionError for an
 * expression outside the bounds (a dashboard stored before they existed), or when `now` minus the
 * offset would fall before 1970.
 */
export function resolveTime(expr: string, now: number): number {
  const parsed = parseTimeExpression(expr);
  if (!parsed.ok) throw new TimeExpressionError(parsed.reason);
  if (parsed.value.kind === "absolute") return parsed.value.at;
  const at = now - parsed.value.offsetMs;
  if (at < MIN_INSTANT_MS) throw new TimeExpressionError("reaches back before 1970-01-01T00:00:00Z");
  return at;
}
