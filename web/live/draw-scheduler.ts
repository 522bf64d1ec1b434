/**
 * When the live page draws its panels. A frame's data is merged into the panel's window at once (elsewhere); the
 * drawing waits for the next animation frame, and for the panel to be in the viewport, as Grafana lazy-loads panels:
 * - many frames for one panel before the browser paints make one draw (the last data), not one per frame;
 * - a panel outside the viewport is not drawn, nor its chart even built, until it scrolls into view, and then it is
 *   drawn from its window, which has kept every tick meanwhile;
 * - on the first frame, before the observer has reported anything, visibility is read from the layout once, so the
 *   first visible chart is drawn on the first frame and the panels below it wait;
 * - a frame draws due panels in viewport order (top to bottom, then left to right) until its budget is spent (always
 *   at least one panel), and asks for another frame for the rest, so twenty due charts are a few short frames rather
 *   than one long one; a panel invalidated again before its turn is still drawn once, from its latest data;
 * - but a rest that would take no longer than the budget again (estimated from this frame's draws) is drawn in this
 *   frame: another frame costs about that much beyond its draws (its own style, layout, paint and commit), so
 *   deferring the last chart or two of a tick costs more main-thread time than drawing them;
 * - a theme change draws every panel drawn before, those outside the viewport after the visible ones, within the
 *   same budget: a panel drawn in the old palette would show it when it scrolls in, before its redraw (one never drawn
 *   waits for the viewport as before: it has nothing in the old palette, and a chart built ahead costs every tick).
 */

/** Main-thread time a frame may spend drawing before the rest waits for the next frame (a third of a 60 Hz frame). */
export const FRAME_BUDGET_MS = 6;

/** What the scheduler reads of an IntersectionObserver entry. */
export interface Sighting {
  target: Element;
  isIntersecting: boolean;
}

/** What the scheduler needs of an IntersectionObserver. */
export interface Watcher {
  observe(el: Element): void;
  unobserve(el: Element): void;
  disconnect(): void;
}

export interface DrawSchedulerDeps {
  /** Runs a callback before the next paint. */
  requestFrame?: (callback: () => void) => unknown;
  /** Reports elements entering and leaving the viewport. */
  watch?: (onChange: (entries: readonly Sighting[]) => void) => Watcher;
  /** Whether an element is in the viewport now (a layout read), for one the watcher has not reported yet. */
  inViewport?: (el: Element) => boolean;
  /** Where an element is now (a layout read), to draw in viewport order: top to bottom, then left to right. */
  position?: (el: Element) => { top: number; left: number };
  /** A clock in ms for the frame budget (performance.now in the browser). */
  now?: () => number;
  /** Drawing time a frame may spend; once spent, the remaining due panels wait for the next frame. */
  budgetMs?: number;
  /** A draw that throws is reported here; the other panels are still drawn. */
  onError?: (err: unknown) => void;
}

export interface DrawScheduler {
  /**
   * Registers a panel's element and how to draw it (nothing is drawn until it is invalidated). `held`, when given, is
   * called when the panel has something to draw but is outside the viewport, so waits for it (it may be called again).
   */
  add(el: Element, draw: () => void, held?: () => void): void;
  remove(el: Element): void;
  /** The panel's data or view changed: drawn at the next frame when visible, else once it becomes visible. */
  invalidate(el: Element): void;
  /**
   * Every panel, as invalidate() does; with `everywhere`, those outside the viewport that were drawn before are drawn
   * too, after the visible ones (a theme change).
   */
  invalidateAll(everywhere?: boolean): void;
  /** Draws due visible panels in viewport order until the frame budget is spent (the frame callback). */
  flush(): void;
  /** Panels in the viewport as last reported. */
  visibleCount(): number;
  /** Forgets every panel. */
  clear(): void;
}

interface Entry {
  draw: () => void;
  held: (() => void) | undefined;
  dirty: boolean;
  /** Drawn at the next frames even outside the viewport (invalidateAll's `everywhere`): not held meanwhile. */
  eager: boolean;
  /** Whether it was ever drawn. */
  drawn: boolean;
  /** undefined until the watcher (or a layout read) has said. */
  visible: boolean | undefined;
}

