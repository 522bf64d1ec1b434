/**
 * What a panel frame says about its own result beyond rows: the bucket step, the bucket still filling, and whether
 * (and how) a limit cut it. Read from the optional fields the stream host adds; a frame without them is a plain result.
 */
import type { QueryResult } from "./result.ts";

export interface FrameMarks {
  /** The bucket step in ms, when the statement is time-bucketed. */
  stepMs: number | null;
  /** The start (epoch ms) of the bucket still filling, drawn distinctly and left out of stats. */
  partialFrom: number | null;
  /** Set when a limit cut the result: a sentence naming the limit, what was kept, and the fix. */
  truncation: string | null;
}

type Loose = Record<string, unknown>;

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The marks of a result (fields absent: no step, no partial bucket, not cut). */
export function frameMarks(result: QueryResult): FrameMarks {
  const r = result as QueryResult & Loose;
  const stepMs = num(r.stepMs) ?? num(r.step) ?? num((r.bucket as Loose | undefined)?.stepMs);
  const partial = r.partial as Loose | number | boolean | undefined;
  let partialFrom = num(r.partialFrom) ?? (typeof partial === "number" ? partial : num((partial as Loose | undefined)?.from));
  if (partialFrom === null && partial === true && stepMs !== null) partialFrom = lastTime(result);
  return { stepMs, partialFrom, truncation: truncationText(r) };
}

function lastTime(result: QueryResult): number | null {
  let last: number | null = null;
  for (const row of result.rows)
    for (const cell of row) if (typeof cell === "number" && cell > 946_684_800_000 && (last === null || cell > last)) last = cell;
  return last;
}

/** The sentence a cut result shows in place of the old "truncated" tag. */
export function truncationText(r: QueryResult & Loose): string | null {
  const t = (r.truncation ?? null) as Loose | null;
  const limitPoints = num((t ?? {}).maxPoints) ?? num((t ?? {}).pointsPerSeries);
  if (!t && !r.truncated) return null;
  const fix = "Use $__interval or a coarser bucket, or a shorter time range.";
  if (!t) return `This result was cut at a server limit, so part of the range is missing. ${fix}`;
  const limit = typeof t.limit === "string" ? t.limit : "a server limit";
  const kept = num(t.keptRows) ?? num(t.rows) ?? num(t.kept);
  const end = t.end === "oldest" || t.kept === "oldest" ? "oldest" : "newest";
  if (limitPoints !== null) return `Too many points per series: ${limitPoints.toLocaleString("en-US")} are kept. ${fix}`;
  return `Cut at ${limit}${kept !== null ? `: only the ${end} ${kept.toLocaleString("en-US")} rows are drawn` : ""}, so part of the range is missing. ${fix}`;
}
