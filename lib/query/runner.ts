import type pg from "pg";
import type { Config } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { SecretResolver } from "../secrets/resolver.ts";
import { elapsedMs } from "../live/frames.ts";
import { type IncrementalVerdict, planIncremental } from "../live/incremental.ts";
import { loadGuardParser, parseTree } from "../sql-guard/index.ts";
import { intervalFor as defaultIntervalFor } from "../sql-guard/interval.ts";
import { seriesRowsProblem } from "../sql-guard/series.ts";
import type { Guard, MacroParam, VariableDecl } from "../sql-guard/verdict.ts";
import { type HostPolicy, hostPolicyFromConfig } from "../sources/host-policy.ts";
import { type Source, catalogVersion } from "../sources/store.ts";
import { classifySourceFailure, queryError, sourceUnavailable } from "./errors.ts";
import { type SourceConnector, createConnectionBudget, createSourcePool, poolKey } from "./pools.ts";
import { QueryStalledError, ReadOnlyPortal } from "./portal.ts";
import type { QueryResult, TimeRange } from "./types.ts";
import { SOURCE_LIMITS_SQL, type SourceLimits, sourceLimitsFromRow } from "./source-limits.ts";
import { variableValue } from "./variable-values.ts";
import { type CoalesceStats, createCoalescer } from "./coalesce.ts";
import { rowsTruncation, stepMsOf, withBuckets } from "./result-notes.ts";
import { shapeOf } from "./time-shape.ts";
import { fixedMessages, isoTimestamp } from "./wire.ts";

const TIMESTAMPTZ_OID = 1184;
const INTERVAL_OID = 1186;

export interface QueryRunnerOptions {
  config: Pick<
    Config,
    | "QUERY_TIMEOUT_SECONDS"
    | "MAX_QUERY_ROWS"
    | "MAX_RESULT_BYTES"
    | "MAX_WINDOW_POINTS"
    | "SOURCE_POOLS_MAX"
    | "SOURCE_HOST_CONNECTIONS_MAX"
    | "SOURCE_HOST_WORKSPACE_SHARE_PERCENT"
  > &
    Parameters<typeof hostPolicyFromConfig>[0];
  metrics: Pick<Metrics, "observeQuery" | "countGuardRejection" | "dropSource">;
  guard: Guard;
  /** The `$__interval` value for a range; defaults to lib/sql-guard's intervalFor. */
  intervalFor?: (fromMs: number, toMs: number, maxPoints: number) => string;
  secrets: SecretResolver;
  /** Monotonic milliseconds for durations. */
  now?: () => number;
  /** Epoch milliseconds, to tell whether a result's last bucket is still filling. */
  wallNow?: () => number;
  /** Connections per source pool. */
  poolMax?: number;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** How long past QUERY_TIMEOUT_SECONDS the runner waits for a silent server before closing the connection. */
  stallGraceMs?: number;
  /** How often, after closing a stalled statement's connection, the runner asks the source whether its backend ended. */
  endedPollMs?: number;
  /** Where sources may connect, checked on every new connection; built from config (SOURCE_ALLOWED_HOSTS, ...) when omitted. */
  hostPolicy?: HostPolicy;
  /** Socket factory of source connections (tests record attempts instead of connecting). */
  connector?: SourceConnector;
  /** How long a shared run's result serves identical runs that arrive after it came in (`RunRequest.share`). */
  shareKeepMs?: number;
}

export type { SourceLimits } from "./source-limits.ts";

/** Counters of one execution, filled in as it reads (tests assert that a capped read stopped early). */
export interface ReadStats {
  rowsRead: number;
  bytes: number;
  wireBytes: number;
}

/**
 * Who hears that a statement outlived its timeout and is being held, with the coded error that names the cause
 * (`query_timeout`, reason `query_held`), once per held statement. A source that does not answer (a frozen host) or
 * runs a statement that ignores the cancel keeps the statement's backend busy after the runner's watchdog closed the
 * connection; the runner then holds the statement, and the caller's query slot, until the source confirms the
 * backend ended (docs/query-runner.md). Meanwhile the caller can already say why its panel has nothing new.
 */
