import pg from "pg";

/** Builds the config-store pool. One per process, created by the entry point and passed in. */
export function createConfigStorePool(opts: { connectionString: string; max: number }): pg.Pool {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max,
    // A readiness probe must see an unreachable store quickly rather than hang on connect.
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    application_name: "pulseboard",
  });
  // An idle client losing its connection must not crash the process; the next checkout reconnects.
  pool.on("error", () => {});
  return pool;
}
