const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Resolves a time expression (now, now-<n><s|m|h|d|w>, ISO-8601) to epoch ms; null when invalid. */
export function resolveTime(expr: string, now: number): number | null {
  if (expr === "now") return now;
  const m = /^now-(\d+)([smhdw])$/.exec(expr);
  if (m) return now - Number(m[1]) * UNIT_MS[m[2]];
  const t = Date.parse(expr);
  return Number.isNaN(t) ? null : t;
}

/** A dashboard's range at `now`, or null when either end is invalid or the range is empty. */
export function resolveRange(time: { from: string; to: string }, now: number): [number, number] | null {
  const from = resolveTime(time.from, now);
  const to = resolveTime(time.to, now);
  return from !== null && to !== null && to > from ? [from, to] : null;
}
