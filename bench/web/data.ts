// The web bench's dashboard data, shared by the runner (which serves the snapshot) and the page (which makes each
// tick's frames): 20 panels of 4 series ("host-0".."host-3") x 720 buckets of 5 s, the newest bucket still filling.
import type { Cell, PanelDeltaFrame, QueryResult, SnapshotFrame } from "../../lib/live/frames.ts";

/** What the page logs on its console when window.benchResult is set. */
export const BENCH_DONE = "bench:done";
export const PANELS = 20;
export const SERIES = 4;
export const POINTS = 720;
export const TICKS = 300;
export const STEP = 5_000;
export const T0 = Date.UTC(2026, 0, 1);

const value = (s: number, i: number) => 50 + 30 * Math.sin((i + s * 40) / 37) + ((i * 7919 + s * 104729) % 13);
/** The start (epoch ms) of bucket `i`. */
export const bucket = (i: number): number => T0 + i * STEP;
const rowsOf = (i: number): Cell[][] => Array.from({ length: SERIES }, (_, s) => [bucket(i), `host-${s}`, value(s, i)]);

/** The view's range when bucket `i` is the newest: the 720 buckets ending there. */
export const rangeAt = (i: number): [number, number] => [bucket(i - POINTS + 1), bucket(i)];

/** Every panel's full result for buckets 0..719, as the stream's snapshot carries them. */
export function snapshotPanels(): { panelId: string; at: number; result: QueryResult }[] {
  const rows: Cell[][] = [];
  for (let i = 0; i < POINTS; i++) rows.push(...rowsOf(i));
  return Array.from({ length: PANELS }, (_, p) => ({
    panelId: `p${p}`,
    at: bucket(POINTS - 1),
    result: {
      columns: [
        { name: "time", type: "timestamptz" },
        { name: "host", type: "text" },
        { name: "value", type: "float8" },
      ],
      rows,
      truncated: false,
      elapsedMs: 1,
      stepMs: STEP,
      partialFrom: bucket(POINTS - 1),
    },
  }));
}

/** Tick `t`'s panel-delta frame of a panel: the bucket that was filling is complete, a new one starts filling. */
export function deltaAt(panelId: string, t: number): PanelDeltaFrame {
  const newest = POINTS - 1 + t;
  return {
    panelId,
    at: bucket(newest),
    rangeStart: rangeAt(newest)[0],
    bucketColumn: 0,
    buckets: [bucket(newest - 1), bucket(newest)],
    rows: [...rowsOf(newest - 1), ...rowsOf(newest)],
    elapsedMs: 1,
    stepMs: STEP,
    partialFrom: bucket(newest),
  };
}

/** The stream's first event for this dashboard: its summary (20 time series panels, no SQL), the view, every panel's result. */
export function snapshotFrame(): SnapshotFrame {
  return {
    dashboard: {
      id: "bench",
      version: 1,
      title: "Bench",
      refreshIntervalMs: STEP,
      time: { from: "now-1h", to: "now" },
      panels: Array.from({ length: PANELS }, (_, p) => ({ id: `p${p}`, title: `Panel p${p}`, type: "timeseries", unit: "%" })),
    },
    view: { from: "now-1h", to: "now", refreshMs: STEP, vars: {}, live: true, saved: true },
    panels: snapshotPanels(),
  };
}
