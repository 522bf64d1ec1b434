/**
 * The live page's status pill and what the stream says about the view it serves. Pure: the page feeds it the
 * stream's state and frames; tests drive it with decoded frames.
 */
import type { StreamFrame, ViewSummary } from "../../lib/live/frames.ts";
import { formatDuration } from "../lib/format.ts";
import type { StreamState } from "../lib/sse-client.ts";

export type StatusKind = "" | "ok" | "warn" | "bad" | "info";

/** What the pill needs to know. */
export interface StatusInput {
  state: StreamState;
  /** The view's cadence in ms; 0 is paused. */
  refreshMs: number;
  /** The stream was closed on purpose after the snapshot of a paused view. */
  pausedAfterSnapshot: boolean;
  /** The range ends in the past (it was on open, or it reached its fixed end while watched). */
  past: boolean;
}

/** The pill's text and colour. A range that has ended never reads as "Live", whatever the connection does. */
export function streamStatus(s: StatusInput): { text: string; kind: StatusKind } {
  switch (s.state) {
    case "open":
    case "closed":
      if (s.refreshMs === 0 && s.pausedAfterSnapshot) return { text: "Paused", kind: "info" };
      if (s.past) return { text: "Fixed range · not refreshing", kind: "info" };
      if (s.state === "open") return { text: `Live · every ${formatDuration(s.refreshMs)}`, kind: "ok" };
      return { text: "Offline", kind: "bad" };
    case "connecting":
      return { text: "Connecting…", kind: "" };
    case "draining":
      return { text: "Server restarting · reconnecting", kind: "warn" };
    case "reconnecting":
      return { text: "Reconnecting", kind: "warn" };
    default:
      return { text: "Offline", kind: "bad" };
  }
}

/**
 * The view the stream serves after a frame: the snapshot's, a dashboard change's (when it carries one) and
 * `event: view`'s (a range whose fixed end has passed: `live: false`, the server stops polling it and keeps the
 * stream open for spec changes). Any other frame leaves it as it was.
 */
export function servedAfter(frame: StreamFrame, served: ViewSummary | null): ViewSummary | null {
  switch (frame.event) {
    case "snapshot":
      return frame.data.view;
    case "view":
      return frame.data;
    case "dashboard":
      return !frame.data.deleted && frame.data.view ? frame.data.view : served;
    default:
      return served;
  }
}

/**
 * Whether the range has ended: the server's word once it has spoken (`live`), before that the page's own
 * reading of the URL's `to` (an instant before now).
 */
export function rangeEnded(served: ViewSummary | null, to: string, now: number): boolean {
  if (served) return !served.live;
  if (to === "now" || to.startsWith("now")) return false;
  const t = Date.parse(to);
  return !Number.isNaN(t) && t < now;
}
