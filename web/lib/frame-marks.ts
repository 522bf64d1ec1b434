/**
 * What a panel frame says about its own result beyond rows (lib/live/frames.ts): the bucket step, the bucket still
 * filling, and the sentences a cut result or a too-fine bucket shows on the panel, with the fix.
 */
import type { QueryResult } from "./result.ts";

export interface FrameMarks {
  /** The bucket step in ms, when the statement is time-bucketed. */
  stepMs: number | null;
  /** The start (epoch ms) of the bucket still filling, drawn distinctly and left out of stats. */
  partialFrom: number | null;
  /** Set when a limit cut the result or a bucket gives more points than are kept: sentences naming it and the fix. */
  notice: string | null;
}

const FIX = "Use $__interval or a coarser bucket, or a shorter time range.";

/** The marks of a result (fields absent: no step, no partial bucket, not cut). */
export function frameMarks(result: QueryResult): FrameMarks {
  const notes: string[] = [];
  if (result.truncation) notes.push(result.truncation.message);
  else if (result.truncated) notes.push(`This result was cut at a server limit, so part of the range is missing. ${FIX}`);
  if (result.pointsWarning && result.pointsWarning.message !== result.truncation?.message) notes.push(result.pointsWarning.message);
  return {
    stepMs: result.stepMs ?? null,
    partialFrom: result.partialFrom ?? null,
    notice: notes.length ? notes.join(" ") : null,
  };
}
