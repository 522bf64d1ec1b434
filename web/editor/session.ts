/**
 * The editor session: the spec being edited, with undo and redo. Every change goes through `apply`, which
 * records the spec before it, so Ctrl+Z undoes a form field, a drag, a paste into the JSON view or a restore
 * alike. Consecutive changes with the same `coalesce` key (typing in one field) are one undo step.
 */
export interface EditorSession<S> {
  readonly spec: S;
  apply(next: S, coalesce?: string): void;
  undo(): boolean;
  redo(): boolean;
  canUndo(): boolean;
  canRedo(): boolean;
  /** Replaces the spec without an undo step (a load, or a save that came back). */
  reset(spec: S): void;
  onChange(listener: (spec: S) => void): void;
}

/** Keeps at most `limit` undo steps; snapshots are structured clones, so no later mutation reaches them. */
export function createSession<S>(initial: S, limit = 200): EditorSession<S> {
  let spec = structuredClone(initial);
  const past: S[] = [];
  const future: S[] = [];
  let lastKey: string | undefined;
  const listeners: Array<(s: S) => void> = [];
  const emit = () => {
    for (const l of listeners) l(spec);
  };
  return {
    get spec() {
      return spec;
    },
    apply(next, coalesce) {
      if (coalesce === undefined || coalesce !== lastKey) {
        past.push(spec);
        if (past.length > limit) past.shift();
      }
      lastKey = coalesce;
      future.length = 0;
      spec = structuredClone(next);
      emit();
    },
    undo() {
      const prev = past.pop();
      if (prev === undefined) return false;
      future.push(spec);
      spec = prev;
      lastKey = undefined;
      emit();
      return true;
    },
    redo() {
      const next = future.pop();
      if (next === undefined) return false;
      past.push(spec);
      spec = next;
      lastKey = undefined;
      emit();
      return true;
    },
    canUndo: () => past.length > 0,
    canRedo: () => future.length > 0,
    reset(next) {
      spec = structuredClone(next);
      past.length = 0;
      future.length = 0;
      lastKey = undefined;
      emit();
    },
    onChange(listener) {
      listeners.push(listener);
    },
  };
}
