/** A bounded LRU of verdicts (Map keeps insertion order; a hit moves the entry to the back). */
export class VerdictCache<V> {
  private readonly map = new Map<string, V>();

  constructor(private readonly capacity: number) {}

  /** An unambiguous key for (statement text, catalog version). */
  key(sql: string, catalogVersion: string): string | undefined {
    if (this.capacity <= 0) return undefined;
    return `${catalogVersion.length}:${catalogVersion}:${sql}`;
  }

  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
  }

  get size(): number {
    return this.map.size;
  }
}
