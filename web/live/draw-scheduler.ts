/**
 * When the live page draws its panels. A frame's data is merged into the panel's window at once (elsewhere); the
 * drawing waits for the next animation frame, and for the panel to be in the viewport, as Grafana lazy-loads panels:
 * - many frames for one panel before the browser paints make one draw (the last data), not one per frame;
 * - a panel outside the viewport is not drawn, nor its chart even built, until it scrolls into view, and then it is
 *   drawn from its window, which has kept every tick meanwhile;
 * - on the first frame, before the observer has reported anything, visibility is read from the layout once, so the
 *   first visible chart is drawn on the first frame and the panels below it wait.
 */

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
  /** A draw that throws is reported here; the other panels are still drawn. */
  onError?: (err: unknown) => void;
}

export interface DrawScheduler {
  /** Registers a panel's element and how to draw it (nothing is drawn until it is invalidated). */
  add(el: Element, draw: () => void): void;
  remove(el: Element): void;
  /** The panel's data or view changed: drawn at the next frame when visible, else once it becomes visible. */
  invalidate(el: Element): void;
  invalidateAll(): void;
  /** Draws at once every visible panel that is due (the frame callback). */
  flush(): void;
  /** Panels in the viewport as last reported. */
  visibleCount(): number;
  /** Forgets every panel. */
  clear(): void;
}

interface Entry {
  draw: () => void;
  dirty: boolean;
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

export function createDrawScheduler(deps: DrawSchedulerDeps = {}): DrawScheduler {
  const requestFrame = deps.requestFrame ?? ((cb: () => void) => requestAnimationFrame(() => cb()));
  const inViewport = deps.inViewport ?? browserInViewport;
  const onError = deps.onError ?? ((err: unknown) => reportError(err));
  const entries = new Map<Element, Entry>();
  let pending = false;

  const watcher = (deps.watch ?? browserWatch)((sightings) => {
    let due = false;
    for (const s of sightings) {
      const e = entries.get(s.target);
      if (!e) continue;
      e.visible = s.isIntersecting;
      if (e.visible && e.dirty) due = true;
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
    // Layout reads first (panels not reported yet), then the draws, so a frame forces at most one layout.
    for (const [el, e] of entries) if (e.dirty && e.visible === undefined) e.visible = inViewport(el);
    for (const e of entries.values()) {
      if (!e.dirty || !e.visible) continue;
      e.dirty = false;
      try {
        e.draw();
      } catch (err) {
        onError(err);
      }
    }
  }

  return {
    add(el, draw) {
      const known = entries.get(el);
      if (known) {
        known.draw = draw;
        return;
      }
      entries.set(el, { draw, dirty: false, visible: undefined });
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
    },
    invalidateAll() {
      let due = false;
      for (const e of entries.values()) {
        e.dirty = true;
        if (e.visible !== false) due = true;
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
