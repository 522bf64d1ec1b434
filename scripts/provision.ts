// npm run provision -- FILE | --from-env: applies a provisioning file (workspaces, their sources and dashboards) to
// DATABASE_URL, idempotently (docs/provisioning.md). Run `npm run migrate` first.
import { runProvisionCli } from "../lib/provisioning/cli.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";

const config = loadConfigOrExit();
// Two connections: one holds the run's advisory lock while the other writes.
const pool = createConfigStorePool({ connectionString: config.DATABASE_URL, max: 2 });
try {
  process.exitCode = await runProvisionCli(
    process.argv.slice(2),
    { config, pool },
    {
      stdout: (line) => process.stdout.write(`${line}\n`),
      stderr: (line) => process.stderr.write(`${line}\n`),
    },
  );
} finally {
  await pool.end();
}
