// Entry point of the handlers: the Lambda container image runs this behind the Lambda Web Adapter,
// which forwards requests to PORT (8080); outside Lambda it is a plain HTTP server.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { createRevocationSet, listenForRevocations } from "../lib/auth/revocations.ts";
import { createShutdown, installSignalHandlers } from "../lib/lifecycle/shutdown.ts";
import { systemTimers } from "../lib/lifecycle/timers.ts";
import { createLogger } from "../lib/log/logger.ts";
import { registerHealth } from "../lib/probes/health.ts";
import { resolveAppSecretsOrExit } from "../lib/secrets/boot.ts";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { exitOnListenFailure } from "../lib/service/listen-failure.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { buildQueryServices } from "../lib/service/query-services.ts";
import { listenerClientFactory } from "../lib/store/listen.ts";
import { createApp } from "./app.ts";
import { withEmf } from "./emf.ts";

// In the cloud the secrets come from Secrets Manager (APP_SECRETS_AWS), read before the config is parsed.
const secrets = await resolveAppSecretsOrExit(process.env, { timers: systemTimers, log: createLogger() });
const config = loadConfigOrExit(secrets.env);
const serviceDeps = buildServiceDeps(config);
// Behind Lambda nothing scrapes the handlers: their LLM counters also go to CloudWatch as EMF lines.
const deps = config.METRICS_EMF ? { ...serviceDeps, metrics: withEmf(serviceDeps.metrics) } : serviceDeps;
secrets.keepFresh(config);
const { guard, queryRunner } = await buildQueryServices(config, deps.metrics);
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
const app = createApp({ ...deps, guard, queryRunner, webAssetsDir, revocations });

// The instance lifecycle (docs/stream-host.md, drain), as in the stream host: with FRAMEWORK_MANUAL_SIG_HANDLE=true, SIGTERM sets the drain
// flag (readiness 503 `draining` at once; the listener stays open and requests are served), then in-flight
// metric queries and config-store work finish and every pool client is released, then exit 0, all within
// SHUTDOWN_GRACE_MS. The handlers have no pollers or streams of their own, so steps 2-3 are empty.
const exit = (code: number) => process.exit(code);
const shutdown = createShutdown({
  drain: deps.drain,
  host: {
    beginDrain: async () => {},
    settle: async () => {
      await Promise.all([queryRunner.closeAll(), revocationListener.close()]);
    },
  },
  closeStores: async () => {
    await deps.readiness.close();
    await deps.pool.end();
  },
  graceMs: config.SHUTDOWN_GRACE_MS,
  timers: systemTimers,
  log: deps.log,
  exit,
});
const signals = installSignalHandlers({ proc: process, config, shutdown, exit });

if (!config.SESSION_SECRET) {
  deps.log.warn(
    "SESSION_SECRET is unset: sessions are signed with a random key that dies with this process, and a stream host refuses them; set the same SESSION_SECRET for the handlers and the stream host",
  );
}
const server = serve({ fetch: app.fetch, port: config.PORT, hostname: config.LISTEN_HOST }, (info) => {
  deps.log.info("handlers listening", { port: info.port, signals });
});
exitOnListenFailure(server, { prefix: "handlers", port: config.PORT, host: config.LISTEN_HOST, portVariable: "PORT" });
// The Lambda Web Adapter's readiness check (AWS_LWA_READINESS_CHECK_PORT): /api/health only, on loopback,
// outside the origin check of the main listener.
if (config.HEALTH_CHECK_PORT) {
  const check = new Hono();
  registerHealth(check, deps.build);
  serve({ fetch: check.fetch, port: config.HEALTH_CHECK_PORT, hostname: "127.0.0.1" });
}
