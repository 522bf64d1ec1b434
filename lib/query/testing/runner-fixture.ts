import { randomBytes } from "node:crypto";
import { Registry } from "prom-client";
import { parseConfig } from "../../config/parse.ts";
import { createMetrics } from "../../metrics/metrics.ts";
import { createSecretResolver } from "../../secrets/resolver.ts";
import { createGuard, loadGuardParser } from "../../sql-guard/index.ts";
import { createDatabase } from "../../testing/pg.ts";
import { type QueryRunner, type QueryRunnerOptions, createQueryRunner } from "../runner.ts";
import { type MetricsFixture, createMetricsFixture, createSecretsDir } from "./metrics-db.ts";

/**
 * A metrics database of its own on the test server, with one least-privilege login role whose credentials
 * resolve through secret ref METRICS (granted to workspace ws_a), and runners that reach it as that role.
 * Test-only helper: the runner, catalog and variables tests on real PostgreSQL share this set-up.
 */
export interface RunnerFixture {
  /** The database: its admin connection, roles and `source()` (fx.source() is a source of ws_a on METRICS). */
  fx: MetricsFixture;
  /** The login role the runners connect as. */
  reader: string;
  /** A runner reaching the database as `reader` (closed by close()); the guard defaults to the real one. */
  runner(opts?: RunnerFixtureRunnerOptions): QueryRunner;
  close(): Promise<void>;
}

export type RunnerFixtureRunnerOptions = Partial<Omit<QueryRunnerOptions, "config" | "metrics" | "secrets">> & {
  /** Configuration beyond the fixture's own (QUERY_TIMEOUT_SECONDS, MAX_QUERY_ROWS, ...). */
  env?: Record<string, string>;
  /** Where the runner's metrics go (a fresh registry when omitted). */
  registry?: Registry;
};

export async function createRunnerFixture(opts: {
  /** Name of the database (the test server adds a unique suffix). */
  database: string;
  /** Tables and rows, run as the database's owner before the role is created. */
  setup?: (fx: MetricsFixture) => Promise<void>;
  /** Prefix of the role's name (it gets a random suffix: roles are cluster-wide). */
  role: string;
  /** What the role is granted, `%I` standing for its name. */
  grants: string[];
}): Promise<RunnerFixture> {
  await loadGuardParser();
  const fx = await createMetricsFixture((await createDatabase(opts.database)).url);
  const secrets = await createSecretsDir();
  const runners: QueryRunner[] = [];
  try {
    await opts.setup?.(fx);
    const password = randomBytes(12).toString("hex");
    const reader = await fx.createRole(opts.role, password, opts.grants);
    await secrets.set("METRICS_USERNAME", reader);
    await secrets.set("METRICS_PASSWORD", password);
    return {
      fx,
      reader,
      runner({ env = {}, registry = new Registry(), ...rest } = {}) {
        const config = parseConfig({
          DATABASE_URL: "postgres://unused@127.0.0.1/unused",
          // The test server listens on loopback, which the host policy refuses unless allowed.
          SOURCE_ALLOWED_HOSTS: "127.0.0.1",
          SOURCE_SECRET_REFS: "METRICS:ws_a",
          SOURCE_SECRETS_DIR: secrets.dir,
          ...env,
        }).config;
        const runner = createQueryRunner({
          guard: createGuard(),
          ...rest,
          config,
          metrics: createMetrics(registry, { defaultCollectors: false }),
          secrets: createSecretResolver({ config, env: {} }),
        });
        runners.push(runner);
        return runner;
      },
      async close() {
        await Promise.all(runners.map((r) => r.closeAll()));
        await fx.close();
        await secrets.remove();
      },
    };
  } catch (err) {
    await fx.close();
    await secrets.remove();
    throw err;
  }
}
