/**
 * A live panel's data: its last update and, for time series and stat panels, its rolling window. A full result that
 * lands in an empty window (the snapshot, or the first result after the view changed) is merged when the window is
 * first read, by the panel's draw or by an idle callback, so the panels below the fold do not delay the first
 * chart's paint; every later result or incremental tick is merged as it arrives, after that one.
 *
 * The panel owns its last result's rows: an incremental tick changes them in place (applyPanelDeltaInPlace) rather
 * than copying thousands of row references a tick. A reader that keeps a result past the task that read it (the
 * inspector, whose CSV is made on a later click) takes `kept()`, a copy that stays as it is.
 */
import { applyPanelDeltaInPlace, type PanelDeltaFrame, type PanelUpdate, type QueryResult } from "../../lib/live/frames.ts";
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

  /** Takes a full update (a result or an error); the panel owns the result's rows from now on. */
  apply(u: PanelUpdate, range: [number, number] | null): void {
    this.last = u;
    if (!("result" in u) || !this.windowed) return;
    if (!this.pending && this.rolling.size === 0) {
      this.pending = { result: u.result, range };
      return;
    }
    this.settle();
    mergeResult(this.rolling, u.result, range);
  }

  /**
   * Takes an incremental tick: applied to the last result (its rows changed in place) and merged into the window.
   * False, and nothing taken, when there is no last result to apply it to (the server sends one only after a full
   * result of the same stream).
   */
  applyDelta(delta: PanelDeltaFrame, range: [number, number] | null): boolean {
    const held = this.last;
    if (!held || !("result" in held)) return false;
    // A waiting full result is merged before its rows change.
    this.settle();
    const result = applyPanelDeltaInPlace(held.result, delta);
    this.last = { panelId: delta.panelId, at: delta.at, result };
    if (this.windowed) mergeDelta(this.rolling, result, delta, range);
    return true;
  }

  /** The last update with rows of its own: what a reader keeps past the current task (the next tick changes `last`'s). */
  kept(): PanelUpdate | null {
    const u = this.last;
    return u && "result" in u ? { ...u, result: { ...u.result, rows: u.result.rows.slice() } } : u;
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
