/**
 * A live panel's data: its last update and, for time series and stat panels, its rolling window. A full result that
 * lands in an empty window (the snapshot, or the first result after the view changed) is merged when the window is
 * first read, by the panel's draw or by an idle callback, so the panels below the fold do not delay the first
 * chart's paint; every later result or incremental tick is merged as it arrives, after that one.
 */
import type { PanelDeltaFrame, PanelUpdate, QueryResult } from "../../lib/live/frames.ts";
import { mergeDelta, mergeResult } from "../lib/panel-window.ts";
import { RollingWindow } from "../lib/rolling-window.ts";

export class PanelData {
  last: PanelUpdate | null = null;
  private readonly rolling: RollingWindow;
  private pending: { result: QueryResult; range: [number, number] | null } | null = null;

  /** `windowed`: whether the panel keeps a window (time series and stat panels). */
  constructor(
    maxPoints: number,
    private readonly windowed: boolean,
  ) {
    this.rolling = new RollingWindow(maxPoints);
  }

  /** Takes an update; `delta` is the incremental tick it was built from (applyPanelDelta), when it was one. */
  apply(u: PanelUpdate, range: [number, number] | null, delta?: PanelDeltaFrame): void {
    this.last = u;
    if (!("result" in u) || !this.windowed) return;
    if (!this.pending && this.rolling.size === 0 && !delta) {
      this.pending = { result: u.result, range };
      return;
    }
    this.settle();
    if (delta) mergeDelta(this.rolling, u.result, delta, range);
    else mergeResult(this.rolling, u.result, range);
  }

  /** The window with every update merged. */
  get window(): RollingWindow {
    this.settle();
    return this.rolling;
  }

  /** Whether a result waits to be merged (an idle callback may do it before the panel is drawn). */
  get unsettled(): boolean {
    return this.pending !== null;
  }

  /** Merges the result that waits, if any. */
  settle(): void {
    const p = this.pending;
    if (!p) return;
    this.pending = null;
    mergeResult(this.rolling, p.result, p.range);
  }

  clear(): void {
    this.rolling.clear();
    this.pending = null;
    this.last = null;
  }
}

/**
 * Returns a function that has every waiting window merged in idle time, one panel per idle callback (after a
 * snapshot: the panels below the fold, before their next tick or their first draw needs them).
 */
export function createIdleSettler(
  panels: () => Iterable<PanelData>,
  idle: (f: () => void) => unknown = (f) =>
    typeof requestIdleCallback === "function" ? requestIdleCallback(() => f()) : setTimeout(f, 50),
): () => void {
  let running = false;
  const step = () => {
    for (const p of panels()) {
      if (!p.unsettled) continue;
      p.settle();
      idle(step);
      return;
    }
    running = false;
  };
  return () => {
    if (running) return;
    running = true;
    idle(step);
  };
}

/**
 * Whether every panel of the view has reported for it (a result or an error), counting `arriving` (the panels of a
 * snapshot taken in after its first frame) as reported. A paused view reads its stream until then and no longer: a
 * new view's snapshot has no results yet, and its first tick's frames may come in more than one write.
 */
export function everyPanelReported(panels: Iterable<[string, PanelData]>, arriving: ReadonlySet<string> = new Set()): boolean {
  for (const [id, data] of panels) if (data.last === null && !arriving.has(id)) return false;
  return true;
}
