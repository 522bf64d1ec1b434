// Test-only: a fingerprint of every config-store table, to prove that a refused request wrote nothing.
import pg from "pg";

const statements = new WeakMap<pg.Pool, Promise<string>>();

/** One statement fingerprinting every table of the public schema (the migrations bookkeeping aside). */
async function snapshotStatement(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name NOT LIKE '%migration%'
      ORDER BY table_name`,
  );
  return rows
    .map(
      ({ name }) =>
        `SELECT ${pg.escapeLiteral(name)} AS name, count(*)::text AS n, md5(string_agg(t::text, '|' ORDER BY t::text)) AS h FROM ${pg.escapeIdentifier(name)} t`,
    )
    .join(" UNION ALL ");
}

/**
 * Row count and a hash of every row of each table in the config store's public schema, keyed by table.
 * Two equal snapshots mean no insert, update or delete happened in between, including updates that
 * leave `updated_at` alone.
 */
export async function storeSnapshot(pool: pg.Pool): Promise<Record<string, string>> {
  let sql = statements.get(pool);
  if (!sql) {
    sql = snapshotStatement(pool);
    statements.set(pool, sql);
  }
  const { rows } = await pool.query<{ name: string; n: string; h: string | null }>(await sql);
  return Object.fromEntries(rows.map((r) => [r.name, `${r.n}:${r.h ?? "-"}`]));
}
