import { firstPointAtOrAfter } from "./bisect.ts";
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
  /**
   * The earliest time (epoch ms) whose point may have changed since takeChangedFrom() last read it: points before it
   * are as they were then, but for points dropped from a series' start. -Infinity: anything may have changed (a
   * series came, went or was cleared); +Infinity: nothing did.
   */
  private changedFrom = Number.NEGATIVE_INFINITY;

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
    const order = orderOf(incoming);
    const fresh = order === UNSORTED ? sortedFinite(incoming) : incoming;
    if (fresh.length === 0) return;
    const points = this.data.get(key);
    // A new series, or points all after the last one held (the snapshot into an empty window, a series' newest
    // bucket): copied in bulk. This runs over every point of the snapshot's first panel before the first chart is
    // drawn, while the code is still cold (interpreted), where each pass over the points costs milliseconds.
    if (!points || points.length === 0 || points[points.length - 1]![0] < fresh[0]![0]) {
      const dedup = order === STRICT ? fresh : lastOfEachTime(fresh);
      const keep = Math.min(dedup.length, this.maxPoints);
      if (!points) {
        this.data.set(key, dedup.slice(dedup.length - keep));
        this.changedFrom = Number.NEGATIVE_INFINITY;
        return;
      }
      this.changed(dedup[dedup.length - keep]![0]);
      const total = points.length + keep;
      for (let k = dedup.length - keep; k < dedup.length; k++) points.push(dedup[k]!);
      if (total > this.maxPoints) points.splice(0, total - this.maxPoints);
      return;
    }
    // Everything from the first incoming time on is merged again; what lies before it stays where it is.
    const from = firstPointAtOrAfter(points, fresh[0]![0]);
    this.changed(fresh[0]![0]);
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
      const k = firstPointAtOrAfter(points, from);
      if (k === points.length) {
        this.data.delete(key);
        this.changedFrom = Number.NEGATIVE_INFINITY;
      } else if (k > 0) points.splice(0, k);
    }
  }

  /** Keeps only the named series (a series that vanished from results stays until pruned otherwise). */
  retain(keys: ReadonlySet<string>): void {
    for (const key of [...this.data.keys()]) {
      if (keys.has(key)) continue;
      this.data.delete(key);
      this.changedFrom = Number.NEGATIVE_INFINITY;
    }
  }

  clear(): void {
    this.data.clear();
    this.changedFrom = Number.NEGATIVE_INFINITY;
  }

  /**
   * The earliest time (epoch ms) at which a point was added, replaced or removed since the last call (points dropped
   * from a series' start aside: its first point says where it starts now), and starts counting again. -Infinity when
   * a series came or went, and on the first call; +Infinity when nothing changed. One reader: the chart drawing the
   * window (its aligned columns rebuilt from that time on).
   */
  takeChangedFrom(): number {
    const from = this.changedFrom;
    this.changedFrom = Number.POSITIVE_INFINITY;
    return from;
  }

  private changed(t: number): void {
    if (t < this.changedFrom) this.changedFrom = t;
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

/** Points with finite times in strictly increasing order. */
const STRICT = 0;
/** Finite times in order, some of them equal. */
const SORTED = 1;
/** A time out of order or not finite. */
const UNSORTED = 2;

/** How `points` are ordered, in one pass. */
function orderOf(points: readonly Point[]): typeof STRICT | typeof SORTED | typeof UNSORTED {
  let order: typeof STRICT | typeof SORTED = STRICT;
  let prev = Number.NEGATIVE_INFINITY;
  for (let k = 0; k < points.length; k++) {
    const t = points[k]![0];
    if (!(t >= prev && t > Number.NEGATIVE_INFINITY && t < Number.POSITIVE_INFINITY)) return UNSORTED;
    if (t === prev) order = SORTED;
    prev = t;
  }
  return order;
}

/** The points with a finite time, sorted by time (stable). */
function sortedFinite(incoming: readonly Point[]): readonly Point[] {
  return incoming.filter((p) => Number.isFinite(p[0])).sort((a, b) => a[0] - b[0]);
}

/** Sorted `points` with only the last of each time (the last one of a result wins, as in merge). */
function lastOfEachTime(points: readonly Point[]): Point[] {
  const out: Point[] = [];
  for (const p of points) {
    if (out.length > 0 && out[out.length - 1]![0] === p[0]) out[out.length - 1] = p;
    else out.push(p);
  }
  return out;
}
