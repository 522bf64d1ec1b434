// Test-only: a fingerprint of every config-store table, to prove that a refused request wrote nothing.
import pg from "pg";

/**
 * Row count and a hash of every row of each table in the config store's public schema (the
 * migrations bookkeeping aside), keyed by table. Two equal snapshots mean no insert, update or delete
 * happened in between, including updates that leave `updated_at` alone.
 */
export async function storeSnapshot(pool: pg.Pool, opts: { except?: string[] } = {}): Promise<Record<string, string>> {
  const { rows: tables } = await pool.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name NOT LIKE '%migration%'
      ORDER BY table_name`,
  );
  const out: Record<string, string> = {};
  for (const { name } of tables) {
    if (opts.except?.includes(name)) continue;
    const { rows } = await pool.query<{ n: string; h: string | null }>(
      `SELECT count(*)::text AS n, md5(string_agg(t::text, '|' ORDER BY t::text)) AS h FROM ${pg.escapeIdentifier(name)} t`,
    );
    out[name] = `${rows[0].n}:${rows[0].h ?? "-"}`;
  }
  return out;
}
