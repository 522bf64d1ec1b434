// The least-privilege login against a real PostgreSQL: what the processes can and cannot do as it, and what the
// alternating-users rotation's twin inherits. Role names are unique per run (roles are shared by the server).
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { ensureAppRole } from "./app-role.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
const suffix = randomBytes(4).toString("hex");
const roles = { login: `app_${suffix}`, access: `app_access_${suffix}` };

beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(async () => {
  await store.pool.query(`DROP OWNED BY ${roles.access}, ${roles.login}, ${roles.login}_clone`).catch(() => {});
  await store.pool.query(`DROP ROLE IF EXISTS ${roles.login}_clone, ${roles.login}, ${roles.access}`);
  await store.close();
});

async function as(user: string, password: string) {
  const url = new URL(store.url);
  url.username = user;
  url.password = password;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  return client;
}

test("creates the roles once, never touches a password, and the login reads and writes but has no DDL", async () => {
  const admin = await store.pool.connect();
  try {
    expect((await ensureAppRole(admin, roles)).created).toEqual([roles.access, roles.login]);
    // What the first rotation does: set the login's password.
    await admin.query(`ALTER ROLE ${roles.login} PASSWORD 'pw-one-0123456789'`);
    expect((await ensureAppRole(admin, roles)).created).toEqual([]);
    // A table a later migration creates is covered too (default privileges).
    await admin.query("CREATE TABLE later_table (id int PRIMARY KEY)");
  } finally {
    admin.release();
  }

  const app = await as(roles.login, "pw-one-0123456789");
  try {
    await app.query("INSERT INTO later_table VALUES (1)");
    expect((await app.query("SELECT count(*)::int AS n FROM later_table")).rows[0].n).toBe(1);
    await app.query("UPDATE later_table SET id = 2");
    await app.query("DELETE FROM later_table");
    expect((await app.query("SELECT count(*)::int AS n FROM workspaces")).rows[0].n).toBeGreaterThanOrEqual(0);
    await app.query("LISTEN some_channel");
    for (const sql of [
      "CREATE TABLE evil (x int)",
      "DROP TABLE later_table",
      "ALTER TABLE workspaces ADD COLUMN x int",
      "TRUNCATE later_table",
      `CREATE ROLE evil_${suffix}`,
    ]) {
      const err = await app.query(sql).catch((e) => e);
      expect(err?.code, sql).toBe("42501");
    }
  } finally {
    await app.end();
  }
});

test("the rotation's twin (created IN ROLE the same groups) has the same privileges", async () => {
  const admin = await store.pool.connect();
  try {
    await ensureAppRole(admin, roles);
    // What the alternating-users rotation does: a clone with the original's memberships and a new password.
    await admin.query(`CREATE ROLE ${roles.login}_clone LOGIN PASSWORD 'pw-two-0123456789' IN ROLE ${roles.access}`);
  } finally {
    admin.release();
  }
  const twin = await as(`${roles.login}_clone`, "pw-two-0123456789");
  try {
    await twin.query("INSERT INTO later_table VALUES (3)");
    expect((await twin.query("CREATE TABLE nope (x int)").catch((e) => e))?.code).toBe("42501");
  } finally {
    await twin.end();
  }
});

test("refuses names that are not plain identifiers", async () => {
  const admin = await store.pool.connect();
  try {
    await expect(ensureAppRole(admin, { login: 'x"; DROP', access: "a" })).rejects.toThrow(/plain identifier/);
  } finally {
    admin.release();
  }
});
