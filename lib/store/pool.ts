import pg from "pg";
import { isClientQueryTimeout, markConfigStoreError } from "./faults.ts";

/** How much longer than the server's statement_timeout the client waits before it gives a query up. */
export const CLIENT_TIMEOUT_GRACE_MS = 1_000;

/** How long a new config-store connection (or a wait for a pooled one) may take before it is given up. */
export const CONFIG_STORE_CONNECT_TIMEOUT_MS = 5_000;

// biome-ignore lint/suspicious/noExplicitAny: pg declares query() and connect() as overload sets (promise, callback, submittable); an override must accept all of them
type Untyped = any;
type Callback = (err: Error | null | undefined, res?: unknown) => void;

/**
 * A config-store connection. Its errors are marked as the config store's (lib/store/faults.ts), and a
 * query the client-side timeout gave up on ends the connection at once: the server never answered, so
 * the connection is stuck behind that query and must never go back to the pool, whatever the caller
 * does next (pg-pool removes a client that is ending when it is released).
 */
class ConfigStoreClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // A connection lost while a caller holds the client (the store stopped mid-request) must not crash
    // the process as an unhandled 'error': the caller's next query fails instead, and the release that
    // follows drops the client (pg-pool never keeps a client that is no longer queryable).
    this.on("error", () => {});
  }

  override query(config: Untyped, values?: Untyped, callback?: Untyped): Untyped {
    // Submittables (cursors) carry their own callbacks; the config store does not use them.
    if (config && typeof config.submit === "function") return super.query(config, values, callback);
    let cb: Callback | undefined = callback;
    let vals = values;
    if (typeof vals === "function") {
      cb = vals;
      vals = undefined;
    }
    if (typeof cb === "function") {
      const done = cb;
      return super.query(config, vals, (err: Error | null | undefined, res: unknown) => {
        if (err) this.failed(err);
        done(err, res);
      });
    }
    return (super.query(config, vals) as Promise<unknown>).then(undefined, (err: unknown) => {
      this.failed(err);
      throw err;
    });
  }

  override connect(callback?: Untyped): Untyped {
    if (typeof callback === "function") {
      return super.connect((err: Error | null, c?: pg.Client) => callback(err ? markConfigStoreError(err) : err, c));
    }
    return super.connect().catch((err: unknown) => {
      throw markConfigStoreError(err);
    });
  }

  private failed(err: unknown): void {
    markConfigStoreError(err);
    // end() with a query still active destroys the socket at once; `_ending` is set synchronously, so a
    // release that follows (with or without an error) removes the client from the pool.
    if (isClientQueryTimeout(err)) this.end().catch(() => {});
  }
}

/**
 * The config-store pool: its clients' errors are marked as the config store's, and so are its own (a
 * wait for a pooled client that timed out).
 */
class ConfigStorePool extends pg.Pool {
  override connect(callback?: Untyped): Untyped {
    if (typeof callback === "function") {
      return super.connect((err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) =>
        callback(err ? markConfigStoreError(err) : err, client, done),
      );
    }
    return super.connect().catch((err: unknown) => {
      throw markConfigStoreError(err);
    });
  }
}

/**
 * Builds the config-store pool. One per process, created by the entry point and passed in.
 *
 * With `statementTimeoutMs`, every connection runs with that statement_timeout (the server cancels a
 * slow statement with SQLSTATE 57014 and the connection stays usable), and the client gives a query up
 * CLIENT_TIMEOUT_GRACE_MS later when the server does not answer at all (a hung or frozen server): that
 * connection is closed at once and leaves the pool, so a hung config store can never exhaust it.
 * With `answerTimeoutMs` too, the client gives up at whichever comes first: the processes pass their
 * readiness bound, so a request on a hung store fails (503 config_store_unavailable) as soon as readiness
 * would report it not ready, while statement_timeout still ends, on the server, a statement whose client
 * gave up. One-shot commands (migrate, provision) leave both unset, since they wait on advisory locks on
 * purpose.
 */
export function createConfigStorePool(opts: {
  connectionString: string;
  max: number;
  statementTimeoutMs?: number;
  /** Bound of the client's wait for the answer to one query; default statementTimeoutMs + CLIENT_TIMEOUT_GRACE_MS. */
  answerTimeoutMs?: number;
  /** Bound of a new connection, or of a wait for a pooled one; default CONFIG_STORE_CONNECT_TIMEOUT_MS. */
  connectTimeoutMs?: number;
}): pg.Pool {
  const timeouts =
    opts.statementTimeoutMs && opts.statementTimeoutMs > 0
      ? {
          statement_timeout: opts.statementTimeoutMs,
          query_timeout: Math.min(opts.statementTimeoutMs + CLIENT_TIMEOUT_GRACE_MS, opts.answerTimeoutMs ?? Number.POSITIVE_INFINITY),
        }
      : {};
  const pool = new ConfigStorePool({
    connectionString: opts.connectionString,
    max: opts.max,
    // A wait for a connection, new or pooled, is bounded too: an unreachable store fails fast rather than hang.
    connectionTimeoutMillis: opts.connectTimeoutMs ?? CONFIG_STORE_CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    application_name: "pulseboard",
    Client: ConfigStoreClient,
    ...timeouts,
  } as pg.PoolConfig);
  // An idle client losing its connection must not crash the process; the next checkout reconnects.
  pool.on("error", () => {});
  return pool;
}
