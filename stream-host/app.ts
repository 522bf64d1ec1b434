import { performance } from "node:perf_hooks";
import { Hono } from "hono";
import { requestId } from "hono/request-id";
import type pg from "pg";
import { createTokenAuthenticator } from "../lib/api-tokens/authenticate.ts";
import { type RevocationSet, createRevocationSet, revocationFeed, withRevocations } from "../lib/auth/revocations.ts";
import { type SessionTokens, createSessionTokens, sessionKeysOf } from "../lib/auth/session.ts";
import { DASHBOARD_CHANGED_CHANNEL } from "../lib/dashboards/store.ts";
import { effectiveRefreshMs } from "../lib/dashboards/spec.ts";
import { type VariableOptionsCache, createVariableOptionsCache } from "../lib/dashboards/variables.ts";
import { getSourceInWorkspace } from "../lib/sources/index.ts";
import { onError } from "../lib/http/problem.ts";
import { accessLog } from "../lib/log/access.ts";
import { createMetricsGate } from "../lib/metrics-gate/gate.ts";
import { registerMetrics } from "../lib/metrics-gate/route.ts";
import { registerHealth } from "../lib/probes/health.ts";
import { registerReady } from "../lib/probes/ready.ts";
import type { QueryRunner } from "../lib/query/runner.ts";
import type { ServiceDeps } from "../lib/service/deps.ts";
import { configStoreFault } from "../lib/store/faults.ts";
import { createNotificationListener, listenerClientFactory } from "../lib/store/listen.ts";
import { withConfigStoreClient } from "../lib/store/deadline.ts";
import { getWorkspace } from "../lib/workspaces/store.ts";
import { createStreamAccess } from "./access.ts";
import { createSessionStreams } from "./session-streams.ts";
import { createDashboardSync, loadDashboard } from "./dashboards.ts";
import { createHub } from "./hub.ts";
import { createKeyedLimiter } from "./limiter.ts";
import type { LoadedDashboard, RunPanel } from "./poller.ts";
import { panelRunnerWith, runnerUnavailable, unavailableRunPanel } from "./run-panel.ts";
import { createViewVariables } from "./view-variables.ts";
import { DEFAULT_MAX_BUFFERED_BYTES, drainingFrame, drainRetryMs } from "./sse.ts";
import { registerStream } from "./stream-route.ts";
import { type Timers, systemTimers } from "../lib/lifecycle/timers.ts";

export type StreamHostDeps = ServiceDeps;

/** Seams and tuning of the stream host; every one has a production default. */
export interface StreamHostOptions {
  /** Session verification; default: HS256 tokens from SESSION_SECRET (no secret: every stream is 401). */
  sessions?: Pick<SessionTokens, "verifySession"> | null;
  /**
   * Revoked sessions, mirrored from the config store by this host's listener (which `start` or the
   * first stream request opens). Default: a set of its own; with `listen: false`, one that sees only
   * revocations added in process. The all-in-one process shares one set with the handlers.
   */
  revocations?: RevocationSet;
  /** Runs one panel through the guarded runner. */
  runPanel?: RunPanel;
  /** The guarded runner, when `runPanel` is not given: panels run through it and the drain closes it. */
  queryRunner?: QueryRunner;
  /**
   * Query variables' options, one cache per process shared by every view and viewer (lib/dashboards/variables.ts).
   * Default: a cache on `queryRunner` (without one, query variables fail and custom ones work).
   */
  variableOptions?: VariableOptionsCache;
  /** Drain step 4: awaits in-flight metric queries and releases the runner's pools. */
  closeQueries?: () => Promise<void>;
  /** Connection for LISTEN on dashboard changes and session revocations; `false` disables listening (tests). */
  listen?: (() => pg.Client) | false;
  /** Reads a dashboard, on `db` when given (a stream's bounded client), else on the pool. */
  loadDashboard?: (id: string, db?: pg.Pool | pg.PoolClient) => Promise<LoadedDashboard | null>;
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
  const load = options.loadDashboard ?? ((id: string, db?: pg.Pool | pg.PoolClient) => loadDashboard(db ?? deps.pool, id));
  const listenFactory = options.listen === undefined ? listenerClientFactory(config.DATABASE_URL) : options.listen;
  const revocations = options.revocations ?? createRevocationSet({ now: deps.now, loaded: !listenFactory });
  const baseSessions =
    options.sessions !== undefined
      ? options.sessions
      : config.SESSION_SECRET
        ? createSessionTokens({ keys: sessionKeysOf(config), ttlSeconds: config.SESSION_TTL_SECONDS, now: deps.now })
        : null;
  const sessions = baseSessions ? withRevocations(baseSessions, revocations, { timers }) : null;

  const runner = options.queryRunner;
  const closeQueries = options.closeQueries ?? (runner ? () => runner.closeAll() : undefined);

  // One options cache per process: a query variable's options are read at most once per dashboard cadence
  // whatever the number of views and viewers, both to check a stream's var-* values and to bind them.
  const variableOptions =
    options.variableOptions ??
    createVariableOptionsCache({
      runner: runner ?? { run: () => Promise.reject(runnerUnavailable()) },
      getSource: (workspaceId, sourceId) =>
        withConfigStoreClient(deps.pool, config.READINESS_CHECK_TIMEOUT_MS, (c) => getSourceInWorkspace(c, workspaceId, sourceId), {
          timers,
        }),
      config,
      now: deps.now,
    });
  const viewVariables = createViewVariables(variableOptions);

