import { afterAll, beforeAll, expect, test } from "vitest";
import { createDatabase } from "../testing/pg.ts";
import { migrate } from "./migrate.ts";
import { createConfigStorePool } from "./pool.ts";
import type pg from "pg";

let pool: pg.Pool;
beforeAll(async () => {
  const { url } = await createDatabase("mig");
  pool = createConfigStorePool({ connectionString: url, max: 4 });
});
afterAll(() => pool.end());

test("migrations are idempotent and safe to run from two callers at once", async () => {
  const [a, b] = await Promise.all([migrate(pool), migrate(pool)]);
  // Exactly one caller applied each migration; the other saw them done under the lock.
  expect([...a, ...b].sort()).toEqual(a.length ? a : b);
  expect(await migrate(pool)).toEqual([]);
  const tables = await pool.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1");
  expect(tables.rows.map((r) => r.table_name)).toEqual(
    expect.arrayContaining([
      "workspaces",
      "workspace_limits",
      "sources",
      "dashboards",
      "chat_messages",
      "generation_log",
      "llm_rate_buckets",
      "llm_usage_daily",
      "schema_migrations",
    ]),
  );
});
