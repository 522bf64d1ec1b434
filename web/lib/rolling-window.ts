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

  /** Merges points into a series (any order; non-finite times are dropped). */
  merge(key: string, incoming: readonly Point[]): void {
    const fresh = incoming.filter((p) => Number.isFinite(p[0])).sort((a, b) => a[0] - b[0]);
    const old = this.data.get(key) ?? [];
    const out: Point[] = [];
    let i = 0;
    let j = 0;
    while (i < old.length || j < fresh.length) {
      const a = old[i];
      const b = fresh[j];
      if (b === undefined || (a !== undefined && a[0] < b[0])) {
        out.push(a!);
        i++;
      } else {
        if (a !== undefined && a[0] === b[0]) i++; // the newer result wins
        // Duplicate times within one result: the last one wins.
        if (out.length > 0 && out[out.length - 1][0] === b[0]) out[out.length - 1] = b;
        else out.push(b);
        j++;
      }
    }
    this.data.set(key, out.length > this.maxPoints ? out.slice(out.length - this.maxPoints) : out);
  }

  /** Drops points older than `from` (epoch ms) and series left empty. */
  prune(from: number): void {
    for (const [key, points] of this.data) {
      let k = 0;
      while (k < points.length && points[k][0] < from) k++;
      if (k === points.length) this.data.delete(key);
      else if (k > 0) this.data.set(key, points.slice(k));
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