export type HeldListener = (notice: AppError) => void;

/** One statement on a source's pool, without the guard: the execution step of a guarded query. */
export interface ExecuteRequest {
  source: Source;
  sql: string;
  values?: readonly (string | null)[];
  /** Parameter type OIDs, in `$n` order (0 lets the server infer). */
  paramTypes?: readonly number[];
  /** Defaults to MAX_QUERY_ROWS / MAX_RESULT_BYTES; internal reads (catalog refresh) may pass their own. */
  maxRows?: number;
  maxBytes?: number;
  stats?: ReadStats;
  /** Once aborted, a statement still waiting for its connection is never sent (the stream host's stopped pollers). */
  signal?: AbortSignal;
  /**
   * Told once when the statement outlived its timeout and the source has not confirmed that it ended: the
   * runner keeps holding it (and the caller its slot) until the source does.
   */
  onHeld?: HeldListener;
}

export interface RunRequest {
  source: Source;
  /** The workspace acting; must be the source's own. */
  workspaceId?: string;
  sql: string;
  range: TimeRange;
  /** See ExecuteRequest.signal. */
  signal?: AbortSignal;
  /** See ExecuteRequest.onHeld. */
  onHeld?: HeldListener;
  /** The dashboard's variables the statement may name (the guard refuses any other `$name`). */
  variables?: readonly VariableDecl[];
  /** Each variable's resolved values (lib/dashboards/variables.ts), bound as parameters, never spliced. */
  variableValues?: Readonly<Record<string, readonly string[]>>;
  /**
   * Read only this part of the range: `$__timeFrom()`/`$__timeTo()` bind the window's ends while
   * `$__interval` stays the whole range's, so the buckets are the same (an incremental tick,
   * lib/live/incremental.ts).
   */
  window?: TimeRange;
  /**
   * Share the query with identical runs (lib/query/coalesce.ts): a run of the same source (so the same
   * workspace), the same guarded statement with the same bound values over the same range, for the same
   * tick instant `at`, waits for the one in flight or takes its result when it came in moments ago. The
   * stream host's pollers tick on a shared grid per cadence, so panels of different dashboards and views
   * meet here.
   */
  share?: { at: number };
}

