/**
 * A live panel's data: its last update and, for time series and stat panels, its rolling window. A full result that
 * lands in an empty window (the snapshot, or the first result after the view changed) is merged when the window is
 * first read, by the panel's draw or by an idle callback, so the panels below the fold do not delay the first
 * chart's paint; every later full result is merged as it arrives, after that one.
 *
 * Incremental ticks are merged as they arrive, but while the panel waits outside the viewport (`deferTicks`, set by
 * the page when its draw scheduler holds it there) they are merged when the window is next read (its draw once it
 * scrolls in), all at once: from the earliest bucket any of them changed, over the last result (mergeDelta), which
 * leaves the window as merging that result would (mergeResult). A panel below the fold merges nothing meanwhile.
 *
 * The panel owns its last result's rows: an incremental tick changes them in place (applyPanelDeltaInPlace) rather
 * than copying thousands of row references a tick. A reader that keeps a result past the task that read it (the
 * inspector, whose CSV is made on a later click) takes `kept()`, a copy that stays as it is.
 */
import { applyPanelDeltaInPlace, type PanelDeltaFrame, type PanelUpdate, type QueryResult } from "../../lib/live/frames.ts";
import { firstChangedBucket, mergeDelta, mergeResult } from "../lib/panel-window.ts";
import { RollingWindow } from "../lib/rolling-window.ts";

export class PanelData {
  last: PanelUpdate | null = null;
  private readonly rolling: RollingWindow;
  private pending: { result: QueryResult; range: [number, number] | null } | null = null;
  /** Whether ticks wait for the window's next read rather than being merged as they arrive. */
  deferTicks = false;
  /** Ticks not merged yet: the earliest bucket they changed, and the last one's range. */
  private ticks: { from: number; bucketColumn: number; range: [number, number] | null } | null = null;

  /** `windowed`: whether the panel keeps a window (time series and stat panels). */
  constructor(
    maxPoints: number,
    private readonly windowed: boolean,
  ) {
    this.rolling = new RollingWindow(maxPoints);
  }

  /** Takes a full update (a result or an error); the panel owns the result's rows from now on. */
  apply(u: PanelUpdate, range: [number, number] | null): void {
    // Ticks waiting to be merged are merged from the result they were applied to, before it is replaced.
    this.mergeTicks();
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
   * Takes an incremental tick: applied to the last result (its rows changed in place) and merged into the window, now
   * or, with `deferTicks`, when it is next read. False, and nothing taken, when there is no last result to apply it to
   * (the server sends one only after a full result of the same stream).
   */
  applyDelta(delta: PanelDeltaFrame, range: [number, number] | null): boolean {
    const held = this.last;
    if (!held || !("result" in held)) return false;
    // A waiting full result is merged before its rows change.
    this.settlePending();
    const result = applyPanelDeltaInPlace(held.result, delta);
    this.last = { panelId: delta.panelId, at: delta.at, result };
    if (this.windowed) {
      const col = delta.bucketColumn;
      if (this.ticks && this.ticks.bucketColumn !== col) this.mergeTicks();
      const from = Math.min(this.ticks?.from ?? Number.POSITIVE_INFINITY, firstChangedBucket(delta));
      this.ticks = { from, bucketColumn: col, range };
      if (!this.deferTicks) this.mergeTicks();
    }
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

  /** Merges what waits: the full result, then the ticks taken since. */
  settle(): void {
    this.settlePending();
    this.mergeTicks();
  }

  private settlePending(): void {
    const p = this.pending;
    if (!p) return;
    this.pending = null;
    mergeResult(this.rolling, p.result, p.range);
  }

  /** The ticks taken since the window was read, as one: the last result's rows from the earliest bucket they changed. */
  private mergeTicks(): void {
    const t = this.ticks;
    if (!t) return;
    this.ticks = null;
    const u = this.last;
    if (!u || !("result" in u)) return;
    mergeDelta(this.rolling, u.result, { bucketColumn: t.bucketColumn, buckets: [t.from], rows: [] }, t.range);
  }

  clear(): void {
    this.rolling.clear();
    this.pending = null;
    this.ticks = null;
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
