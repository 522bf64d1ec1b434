// npm run migrate: applies pending config-store migrations to DATABASE_URL (safe to run from two processes at once).
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { migrate } from "../lib/store/migrate.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";

const config = loadConfigOrExit();
const pool = createConfigStorePool({ connectionString: config.DATABASE_URL, max: 1 });
try {
  const applied = await migrate(pool);
  console.log(applied.length ? `applied: ${applied.join(", ")}` : "config store is up to date");
} catch (err) {
  console.error(`migration failed: ${(err as { code?: string }).code ?? (err as Error).message}`);
  process.exitCode = 1;
} finally {
  await pool.end();
}
