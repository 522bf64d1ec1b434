// npm run migrate: applies pending config-store migrations to DATABASE_URL (safe to run from two processes at once).
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { migrate } from "../lib/store/migrate.ts";
import { describeConfigStoreFailure } from "../lib/store/connect-failure.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";

const config = loadConfigOrExit();
const pool = createConfigStorePool({ connectionString: config.DATABASE_URL, max: 1 });
try {
  const applied = await migrate(pool);
  console.log(applied.length ? `applied: ${applied.join(", ")}` : "config store is up to date");
} catch (err) {
  // The code, what it means and the setting to look at: `migration failed: 28P01: authentication failed: …`.
  console.error(`migration failed: ${describeConfigStoreFailure(err)}`);
  process.exitCode = 1;
} finally {
  await pool.end();
}