  const panels =
    !options.runPanel && runner
      ? panelRunnerWith(
          runner,
          { pool: deps.pool, now: deps.now, timers, variables: viewVariables },
          // A source read is bounded like a readiness check; a copy serves through an outage up to the stale bound.
          {
            readTimeoutMs: config.READINESS_CHECK_TIMEOUT_MS,
            staleMaxMs: config.CONFIG_STORE_STALE_MAX_MS,
            share: config.COALESCE_PANEL_QUERIES,
          },
        )
      : null;

  const hub = createHub({
    metrics,
    runPanel: options.runPanel ?? panels?.run ?? unavailableRunPanel,
    incremental:
      panels && config.INCREMENTAL_FULL_QUERY_EVERY_TICKS > 0
        ? {
            plan: panels.plan,
            options: {
              lateRowsMs: config.INCREMENTAL_LATE_ROWS_MS,
              fullEvery: config.INCREMENTAL_FULL_QUERY_EVERY_TICKS,
              maxWindowPoints: config.MAX_WINDOW_POINTS,
              maxRows: config.MAX_QUERY_ROWS,
            },
          }
        : undefined,
    limiter: createKeyedLimiter(options.sourceConcurrency ?? DEFAULT_SOURCE_CONCURRENCY),
    coalesce: config.COALESCE_PANEL_QUERIES,
    refreshMs: (spec) => effectiveRefreshMs(spec, config),
    maxViewsPerDashboard: config.MAX_VIEWS_PER_DASHBOARD,
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
  // A revocation learned here (a notification, a reload, or the all-in-one handlers' own logout)
  // ends the open streams of the sessions it covers.
  revocations.onChange(() => {
    const ended = hub.endRevoked((s) => revocations.isRevoked(s));
    if (ended > 0) log.info("streams of revoked sessions ended", { streams: ended });
  });
  // People who lose their role in a workspace (its groups changed, it was deleted, their access revoked) lose its streams.
  const access = createStreamAccess({
    hub,
    revocations,
    loadWorkspace: (id) =>
      withConfigStoreClient(deps.pool, config.READINESS_CHECK_TIMEOUT_MS, (client) => getWorkspace(client, id), { timers }),
    timers,
    log,
  });
  revocations.onChange(() => access.revocationsChanged());
  const feed = revocationFeed({ set: revocations, pool: deps.pool, now: deps.now, log });
  // One connection LISTENs for both dashboard changes and session revocations.
  const listener = listenFactory
    ? createNotificationListener({
        connect: listenFactory,
        channels: { [DASHBOARD_CHANGED_CHANNEL]: (id) => void sync.changed(id), ...feed.channels, ...access.channels },
        onListening: async (reconnected) => {
          await feed.reload();
          if (reconnected) {
            void sync.resync();
            void access.recheckAll();
          }
        },
        timers,
        log,
      })
    : null;

  let listening = false;
  let started = false;
  let heartbeat: unknown = null;
  let draining = false;
  /** The listener opens at start, or with the first stream request when the caller did not start the host. */
  function startListening() {
    if (listening || draining) return;
    listening = true;
    void listener?.start();
  }
  /** The heartbeat starts with the first stream. */
  function onFirstSubscriber() {
    if (started || draining) return;
    started = true;
    const every = options.heartbeatMs ?? HEARTBEAT_MS;
    // A view that wrote within the last half interval is skipped: at most 1.5 intervals pass without a byte.
    heartbeat = timers.setInterval(() => hub.heartbeat(every / 2), every);
  }

  const app = new Hono();
  app.use(requestId());
  // One access line per request (lib/log/access.ts), as the handlers write.
  app.use(accessLog({ log, monotonic }));
  app.onError(onError((line) => log.error(String(line.msg), line), configStoreFault));
  registerHealth(app, deps.build);
  registerReady(app, deps.readiness);
  registerMetrics(app, {
    gate: createMetricsGate({ token: () => config.METRICS_TOKEN, cidrs: config.metricsAllowedCidrs }),
    registry: metrics.registry,
  });
  registerStream(app, {
    hub,
    sessionStreams: createSessionStreams(config.STREAMS_PER_SESSION_MAX),
    sessions,
    isRevoked: (s) => revocations.isRevoked(s),
    cookieName: config.SESSION_COOKIE_NAME,
    tokens: createTokenAuthenticator({
      pool: deps.pool,
      ratePerMinute: () => config.API_TOKEN_RATE_PER_MINUTE,
      isRevoked: (s) => revocations.isRevoked(s),
      now: deps.now,
    }),
    pool: deps.pool,
    configStoreTimeoutMs: config.READINESS_CHECK_TIMEOUT_MS,
    timers,
    drain: deps.drain,
    loadDashboard: load,
    savedRefreshMs: (spec) => effectiveRefreshMs(spec, config),
    minRefreshMs: config.MIN_REFRESH_INTERVAL_MS,
    selectVariables: viewVariables.select,
    now: deps.now,
    random,
    maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    compression: config.STREAM_COMPRESSION,
    onRequest: startListening,
    onFirstSubscriber,
  });

  let flushed: Promise<void> = Promise.resolve();

  return {
    app,
    hub,
    revocations,
    /** The process's query-variable options (tests count its entries). */
    variableOptions,
    access,
    /**
     * Opens the config-store listener (dashboard changes, session revocations) and loads the
     * revocations, so the first stream is checked without waiting. Entry points call it at boot.
     */
    start(): void {
      startListening();
    },
    /** Resolves when the config-store listener is LISTENing and the revocations are loaded. */
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
