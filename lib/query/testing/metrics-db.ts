import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { Source } from "../../sources/store.ts";

/**
 * A metrics database on the test server with login roles created for it. Roles are cluster-wide, so
 * their names carry a random suffix. Test-only helper (used by the runner and catalog tests and the bench).
 */
export interface MetricsFixture {
  url: string;
  database: string;
  host: string;
  port: number;
  /** Creates a LOGIN role with `password` and runs `grants` (with `%I` replaced by the role name). */
  createRole(prefix: string, password: string, grants?: string[]): Promise<string>;
  admin(sql: string, values?: unknown[]): Promise<pg.QueryResult>;
  source(overrides?: Partial<Source>): Source;
  close(): Promise<void>;
}

export async function createMetricsFixture(url: string): Promise<MetricsFixture> {
  const u = new URL(url);
  const database = u.pathname.slice(1);
  const adminPool = new pg.Pool({ connectionString: url, max: 2 });
  adminPool.on("error", () => {});
  const roles: string[] = [];
  return {
    url,
    database,
    host: u.hostname,
    port: Number(u.port),
    admin: (sql, values) => adminPool.query(sql, values as unknown[]),
    async createRole(prefix, password, grants = []) {
      const role = `${prefix}_${randomBytes(4).toString("hex")}`;
      const pw = (await adminPool.query("SELECT format('%L', $1::text) AS q", [password])).rows[0].q as string;
      await adminPool.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD ${pw}`);
      for (const g of grants) await adminPool.query(g.replaceAll("%I", role));
      roles.push(role);
      return role;
    },
    source(overrides = {}) {
      return {
        id: `src_${randomBytes(6).toString("hex")}`,
        workspaceId: "ws_a",
        name: "metrics",
        host: u.hostname,
        port: Number(u.port),
        database,
        sslmode: "disable",
        secretRef: "METRICS",
        schemas: ["public"],
        catalog: { tables: [] },
        catalogRefreshedAt: new Date(0),
        notes: "",
        version: 1,
        createdAt: new Date(0),
        updatedAt: new Date(0),
        ...overrides,
      };
    },
    async close() {
      // Terminate leftover sessions of our roles so DROP ROLE cannot fail on a lingering connection.
      for (const role of roles) {
        await adminPool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", [role]);
      }
      await adminPool.end();
    },
  };
}

/** A SOURCE_SECRETS_DIR in a temp folder; `set` writes (rotates) a value. */
export async function createSecretsDir(): Promise<{
  dir: string;
  set(name: string, value: string): Promise<void>;
  remove(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), "pb-source-secrets-"));
  await chmod(dir, 0o700);
  return {
    dir,
    set: (name, value) => writeFile(join(dir, name), `${value}\n`, { mode: 0o600 }),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
