import type { QueryResult } from "../live/frames.ts";

/**
 * The result of one guarded query: rows as arrays in column order, with what a limit cut (truncation), the
 * bucket step and the still-filling bucket where the runner could tell them. One type with the stream's
 * frames (lib/live/frames.ts), so the browser reads what the runner wrote.
 */
export type { QueryResult };

/** A dashboard's time range in epoch milliseconds. */
export interface TimeRange {
  fromMs: number;
  toMs: number;
}