export interface PoolStats {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** Guarded queries against metrics stores (docs/query-runner.md). */
export interface QueryRunner {
  /** Guard (rejections counted, never touching the database), then execute with the range's macro values. */
  run(req: RunRequest): Promise<QueryResult>;
  /** The unguarded execution step: read-only transaction, timeout, row and byte caps, metrics. */
  execute(req: ExecuteRequest): Promise<QueryResult>;
  /**
   * Whether a statement may tick incrementally on the source (lib/live/incremental.ts), decided on the
   * guard's expansion and the parser's tree; never touches the database, counts no rejection.
   */
  plan(req: Pick<RunRequest, "source" | "sql" | "variables">): IncrementalVerdict;
  /**
   * Connects with the source's credentials and runs `SELECT 1` the same guarded way. A failed test ends the
   * source's pool. `stored: false` (a source not saved yet) records no metric series and ends the pool after.
   */
  testConnection(source: Source, opts?: { stored?: boolean }): Promise<{ elapsedMs: number; limits: SourceLimits }>;
  /** Ends a source's pool (once its checked-out clients return): the source was deleted or its connection changed. */
  evict(sourceId: string): void;
  /** A deleted source: ends its pool like `evict` and drops its metric series. */
  forget(sourceId: string): void;
  /** Statements currently executing. */
  inFlight(): number;
  /** Shared runs (RunRequest.share): queries started, and runs served by one of them. */
  readonly shared: CoalesceStats;
  /** Pool counters of a source, or null before its first query. */
  poolStats(sourceId: string): PoolStats | null;
  /** Refuses new statements, then ends every pool once every checked-out client has been released. */
  closeAll(): Promise<void>;
}

interface PoolEntry {
  key: string;
  /** The connection parameters the pool was built for (compared field by field on every statement). */
  params: Pick<Source, "host" | "port" | "database" | "sslmode" | "secretRef">;
  pool: pg.Pool;
}

function sameConnection(a: PoolEntry["params"], b: Source): boolean {
  return a.host === b.host && a.port === b.port && a.database === b.database && a.sslmode === b.sslmode && a.secretRef === b.secretRef;
}

/** Pool settings of a source used when the options leave them out (the runner bench gives bare `pg` the same). */
export const SOURCE_POOL_DEFAULTS = { poolMax: 5, connectTimeoutMs: 10_000, idleTimeoutMs: 30_000 } as const;

/** The portal learns of a dying connection through pg; the client's own error event only needs a listener. */
function ignoreClientError(): void {}

/** A checkout waiting for its client, which closeAll can refuse. */
interface PendingCheckout {
  reject: (err: Error) => void;
  /** The pool answered it, or the drain refused it; whichever comes second is ignored. */
  answered: boolean;
}

/**
 * Ends a client at once (the socket is destroyed, so the server stops sending). A factory rather than an inline
 * arrow: the bundles keep function names, which costs a defineProperty for every named closure created per statement.
 */
function ender(client: pg.PoolClient): () => void {
  return () => void client.end().catch(ignoreClientError);
}

/** Builds the runner; pools are created lazily per source and keyed by its connection parameters. */
export function createQueryRunner(opts: QueryRunnerOptions): QueryRunner {
  const { config, metrics, guard, secrets } = opts;
  const now = opts.now ?? (() => performance.now());
  const timeoutMs = config.QUERY_TIMEOUT_SECONDS * 1000;
  const stallGraceMs = opts.stallGraceMs ?? 5_000;
  // Least recently used first (a use moves an entry to the end), so the cap closes the pool idle the longest.
  const pools = new Map<string, PoolEntry>();
  const hostPolicy = opts.hostPolicy ?? hostPolicyFromConfig(config);
  const budget = createConnectionBudget(config.SOURCE_HOST_CONNECTIONS_MAX, config.SOURCE_HOST_WORKSPACE_SHARE_PERCENT);
  const ending = new Set<Promise<void>>();
  // Connections holding the pipeline's fixed named statements (entries die with their connection).
  const prepared = new WeakSet<object>();
  const fixed = fixedMessages(timeoutMs);
  const coalescer = createCoalescer({ keepMs: opts.shareKeepMs });
  // The held-notice listeners of the runs sharing each query in flight (by the coalescer's key), and the
  // notice once the query is held.
  const heldRuns = new Map<string, { listeners: Set<HeldListener>; notice?: AppError }>();
  let running = 0;
  let closed = false;

  function endPool(pool: pg.Pool): void {
    const p = pool.end().catch(() => {});
    ending.add(p);
    void p.finally(() => ending.delete(p));
  }

  function evict(sourceId: string): void {
    const entry = pools.get(sourceId);
    if (!entry) return;
    pools.delete(sourceId);
    endPool(entry.pool);
  }

  /** Makes room for one more pool: closes the least recently used idle one, or refuses when every pool is busy. */
  function makeRoom(sourceId: string): void {
    if (pools.size < config.SOURCE_POOLS_MAX) return;
    for (const [id, entry] of pools) {
      const { totalCount, idleCount, waitingCount } = entry.pool;
      if (totalCount === idleCount && waitingCount === 0) {
        evict(id);
        return;
      }
    }
    throw new AppError(
      "source_unavailable",
      `Source ${sourceId} is unavailable (pool_limit): this instance is connected to SOURCE_POOLS_MAX busy sources.`,
      { cause: "pool_limit" },
    );
  }

  function poolFor(source: Source): PoolEntry {
    const existing = pools.get(source.id);
    if (existing && sameConnection(existing.params, source)) {
      pools.delete(source.id);
      pools.set(source.id, existing);
      return existing;
    }
    const key = poolKey(source);
    // Connection parameters changed: new pool; the old one ends once its checked-out clients return.
    if (existing) evict(source.id);
    else makeRoom(source.id);
    const { host, port, database, sslmode, secretRef } = source;
    const entry: PoolEntry = {
      key,
      params: { host, port, database, sslmode, secretRef },
      pool: createSourcePool({
        source,
        // The host checked is the host this pool connects to (a changed host makes a new pool).
        credentials: () => secrets.resolve(source.secretRef, source.workspaceId, source.host, source.port),
        target: () => hostPolicy.check(source),
        budget,
        connector: opts.connector,
        max: opts.poolMax ?? SOURCE_POOL_DEFAULTS.poolMax,
        timeoutMs,
        connectTimeoutMs: opts.connectTimeoutMs ?? SOURCE_POOL_DEFAULTS.connectTimeoutMs,
        idleTimeoutMs: opts.idleTimeoutMs ?? SOURCE_POOL_DEFAULTS.idleTimeoutMs,
      }),
    };
    pools.set(source.id, entry);
    return entry;
  }

  const draining = () => new AppError("source_unavailable", "The query runner is shutting down.", { cause: "draining" });
  // Checkouts still waiting for a client: pg-pool never answers one still waiting when its pool ends, so closeAll
  // fails them. Each entry leaves the set as soon as its checkout is answered (a promise raced against one shared
  // "drained" promise would instead leave a reaction on it per statement until the drain).
  const waiting = new Set<PendingCheckout>();

  // Statements in flight and when each started. One sweep a second stops a statement whose source has been
  // silent past QUERY_TIMEOUT_SECONDS plus the grace: cheaper than a timer armed and cleared per statement.
  const watched = new Map<ReadOnlyPortal, number>();
  let sweeper: NodeJS.Timeout | null = null;
  function watch(portal: ReadOnlyPortal, started: number): void {
    watched.set(portal, started);
    if (sweeper) return;
    sweeper = setInterval(
      () => {
        const deadline = now() - timeoutMs - stallGraceMs;
        for (const [p, started] of watched) if (started <= deadline) p.stop(new QueryStalledError());
        if (watched.size === 0 && sweeper) {
          clearInterval(sweeper);
          sweeper = null;
        }
      },
      Math.max(100, Math.min(1000, stallGraceMs)),
    );
    sweeper.unref();
  }
  function unwatch(portal: ReadOnlyPortal): void {
    watched.delete(portal);
  }

  function connectOnce(pool: pg.Pool): Promise<pg.PoolClient> {
    return new Promise((resolve, reject) => {
      const pending: PendingCheckout = { reject, answered: false };
      waiting.add(pending);
      pool.connect((err, client, release) => {
        // Lost the race to the drain: a client that still arrives goes straight back (the ending pool closes it).
        if (pending.answered) {
          if (client) release();
          return;
        }
        pending.answered = true;
        waiting.delete(pending);
        if (err || !client) reject(err ?? new Error("the pool returned no client"));
        else resolve(client);
      });
    });
  }

  async function checkout(entry: PoolEntry, source: Source): Promise<pg.PoolClient> {
    try {
      return await connectOnce(entry.pool);
    } catch (err) {
      if (err instanceof AppError) throw err;
      const options = (entry.pool as unknown as { options: { ssl: unknown } }).options;
      // sslmode allow/prefer: a server without TLS is used in plain text, as libpq does.
      if ((source.sslmode === "prefer" || source.sslmode === "allow") && options.ssl && classifySourceFailure(err) === "ssl_unsupported") {
        options.ssl = false;
        try {
          return await connectOnce(entry.pool);
        } catch (again) {
          if (again instanceof AppError) throw again;
          throw sourceUnavailable(source.id, again);
        }
      }
      throw sourceUnavailable(source.id, err);
    }
  }

  async function execute(req: ExecuteRequest, observe = true): Promise<QueryResult> {
    const { source } = req;
    if (closed) throw draining();
    const maxBytes = req.maxBytes ?? config.MAX_RESULT_BYTES;
    const started = now();
    const onHeld = req.onHeld;
    running++;
    let rows = 0;
    let ok = false;
    try {
      // A NUL would end the statement text early on the wire; the guard refuses it too.
      if (req.sql.includes("\0")) throw new AppError("bad_request", "The statement contains a NUL character.");
      // Every statement, not only every connection: a revoked grant is refused even on a warm pool. The host is
      // checked with it (SOURCE_SECRET_HOSTS, host and port), so a source pointed elsewhere never gets to a credential lookup.
      secrets.checkGrant(source.secretRef, source.workspaceId, source.host, source.port);
      const client = await checkout(poolFor(source), source);
      if (req.signal?.aborted) {
        client.release();
        throw draining();
      }
      const portal = new ReadOnlyPortal({
        text: req.sql,
        values: req.values ?? [],
        paramTypes: req.paramTypes ?? [],
        maxRows: req.maxRows ?? config.MAX_QUERY_ROWS,
        maxBytes,
        fixed,
        abort: ender(client),
        prepared,
      });
      // A checked-out client has no pool listener; a dying socket must reach the portal, not crash the process.
      client.on("error", ignoreClientError);
      watch(portal, started);
      let failure: unknown;
      let released = false;
      try {
        client.query(portal as unknown as pg.Submittable);
        const result = await portal.done;
        rows = result.rows.length;
        ok = true;
        return { columns: result.columns, rows: result.rows, truncated: result.truncated, elapsedMs: elapsedMs(now() - started) };
      } catch (err) {
        failure = err;
        if (err instanceof QueryStalledError) {
          // The source did not answer: a statement that does not check for cancellation keeps its backend busy
          // after the socket closes. The statement (and the caller's slot) ends only when the server says so.
          unwatch(portal);
          client.removeListener("error", ignoreClientError);
          client.release(err);
          released = true;
          const held = new AppError(
            "query_timeout",
            `The query outlived QUERY_TIMEOUT_SECONDS (${config.QUERY_TIMEOUT_SECONDS} s) and the source has not confirmed that it ended; its query slot stays held until the source does.`,
            { reason: "query_held", timeoutSeconds: config.QUERY_TIMEOUT_SECONDS },
          );
          err.keptRunningMs = await untilBackendEnded(source, (client as unknown as { processID?: number }).processID, () => {
            try {
              onHeld?.(held);
            } catch {
              // A listener's failure must not end the hold early.
            }
          });
        }
        throw queryError(err, { sourceId: source.id, timeoutSeconds: config.QUERY_TIMEOUT_SECONDS, maxBytes });
      } finally {
        unwatch(portal);
        if (req.stats) {
          req.stats.rowsRead = portal.rowsRead;
          req.stats.bytes = portal.bytes;
          req.stats.wireBytes = portal.wireBytes;
        }
        if (!released) {
          client.removeListener("error", ignoreClientError);
          // A client whose statement failed is destroyed, never returned: its session state is unknown (the
          // reset and the ROLLBACK did not run). So is one whose statement was not a SELECT: a utility statement
          // the guard should have refused (PREPARE above all) can leave state the ROLLBACK keeps. A SELECT's
          // client was reset in the same message (SESSION_RESET in wire.ts).
          let destroyWith: Error | undefined;
          if (failure !== undefined) destroyWith = failure instanceof Error ? failure : new Error("query failed");
          else if (!portal.reusable) destroyWith = new Error("the statement was not a SELECT");
          client.release(destroyWith);
        }
      }
    } finally {
      running--;
      // A source that is not stored (a create's connection test) gets no series: its id may never exist.
      if (observe) metrics.observeQuery(source.id, ok ? "ok" : "error", (now() - started) / 1000, ok ? rows : undefined);
    }
  }

  /** Tells one listener; its failure must not end a hold early or keep the others from hearing. */
  function tell(listener: HeldListener, notice: AppError): void {
    try {
      listener(notice);
    } catch {
      // The caller's own fault: nothing to do here.
    }
  }

  /**
   * Waits until `pid` no longer shows in the source's pg_stat_activity, asked on another connection every
   * endedPollMs (a role sees its own sessions there); returns how long that took. A source that cannot be
   * reached is asked again: nothing confirms the statement ended. `onWaiting` runs once, at the first answer
   * that does not confirm it. Stops asking when the runner closes.
   */
  async function untilBackendEnded(source: Source, pid: number | undefined, onWaiting: () => void): Promise<number> {
    const since = now();
    if (typeof pid !== "number") return 0;
    const pollMs = opts.endedPollMs ?? 500;
    let told = false;
    while (!closed) {
      try {
        const client = await checkout(poolFor(source), source);
        let alive = true;
        try {
          const r = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1", [pid]);
          alive = (r.rows[0]?.n ?? 0) > 0;
        } finally {
          client.release();
        }
        if (!alive) return now() - since;
      } catch {
        // Unreachable for now: the backend may still run.
      }
      // The first answer that does not confirm the end: the statement is held from here on.
      if (!told) {
        told = true;
        onWaiting();
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
    return now() - since;
  }

  function macroValue(param: MacroParam, range: TimeRange, variables: RunRequest["variableValues"], window?: TimeRange): string {
    if (typeof param === "object") return variableValue(param, variables);
    if (param === "from") return isoTimestamp((window ?? range).fromMs);
    if (param === "to") return isoTimestamp((window ?? range).toMs);
    return (opts.intervalFor ?? defaultIntervalFor)(range.fromMs, range.toMs, config.MAX_WINDOW_POINTS);
  }

  return {
    async run({ source, workspaceId, sql, range, signal, onHeld, variables, variableValues, window, share }) {
      if (workspaceId !== undefined && workspaceId !== source.workspaceId) {
        throw new AppError("forbidden", "The source belongs to another workspace.");
      }
      if (!Number.isFinite(range.fromMs) || !Number.isFinite(range.toMs) || range.fromMs > range.toMs) {
        throw new AppError("validation_failed", "The time range must have a start before its end.");
      }
      const verdict = guard.check(sql, source.catalog, catalogVersion(source), variables);
      if (!verdict.ok) {
        metrics.countGuardRejection(verdict.reason);
        throw new AppError("guard_rejected", verdict.message, { reason: verdict.reason });
      }
      if (!source.catalog) {
        metrics.countGuardRejection("catalog");
        throw new AppError("guard_rejected", "The source's catalog was never refreshed; refresh it before querying.", {
          reason: "catalog",
        });
      }
      // A generate_series over times: its rows for this range, before anything runs (lib/sql-guard/series.ts).
      const series = seriesRowsProblem(verdict.series, range.fromMs, range.toMs, macroValue("interval", range, variableValues));
      if (series !== null) {
        metrics.countGuardRejection("time");
        throw new AppError("guard_rejected", series, { reason: "time" });
      }
      const values = verdict.params.map((p) => macroValue(p, range, variableValues, window));
      // Newest rows first (docs/query-runner.md): a statement keyed by time is wrapped so PostgreSQL returns
      // its newest rows first, and MAX_QUERY_ROWS then cuts the oldest; the rows are put back in time order.
      await loadGuardParser();
      const shape = shapeOf(verdict.sql, verdict.params);
      const newest = shape !== null && shape.timeKeyed && shape.position !== null;
      const text = newest ? `SELECT * FROM (${verdict.sql}) AS pulseboard_rows ORDER BY ${shape.position} DESC NULLS LAST` : verdict.sql;
      const read = async (sig: AbortSignal | undefined, held: HeldListener | undefined): Promise<QueryResult> => {
        const result = await execute({
          source,
          sql: text,
          values,
          // A variable's type is left to the server (0), as a quoted literal's would be.
          paramTypes: verdict.params.map((p) => (typeof p === "object" ? 0 : p === "interval" ? INTERVAL_OID : TIMESTAMPTZ_OID)),
          signal: sig,
          onHeld: held,
        });
        if (newest) result.rows.reverse();
        if (result.truncated) result.truncation = rowsTruncation(result.rows.length, config.MAX_QUERY_ROWS, newest);
        return withBuckets(result, shape, stepMsOf(shape, values), range, {
          maxPoints: config.MAX_WINDOW_POINTS,
          wallNow: (opts.wallNow ?? Date.now)(),
        });
      };
      if (!share) return read(signal, onHeld);
      // Everything the result depends on: the source and the connection it is read over (a source belongs to one
      // workspace, so runs of different workspaces never meet), the statement as sent, its values, the range the
      // result's notes are computed for, and the tick.
      const { id, workspaceId: ws, host, port, database, sslmode, secretRef } = source;
      const key = JSON.stringify([id, ws, host, port, database, sslmode, secretRef, text, values, range.fromMs, range.toMs, share.at]);
      // Every run sharing the query hears that it is held, a run joining a held query at once.
      let sharing = heldRuns.get(key);
      if (!sharing) {
        sharing = { listeners: new Set() };
        heldRuns.set(key, sharing);
      }
      const runs = sharing;
      if (onHeld) {
        runs.listeners.add(onHeld);
        if (runs.notice) tell(onHeld, runs.notice);
      }
      try {
        return await coalescer.share(key, signal, (sig) =>
          read(sig, (notice) => {
            runs.notice = notice;
            for (const l of runs.listeners) tell(l, notice);
          }),
        );
      } finally {
        if (onHeld) runs.listeners.delete(onHeld);
        if (runs.listeners.size === 0 && heldRuns.get(key) === runs) heldRuns.delete(key);
      }
    },
    execute: (req) => execute(req),
    plan({ source, sql, variables }) {
      if (!source.catalog) return { ok: false, reason: "the source's catalog was never refreshed" };
      const verdict = guard.check(sql, source.catalog, catalogVersion(source), variables);
      if (!verdict.ok) return { ok: false, reason: "the guard refuses the statement" };
      return planIncremental(verdict.sql, verdict.params, source.catalog, parseTree);
    },
    async testConnection(source, { stored = true } = {}) {
      let passed = false;
      try {
        const r = await execute({ source, sql: SOURCE_LIMITS_SQL, maxRows: 1 }, stored);
        passed = true;
        return { elapsedMs: r.elapsedMs, limits: sourceLimitsFromRow(r.rows[0]) };
      } finally {
        // A failed test leaves no connection behind; nor does any test of a source that was never stored.
        if (!passed || !stored) evict(source.id);
      }
    },
    evict,
    forget(sourceId) {
      evict(sourceId);
      metrics.dropSource(sourceId);
    },
    inFlight: () => running,
    shared: coalescer.stats,
    poolStats(sourceId) {
      const entry = pools.get(sourceId);
      if (!entry) return null;
      const { totalCount, idleCount, waitingCount } = entry.pool;
      return { totalCount, idleCount, waitingCount };
    },
    async closeAll() {
      closed = true;
      for (const pending of waiting) {
        pending.answered = true;
        pending.reject(draining());
      }
      waiting.clear();
      for (const entry of pools.values()) endPool(entry.pool);
      pools.clear();
      // pg-pool's end() resolves only when every checked-out client has been released and closed.
      while (ending.size > 0) await Promise.all([...ending]);
    },
  };
}
