import type { Config } from "../lib/config/parse.ts";
import { closeConfigStore, serveProcess } from "../lib/lifecycle/serve.ts";
import { systemTimers } from "../lib/lifecycle/timers.ts";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { loadConfig } from "../lib/service/load-config.ts";
import { buildQueryServices } from "../lib/service/query-services.ts";
import { type StreamHostOptions, createStreamHost } from "./app.ts";
import { createTaskStopWatcher } from "./task-stop-watcher.ts";

/**
 * The stream host's dependencies, built once: the service deps and, unless `options` brings its own panel
 * runner (tests, benches), the guarded query runner, which the drain closes (step 4).
 */
async function buildDeps(config: Config, options: StreamHostOptions = {}) {
  const deps = buildServiceDeps(config);
  if (options.runPanel) return { deps, options };
  const { queryRunner } = await buildQueryServices(config, deps.metrics);
  const closeQueries = async () => {
    // pg-pool's end() inside closeAll resolves only once every checked-out source client is back.
    await queryRunner.closeAll();
    deps.log.info("metric queries settled", { inFlight: queryRunner.inFlight() });
  };
  return { deps, options: { queryRunner, closeQueries, ...options } };
}

/**
 * Runs the stream host as its own process: load config (every problem printed, exit 1) → build deps →
 * serve on STREAM_PORT → on signal drain and close, as the handlers and `npm start` do. `options` replaces
 * seams (the runner) for tests and benches.
 */
export async function startStreamHost(
  opts: { env?: Record<string, string | undefined>; options?: StreamHostOptions; exit?: (code: number) => void } = {},
) {
  // In the cloud the secrets come from Secrets Manager (APP_SECRETS_AWS), read before the config is parsed.
  const config = await loadConfig(opts.env ?? process.env);
  const { deps, options } = await buildDeps(config, opts.options);
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const host = createStreamHost(deps, options);
  // The config-store listener (dashboard changes, session revocations) opens at boot, so the first
  // stream's session is checked against revocations that are already loaded.
  host.start();

  if (!config.SESSION_SECRET) {
    deps.log.warn("SESSION_SECRET is unset: this stream host refuses every session (401); set the same SESSION_SECRET as the handlers");
  }
  let taskWatcher: ReturnType<typeof createTaskStopWatcher> | null = null;
  const { server, shutdown, signals } = serveProcess({
    name: "stream host",
    config,
    port: config.STREAM_PORT,
    portVariable: "STREAM_PORT",
    fetch: host.app.fetch,
    drain: deps.drain,
    host,
    closeStores: async () => {
      await closeConfigStore(deps);
      const { totalCount, idleCount, waitingCount } = deps.pool;
      deps.log.info("config store released", { totalCount, idleCount, waitingCount });
    },
    log: deps.log,
    exit,
    onListening: ({ port, signals }) => deps.log.info("stream host listening", { port, signals, taskStopWatch: taskWatcher !== null }),
  });
  // On ECS the stop is announced by the task metadata before SIGTERM; draining then reaches every stream
  // while the load balancer still holds it. The signal only finishes what this began.
  if (config.ECS_CONTAINER_METADATA_URI_V4 && signals === "drain") {
    taskWatcher = createTaskStopWatcher({
      metadataUri: config.ECS_CONTAINER_METADATA_URI_V4,
      intervalMs: config.TASK_STOP_POLL_MS,
      onStopping: () => shutdown.begin("ecs_task_stopping"),
      fetch: deps.fetch,
      timers: systemTimers,
      log: deps.log,
    });
    taskWatcher.start();
  }
  return { config, deps, host, server, shutdown, taskWatcher };
}