const browserWatch = (onChange: (entries: readonly Sighting[]) => void): Watcher =>
  new IntersectionObserver((entries) => onChange(entries));

function browserInViewport(el: Element): boolean {
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) return false;
  return r.bottom > 0 && r.right > 0 && r.top < window.innerHeight && r.left < window.innerWidth;
}

function browserPosition(el: Element): { top: number; left: number } {
  const r = el.getBoundingClientRect();
  return { top: r.top, left: r.left };
}

export function createDrawScheduler(deps: DrawSchedulerDeps = {}): DrawScheduler {
  const requestFrame = deps.requestFrame ?? ((cb: () => void) => requestAnimationFrame(() => cb()));
  const inViewport = deps.inViewport ?? browserInViewport;
  const position = deps.position ?? browserPosition;
  const now = deps.now ?? (() => performance.now());
  const budgetMs = deps.budgetMs ?? FRAME_BUDGET_MS;
  const onError = deps.onError ?? ((err: unknown) => reportError(err));
  const entries = new Map<Element, Entry>();
  let pending = false;

  const watcher = (deps.watch ?? browserWatch)((sightings) => {
    let due = false;
    for (const s of sightings) {
      const e = entries.get(s.target);
      if (!e) continue;
      e.visible = s.isIntersecting;
      if ((e.visible || e.eager) && e.dirty) due = true;
      else if (e.dirty) e.held?.();
    }
    if (due) schedule();
  });

  function schedule(): void {
    if (pending) return;
    pending = true;
    requestFrame(flush);
  }

  function flush(): void {
    pending = false;
    const start = now();
    // Layout reads first (visibility of panels not reported yet, positions), then the draws, so a frame forces at
    // most one layout.
    for (const [el, e] of entries)
      if (e.dirty && e.visible === undefined) {
        e.visible = inViewport(el);
        if (!e.visible && !e.eager) e.held?.();
      }
    const due: { el: Element; e: Entry; top: number; left: number }[] = [];
    for (const [el, e] of entries) if (e.dirty && (e.visible || e.eager)) due.push({ el, e, ...position(el) });
    due.sort((a, b) => Number(!a.e.visible) - Number(!b.e.visible) || a.top - b.top || a.left - b.left);
    const drawStart = now();
    let drawn = 0;
    for (const [i, { el, e }] of due.entries()) {
      // Removed, or drawn already, since the list was made (a draw may change other panels).
      if (entries.get(el) !== e || !e.dirty || !(e.visible || e.eager)) continue;
      e.dirty = false;
      e.eager = false;
      e.drawn = true;
      try {
        e.draw();
      } catch (err) {
        onError(err);
      }
      drawn++;
      const t = now();
      if (i < due.length - 1 && t - start >= budgetMs) {
        // The rest at this frame's mean draw time: drawn now when it fits in the budget again, else next frame.
        const rest = ((t - drawStart) / drawn) * (due.length - 1 - i);
        if (rest > budgetMs) {
          schedule();
          return;
        }
      }
    }
  }

  return {
    add(el, draw, held) {
      const known = entries.get(el);
      if (known) {
        known.draw = draw;
        known.held = held;
        return;
      }
      entries.set(el, { draw, held, dirty: false, eager: false, drawn: false, visible: undefined });
      watcher.observe(el);
    },
    remove(el) {
      if (entries.delete(el)) watcher.unobserve(el);
    },
    invalidate(el) {
      const e = entries.get(el);
      if (!e) return;
      e.dirty = true;
      if (e.visible !== false) schedule();
      else e.held?.();
    },
    invalidateAll(everywhere = false) {
      let due = false;
      for (const e of entries.values()) {
        e.dirty = true;
        if (everywhere && e.drawn) e.eager = true;
        if (e.visible !== false || e.eager) due = true;
        else e.held?.();
      }
      if (due) schedule();
    },
    flush,
    visibleCount() {
      let n = 0;
      for (const e of entries.values()) if (e.visible) n++;
      return n;
    },
    clear() {
      for (const el of entries.keys()) watcher.unobserve(el);
      entries.clear();
    },
  };
}
