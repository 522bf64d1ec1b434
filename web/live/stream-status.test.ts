import { describe, expect, test } from "vitest";
import { decodeFrame, type StreamFrame, type ViewSummary } from "../../lib/live/frames.ts";
import { rangeEnded, servedAfter, streamStatus } from "./stream-status.ts";

const END = Date.parse("2026-11-27T12:00:00Z");
const liveView: ViewSummary = {
  from: "2026-11-27T11:00:00.000Z",
  to: "2026-11-27T12:00:00.000Z",
  refreshMs: 5000,
  vars: {},
  live: true,
  saved: false,
};
const snapshot = (view: ViewSummary) =>
  decodeFrame(
    "snapshot",
    JSON.stringify({
      dashboard: { id: "d1", version: 1, title: "T", refreshIntervalMs: 5000, time: { from: "now-1h", to: "now" }, panels: [] },
      view,
      panels: [],
    }),
  ) as StreamFrame;

/** Feeds the page's frames as the stream writes them and returns the pill after each. */
function pillAfter(frames: StreamFrame[], now: number) {
  let served: ViewSummary | null = null;
  return frames.map((f) => {
    served = servedAfter(f, served);
    return streamStatus({ state: "open", refreshMs: 5000, pausedAfterSnapshot: false, past: rangeEnded(served, liveView.to, now) }).text;
  });
}

describe("a range whose fixed end passes while it is watched", () => {
  test("event: view with live false turns the pill from Live to a fixed range, on the same open stream", () => {
    const view = decodeFrame("view", JSON.stringify({ ...liveView, live: false }));
    expect(view?.event).toBe("view");
    const panel = decodeFrame(
      "panel",
      JSON.stringify({ panelId: "p1", at: END, result: { columns: [], rows: [], truncated: false, elapsedMs: 1 } }),
    );
    // Before the end, the page's clock alone would still say live: the server's word decides.
    const texts = pillAfter([snapshot(liveView), panel!, view!, panel!], END - 1000);
    expect(texts).toEqual(["Live · every 5 s", "Live · every 5 s", "Fixed range · not refreshing", "Fixed range · not refreshing"]);
  });

  test("a reconnect after the end gets a snapshot that is not live: still not Live, nothing to loop on", () => {
    expect(pillAfter([snapshot({ ...liveView, live: false })], END + 60_000)).toEqual(["Fixed range · not refreshing"]);
  });

  test("a dashboard change carrying the view replaces it; one without it, or a deletion, keeps the one served", () => {
    const ended = { ...liveView, live: false };
    const summary = { id: "d1", version: 2, title: "T", refreshIntervalMs: 5000, time: { from: "now-1h", to: "now" }, panels: [] };
    const withView = decodeFrame("dashboard", JSON.stringify({ ...summary, view: liveView }))!;
    const without = decodeFrame("dashboard", JSON.stringify(summary))!;
    const deleted = decodeFrame("dashboard", JSON.stringify({ id: "d1", deleted: true }))!;
    expect(servedAfter(withView, ended)).toEqual(liveView);
    expect(servedAfter(without, ended)).toBe(ended);
    expect(servedAfter(deleted, ended)).toBe(ended);
  });

  test("a view frame missing live is not decoded (the page keeps what it had)", () => {
    const { live: _live, ...rest } = liveView;
    expect(decodeFrame("view", JSON.stringify(rest))).toBeNull();
  });
});

describe("rangeEnded before the server has spoken", () => {
  test.each([
    ["now", END + 1, false],
    ["now-1h", END + 1, false],
    ["2026-11-27T12:00:00.000Z", END + 1, true],
    ["2026-11-27T12:00:00.000Z", END - 1, false],
    ["not a time", END, false],
  ])("to %s at %d: %s", (to, now, ended) => {
    expect(rangeEnded(null, to, now)).toBe(ended);
  });
});

describe("streamStatus", () => {
  test.each([
    [{ state: "open", refreshMs: 0, pausedAfterSnapshot: true, past: false }, "Paused"],
    [{ state: "closed", refreshMs: 5000, pausedAfterSnapshot: false, past: true }, "Fixed range · not refreshing"],
    [{ state: "closed", refreshMs: 5000, pausedAfterSnapshot: false, past: false }, "Offline"],
    [{ state: "reconnecting", refreshMs: 5000, pausedAfterSnapshot: false, past: true }, "Reconnecting"],
    [{ state: "draining", refreshMs: 5000, pausedAfterSnapshot: false, past: false }, "Server restarting · reconnecting"],
    [{ state: "connecting", refreshMs: 5000, pausedAfterSnapshot: false, past: false }, "Connecting…"],
  ] as const)("%j reads %s", (input, text) => {
    expect(streamStatus(input).text).toBe(text);
  });
});
