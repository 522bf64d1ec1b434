import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { migrate } from "../store/migrate.ts";
import { createConfigStorePool } from "../store/pool.ts";

/** Connection string of the run's embedded PostgreSQL (superuser, database `postgres`). */
export function adminUrl(): string {
  return inject("pgAdminUrl");
}

/** Replaces the database name of a connection string. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Creates an empty database with a unique name on the run's server and returns its URL. */
export async function createDatabase(prefix = "t"): Promise<{ name: string; url: string }> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return { name, url: withDatabase(adminUrl(), name) };
}

/** A fresh, migrated config-store database for one test file, with its pool. */
export async function createTestConfigStore(): Promise<{ url: string; pool: pg.Pool; close(): Promise<void> }> {
  const { url } = await createDatabase("cfg");
  const pool = createConfigStorePool({ connectionString: url, max: 5 });
  await migrate(pool);
  return { url, pool, close: () => pool.end() };
}
