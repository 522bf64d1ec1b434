import { parseTimeExpression } from "../../lib/time/expressions.ts";

/**
 * Resolves a time expression (now, now-<n><s|m|h|d|w>, ISO-8601) to epoch ms with the server's own parser
 * (lib/time/expressions.ts); null when invalid.
 */
export function resolveTime(expr: string, now: number): number | null {
  const parsed = parseTimeExpression(expr);
  if (!parsed.ok) return null;
  return parsed.value.kind === "absolute" ? parsed.value.at : now - parsed.value.offsetMs;
}

/** A dashboard's range at `now`, or null when either end is invalid or the range is empty. */
export function resolveRange(time: { from: string; to: string }, now: number): [number, number] | null {
  const from = resolveTime(time.from, now);
  const to = resolveTime(time.to, now);
  return from !== null && to !== null && to > from ? [from, to] : null;
}
