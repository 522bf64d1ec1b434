import { performance } from "node:perf_hooks";
import { Hono } from "hono";
import { requestId } from "hono/request-id";
import type pg from "pg";
import { type SessionTokens, createSessionTokens } from "../lib/auth/session.ts";
import { effectiveRefreshMs } from "../lib/dashboard/spec.ts";
import { onError } from "../lib/http/problem.ts";
import { createMetricsGate } from "../lib/metrics-gate/gate.ts";
import { registerMetrics } from "../lib/metrics-gate/route.ts";
import { registerHealth } from "../lib/probes/health.ts";
import { registerReady } from "../lib/probes/ready.ts";
import type { QueryRunner } from "../lib/query/runner.ts";
import type { ServiceDeps } from "../lib/service/deps.ts";
import { createDashboardListener, createDashboardSync, listenerClientFactory, loadDashboard } from "./dashboards.ts";
import { createHub } from "./hub.ts";
import { createKeyedLimiter } from "./limiter.ts";
import type { LoadedDashboard, RunPanel } from "./poller.ts";
import { runPanelWith, unavailableRunPanel } from "./run-panel.ts";
import { DEFAULT_MAX_BUFFERED_BYTES, drainingFrame, drainRetryMs } from "./sse.ts";
import { registerStream } from "./stream-route.ts";
import { type Timers, systemTimers } from "../lib/lifecycle/timers.ts";

export type StreamHostDeps = ServiceDeps;

/** Seams and tuning of the stream host; every one has a production default. */
export interface StreamHostOptions {
  /** Session verification; default: HS256 tokens from SESSION_SECRET (no secret: every stream is 401). */
  sessions?: Pick<SessionTokens, "verifyWithExpiry"> | null;
  /** Runs one panel through the guarded runner. */
  runPanel?: RunPanel;
  /** The guarded runner, when `runPanel` is not given: panels run through it and the drain closes it. */
  queryRunner?: QueryRunner;
  /** Drain step 4: awaits in-flight metric queries and releases the runner's pools. */
  closeQueries?: () => Promise<void>;
  /** Connection for LISTEN on dashboard changes; `false` disables listening (tests). */
  listen?: (() => pg.Client) | false;
  loadDashboard?: (id: string) => Promise<LoadedDashboard | null>;
  timers?: Timers;
  /** Monotonic milliseconds for tick durations. */
  monotonic?: () => number;
  /** Source of the per-stream drain retry delay. */
  random?: () => number;
  /** Queries one source may run at once across every poller of this process. */
  sourceConcurrency?: number;
  /** Unread bytes after which a subscriber is dropped. */
  maxBufferedBytes?: number;
  heartbeatMs?: number;
}

/** Default per-source concurrency: below a source pool's size, so pollers never queue inside the runner. */
export const DEFAULT_SOURCE_CONCURRENCY = 4;
export const HEARTBEAT_MS = 15_000;

/**
 * The always-on stream host: SSE streams with shared pollers, /api/metrics behind its gate, and the
 * probes. `app` is a Hono app; served by @hono/node-server, streams are written straight to Node's
 * response. `beginDrain`/`settle` are drain steps 2-3 and 4 (lib/lifecycle/shutdown.ts runs them).
 */
export function createStreamHost(deps: StreamHostDeps, options: StreamHostOptions = {}) {
  const { config, metrics, log } = deps;
  const timers = options.timers ?? systemTimers;
  const monotonic = options.monotonic ?? (() => performance.now());
  const random = options.random ?? Math.random;
  const load = options.loadDashboard ?? ((id: string) => loadDashboard(deps.pool, id));
  const sessions =
    options.sessions !== undefined
      ? options.sessions
      : config.SESSION_SECRET
        ? createSessionTokens({ secret: config.SESSION_SECRET, ttlSeconds: config.SESSION_TTL_SECONDS })
        : null;

  const runner = options.queryRunner;
  const closeQueries = options.closeQueries ?? (runner ? () => runner.closeAll() : undefined);

  const hub = createHub({
    metrics,
    runPanel: options.runPanel ?? (runner ? runPanelWith(runner, deps) : unavailableRunPanel),
    limiter: createKeyedLimiter(options.sourceConcurrency ?? DEFAULT_SOURCE_CONCURRENCY),
    refreshMs: (spec) => effectiveRefreshMs(spec, config),
    timers,
    now: deps.now,
    monotonic,
    log,
  });

  const sync = createDashboardSync({
    load,
    isActive: (id) => hub.current(id) !== undefined,
    apply: (d) => hub.applyDashboard(d),
    remove: (id) => hub.removeDashboard(id),
    activeIds: () => hub.activeIds(),
    log,
  });
  const listenFactory = options.listen === undefined ? listenerClientFactory(config.DATABASE_URL) : options.listen;
  const listener = listenFactory
    ? createDashboardListener({
        connect: listenFactory,
        onChange: (id) => void sync.changed(id),
        onResync: () => void sync.resync(),
        timers,
        log,
      })
    : null;

  let started = false;
  let heartbeat: unknown = null;
  let draining = false;
  /** Background work starts with the first stream, so a host nobody streams from holds no connection. */
  function onFirstSubscriber() {
    if (started || draining) return;
    started = true;
    heartbeat = timers.setInterval(() => hub.heartbeat(), options.heartbeatMs ?? HEARTBEAT_MS);
    void listener?.start();
  }

  const app = new Hono();
  app.use(requestId());
  app.onError(onError((line) => log.error(String(line.msg), line)));
  registerHealth(app, deps.build);
  registerReady(app, deps.readiness);
  registerMetrics(app, {
    gate: createMetricsGate({ token: config.METRICS_TOKEN, cidrs: config.metricsAllowedCidrs }),
    registry: metrics.registry,
  });
  registerStream(app, {
    hub,
    sessions,
    cookieName: config.SESSION_COOKIE_NAME,
    pool: deps.pool,
    drain: deps.drain,
    loadDashboard: load,
    random,
    maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    onFirstSubscriber,
  });

  let flushed: Promise<void> = Promise.resolve();

  return {
    app,
    hub,
    /** Resolves when the dashboard change listener is LISTENing (it starts with the first stream). */
    listenerReady: (): Promise<void> => listener?.ready ?? Promise.resolve(),
    /** True while the change listener's connection is up. */
    listenerConnected: (): boolean => listener?.connected ?? false,
    /**
     * Drain steps 2 and 3, synchronously: every poller stops (no new metric query), then every open
     * stream gets `retry:` with its own random delay and `event: draining`, and is closed. Call it
     * after setting the drain flag. The promise resolves when the frames reached the sockets.
     */
    beginDrain(): Promise<void> {
      if (draining) return flushed;
      draining = true;
      hub.stopPollers();
      if (heartbeat !== null) timers.clearInterval(heartbeat);
      heartbeat = null;
      flushed = hub.closeAll(() => drainingFrame(drainRetryMs(random)));
      return flushed;
    },
    /**
     * Drain step 4 (the stream host's part): the change listener closes, reloads and ticks in flight
     * settle, and the runner's in-flight queries finish and its pools are released. The config-store
     * pool belongs to the entry point, which ends it after this.
     */
    async settle(): Promise<void> {
      await Promise.all([flushed, listener?.close(), sync.stop(), hub.idle()]);
      await closeQueries?.();
    },
  };
}

export type StreamHost = ReturnType<typeof createStreamHost>;
