/** Value reported for every label value beyond the cap. */
export const OVERFLOW_LABEL = "other";
/** Each opaque-id label keeps at most this many distinct values. */
export const LABEL_CAP = 500;

/**
 * Caps the distinct values of one label. The first `cap` values are reported as themselves,
 * every later one as `other`. Forgetting a value (its series dropped) frees its slot.
 */
export class LabelCap {
  private readonly seen = new Set<string>();
  constructor(private readonly cap = LABEL_CAP) {}

  /** The label value to report for `id`. */
  value(id: string): string {
    if (this.seen.has(id)) return id;
    if (this.seen.size < this.cap) {
      this.seen.add(id);
      return id;
    }
    return OVERFLOW_LABEL;
  }

  /** True when `id` currently owns a slot (its series are reported under its own value). */
  has(id: string): boolean {
    return this.seen.has(id);
  }

  forget(id: string): void {
    this.seen.delete(id);
  }
}
