/**
 * A bounded LRU of verdicts by catalog version and statement text. A hit is two map lookups by strings the
 * caller already holds (so their hashes are already computed) and a counter write: no key is built and no
 * entry moves, which keeps a panel's repeat check, on every tick, well under a microsecond. Past capacity,
 * an insert evicts the least recently used entries (see evictLeastRecent), on the miss path only.
 */
export class VerdictCache<V> {
  private readonly byVersion = new Map<string, Map<string, { value: V; used: number }>>();
  private clock = 0;
  private count = 0;

  constructor(private readonly capacity: number) {}

  get(catalogVersion: string, sql: string): V | undefined {
    const entry = this.byVersion.get(catalogVersion)?.get(sql);
    if (entry === undefined) return undefined;
    entry.used = ++this.clock;
    return entry.value;
  }

  set(catalogVersion: string, sql: string, value: V): void {
    if (this.capacity <= 0) return;
    let bySql = this.byVersion.get(catalogVersion);
    if (bySql === undefined) {
      bySql = new Map();
      this.byVersion.set(catalogVersion, bySql);
    }
    const entry = bySql.get(sql);
    if (entry !== undefined) {
      entry.value = value;
      entry.used = ++this.clock;
      return;
    }
    bySql.set(sql, { value, used: ++this.clock });
    if (++this.count > this.capacity) this.evictLeastRecent();
  }

  get size(): number {
    return this.count;
  }

  /**
   * Evicts the least recently used eighth of the capacity (at least one entry) in one scan, so a stream of
   * new statements costs a scan per capacity/8 inserts rather than one per insert.
   */
  private evictLeastRecent(): void {
    const all: { version: string; sql: string; used: number }[] = [];
    for (const [version, bySql] of this.byVersion) for (const [sql, entry] of bySql) all.push({ version, sql, used: entry.used });
    all.sort((a, b) => a.used - b.used);
    for (const victim of all.slice(0, Math.max(1, Math.floor(this.capacity / 8)))) {
      const bySql = this.byVersion.get(victim.version)!;
      bySql.delete(victim.sql);
      if (bySql.size === 0) this.byVersion.delete(victim.version);
      this.count--;
    }
  }
}
