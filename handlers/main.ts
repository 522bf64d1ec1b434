// Entry point of the handlers: the Lambda container image runs this behind the Lambda Web Adapter,
// which forwards requests to PORT (8080); outside Lambda it is a plain HTTP server.
// Load config → build deps → serve → on signal drain and close, as the stream host and `npm start` do.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { createRevocationSet, listenForRevocations } from "../lib/auth/revocations.ts";
import type { Config } from "../lib/config/parse.ts";
import { closeConfigStore, serveProcess } from "../lib/lifecycle/serve.ts";
import { registerHealth } from "../lib/probes/health.ts";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { loadConfig } from "../lib/service/load-config.ts";
import { buildAppServices } from "../lib/service/query-services.ts";
import { listenerClientFactory } from "../lib/store/listen.ts";
import { createApp } from "./app.ts";
import { withEmf } from "./emf.ts";

/**
 * The handlers' dependencies, built once: the service deps, the app's services (guard, guarded runner, AI),
 * the revocation set kept fresh by its config-store listener, and the browser bundle's folder.
 */
async function buildDeps(config: Config) {
  const serviceDeps = buildServiceDeps(config);
  // Behind Lambda nothing scrapes the handlers: their LLM counters also go to CloudWatch as EMF lines.
  const deps = config.METRICS_EMF ? { ...serviceDeps, metrics: withEmf(serviceDeps.metrics) } : serviceDeps;
  // The SQL parser loads while the listener opens; the app holds requests past the probes until it has.
  const services = buildAppServices(deps);
  // The browser bundle sits beside the server bundle (dist/web next to dist/handlers), or in dist/web when
  // running from source after `npm run build -- --only web` (what `npm run start:handlers` does).
  const webAssetsDir = [new URL("../web/", import.meta.url), new URL("../dist/web/", import.meta.url)]
    .map((u) => fileURLToPath(u))
    .find((dir) => existsSync(`${dir}manifest.json`));
  // Logouts and "sign out everywhere" from any instance reach this one by NOTIFY; session checks read the
  // in-memory set only. It loads in the background; a session check that comes first waits for it.
  const revocations = createRevocationSet({ now: deps.now });
  const revocationListener = listenForRevocations({
    set: revocations,
    pool: deps.pool,
    connect: listenerClientFactory(config.DATABASE_URL),
    now: deps.now,
    log: deps.log,
  });
  void revocationListener.start();
  return { ...deps, ...services, webAssetsDir, revocations, revocationListener };
}

// In the cloud the secrets come from Secrets Manager (APP_SECRETS_AWS), read before the config is parsed.
const config = await loadConfig();
const deps = await buildDeps(config);
const app = createApp(deps);
// A parser that cannot load (its .wasm missing beside the bundle) is fatal, as it was when the start awaited it.
deps.guardReady.catch((err: unknown) => {
  deps.log.error("the SQL parser failed to load; exiting", { error: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});

if (!config.SESSION_SECRET) {
  deps.log.warn(
    "SESSION_SECRET is unset: sessions are signed with a random key that dies with this process, and a stream host refuses them; set the same SESSION_SECRET for the handlers and the stream host",
  );
}
// The instance lifecycle (docs/stream-host.md, drain), as in the stream host: with FRAMEWORK_MANUAL_SIG_HANDLE=true,
// SIGTERM sets the drain flag (readiness 503 `draining` at once; the listener stays open and requests are
// served), then in-flight metric queries and config-store work finish and every pool client is released,
// then exit 0, all within SHUTDOWN_GRACE_MS. The handlers have no pollers or streams, so steps 2-3 are empty.
serveProcess({
  name: "handlers",
  config,
  port: config.PORT,
  portVariable: "PORT",
  fetch: app.fetch,
  drain: deps.drain,
  host: {
    beginDrain: async () => {},
    settle: async () => {
      await Promise.all([deps.queryRunner.closeAll(), deps.revocationListener.close()]);
    },
  },
  closeStores: () => closeConfigStore(deps),
  log: deps.log,
  exit: (code) => process.exit(code),
  onListening: ({ port, signals }) => deps.log.info("handlers listening", { port, signals }),
});
// The Lambda Web Adapter's readiness check (AWS_LWA_READINESS_CHECK_PORT): /api/health only, on loopback,
// outside the origin check of the main listener.
if (config.HEALTH_CHECK_PORT) {
  const check = new Hono();
  registerHealth(check, deps.build);
  serve({ fetch: check.fetch, port: config.HEALTH_CHECK_PORT, hostname: "127.0.0.1" });
}
