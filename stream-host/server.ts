import { serve } from "@hono/node-server";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { exitOnListenFailure } from "../lib/service/listen-failure.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { buildQueryServices } from "../lib/service/query-services.ts";
import { type StreamHostOptions, createStreamHost } from "./app.ts";
import { createShutdown, installSignalHandlers } from "../lib/lifecycle/shutdown.ts";
import { systemTimers } from "../lib/lifecycle/timers.ts";
import { createLogger } from "../lib/log/logger.ts";
import { resolveAppSecretsOrExit } from "../lib/secrets/boot.ts";
import { createTaskStopWatcher } from "./task-stop-watcher.ts";

/**
 * Runs the stream host as its own process: validated config (every problem printed, exit 1),
 * dependencies built once, the guarded runner, the HTTP listener on STREAM_PORT and the signal
 * handlers of the instance lifecycle. `options` replaces seams (the runner) for tests and benches.
 */
export async function startStreamHost(
  opts: { env?: Record<string, string | undefined>; options?: StreamHostOptions; exit?: (code: number) => void } = {},
) {
  // In the cloud the secrets come from Secrets Manager (APP_SECRETS_AWS), read before the config is parsed.
  const secrets = await resolveAppSecretsOrExit(opts.env ?? process.env, { timers: systemTimers, log: createLogger() });
  const config = loadConfigOrExit(secrets.env);
  const deps = buildServiceDeps(config);
  secrets.keepFresh(config);
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  let wired = {};
  if (!opts.options?.runPanel) {
    const { queryRunner: runner } = await buildQueryServices(config, deps.metrics);
    wired = {
      queryRunner: runner,
      closeQueries: async () => {
        // pg-pool's end() inside closeAll resolves only once every checked-out source client is back.
        await runner.closeAll();
        deps.log.info("metric queries settled", { inFlight: runner.inFlight() });
      },
    };
  }
  const host = createStreamHost(deps, { ...wired, ...opts.options });
  // The config-store listener (dashboard changes, session revocations) opens at boot, so the first
  // stream's session is checked against revocations that are already loaded.
  host.start();

  const shutdown = createShutdown({
    drain: deps.drain,
    host,
    // pg-pool's end() resolves only once every checked-out client has been released and closed.
    closeStores: async () => {
      // Readiness's own connection first (draining readiness answers without it), then the pool.
      await deps.readiness.close();
      await deps.pool.end();
      const { totalCount, idleCount, waitingCount } = deps.pool;
      deps.log.info("config store released", { totalCount, idleCount, waitingCount });
    },
    graceMs: config.SHUTDOWN_GRACE_MS,
    timers: systemTimers,
    log: deps.log,
    exit,
  });
  const signals = installSignalHandlers({ proc: process, config, shutdown, exit });
  // On ECS the stop is announced by the task metadata before SIGTERM; draining then reaches every stream
  // while the load balancer still holds it. The signal only finishes what this began.
  const taskWatcher =
    config.ECS_CONTAINER_METADATA_URI_V4 && signals === "drain"
      ? createTaskStopWatcher({
          metadataUri: config.ECS_CONTAINER_METADATA_URI_V4,
          intervalMs: config.TASK_STOP_POLL_MS,
          onStopping: () => shutdown.begin("ecs_task_stopping"),
          fetch: deps.fetch,
          timers: systemTimers,
          log: deps.log,
        })
      : null;
  taskWatcher?.start();

  if (!config.SESSION_SECRET) {
    deps.log.warn(
      "SESSION_SECRET is unset: this stream host refuses every session (401); set the same SESSION_SECRET as the handlers",
    );
  }
  const server = serve({ fetch: host.app.fetch, port: config.STREAM_PORT, hostname: config.LISTEN_HOST }, (info) => {
    deps.log.info("stream host listening", { port: info.port, signals, taskStopWatch: taskWatcher !== null });
  });
  exitOnListenFailure(server, {
    prefix: "stream host",
    port: config.STREAM_PORT,
    host: config.LISTEN_HOST,
    portVariable: "STREAM_PORT",
  }, (line) => {
    process.stderr.write(`${line}\n`);
    exit(1);
  });
  return { config, deps, host, server, shutdown, taskWatcher };
}
