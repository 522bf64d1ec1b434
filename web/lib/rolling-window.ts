/** A point of a series: epoch milliseconds and a value (null is a gap). */
export type Point = readonly [t: number, v: number | null];

/**
 * The browser's rolling window: per series, points sorted by time, at most `maxPoints` of them
 * (MAX_WINDOW_POINTS). Each tick re-runs a panel's query over its range, so a new result overlaps
 * the old one: a point at a time already held replaces it, later points extend the series, and the
 * oldest points fall off past the cap or before the range start. Memory is bounded however long a
 * dashboard stays open.
 */
export class RollingWindow {
  readonly maxPoints: number;
  private readonly data = new Map<string, Point[]>();
  /** The latest result's still-filling bucket start (epoch ms): points at or after it are partial. */
  partialFrom: number | undefined = undefined;

  constructor(maxPoints: number) {
    if (!Number.isInteger(maxPoints) || maxPoints < 1) throw new RangeError("maxPoints must be a positive integer");
    this.maxPoints = maxPoints;
  }

  /**
   * Merges points into a series (any order; non-finite times are dropped). The series' array is updated in place:
   * points before the first incoming time are kept as they are, so a tick that adds the newest bucket (and re-sends
   * the one still filling) touches only the tail and allocates nothing in proportion to the window.
   */
  merge(key: string, incoming: readonly Point[]): void {
    const fresh = sortedFinite(incoming);
    if (fresh.length === 0) return;
    let points = this.data.get(key);
    if (!points) {
      points = [];
      this.data.set(key, points);
    }
    // Everything from the first incoming time on is merged again; what lies before it stays where it is.
    const from = firstAtOrAfter(points, fresh[0]![0]);
    const tail = from < points.length ? points.splice(from) : NONE;
    let i = 0;
    for (const b of fresh) {
      while (i < tail.length && tail[i]![0] < b[0]) points.push(tail[i++]!);
      if (i < tail.length && tail[i]![0] === b[0]) i++; // the newer result wins
      // Duplicate times within one result: the last one wins.
      if (points.length > 0 && points[points.length - 1]![0] === b[0]) points[points.length - 1] = b;
      else points.push(b);
    }
    while (i < tail.length) points.push(tail[i++]!);
    if (points.length > this.maxPoints) points.splice(0, points.length - this.maxPoints);
  }

  /** Drops points older than `from` (epoch ms) and series left empty. */
  prune(from: number): void {
    for (const [key, points] of this.data) {
      const k = firstAtOrAfter(points, from);
      if (k === points.length) this.data.delete(key);
      else if (k > 0) points.splice(0, k);
    }
  }

  /** Keeps only the named series (a series that vanished from results stays until pruned otherwise). */
  retain(keys: ReadonlySet<string>): void {
    for (const key of [...this.data.keys()]) if (!keys.has(key)) this.data.delete(key);
  }

  clear(): void {
    this.data.clear();
  }

  get(key: string): readonly Point[] {
    return this.data.get(key) ?? [];
  }

  keys(): string[] {
    return [...this.data.keys()];
  }

  /** Total points held, across series. */
  get size(): number {
    let n = 0;
    for (const p of this.data.values()) n += p.length;
    return n;
  }
}

const NONE: Point[] = [];

/** The points with a finite time, sorted by time (stable); the input itself when it already is. */
function sortedFinite(incoming: readonly Point[]): readonly Point[] {
  let ok = true;
  for (let k = 0; k < incoming.length && ok; k++) {
    const t = incoming[k]![0];
    ok = Number.isFinite(t) && (k === 0 || incoming[k - 1]![0] <= t);
  }
  return ok ? incoming : incoming.filter((p) => Number.isFinite(p[0])).sort((a, b) => a[0] - b[0]);
}

/** The index of the first point at or after time `t` in sorted `points` (binary search). */
function firstAtOrAfter(points: readonly Point[], t: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (points[mid]![0] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
