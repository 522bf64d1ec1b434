import type pg from "pg";
import type { Timers } from "../lifecycle/timers.ts";
import { systemTimers } from "../lifecycle/timers.ts";
import { asConfigStoreError, configStoreUnavailable, isConfigStoreFault } from "./faults.ts";

/**
 * Runs `work` on one pooled config-store client within `timeoutMs`, from checkout to the last row.
 * When the time runs out the caller gets `config_store_unavailable` (cause `timeout`) at once and the
 * client is given up at once: released with an error, so the pool closes it (its socket is destroyed
 * while a query is still active) and its slot is free again; a checkout still waiting then is released
 * as soon as it arrives. A config-store fault inside `work` is reported the same way; any other error
 * is rethrown unchanged (the client goes back to the pool).
 */
export async function withConfigStoreClient<T>(
  pool: pg.Pool,
  timeoutMs: number,
  work: (client: pg.PoolClient) => Promise<T>,
  opts: { timers?: Timers } = {},
): Promise<T> {
  const timers = opts.timers ?? systemTimers;
  let gaveUp = false;
  let client: pg.PoolClient | null = null;
  let timer: unknown = null;
  const expired = new Promise<never>((_, reject) => {
    timer = timers.setTimeout(() => {
      gaveUp = true;
      timer = null;
      if (client) {
        const c = client;
        client = null;
        c.release(new Error("given up by its caller"));
      }
      reject(configStoreUnavailable("timeout"));
    }, timeoutMs);
  });
  expired.catch(() => {});
  const checkout = pool.connect();
  const run = (async () => {
    const c = await checkout;
    if (gaveUp) {
      // The connection arrived after the caller gave up: it answered, so it goes back to the pool.
      c.release();
      throw configStoreUnavailable("timeout");
    }
    client = c;
    try {
      const result = await work(c);
      if (client === c) {
        client = null;
        c.release();
      }
      return result;
    } catch (err) {
      if (client === c) {
        client = null;
        c.release(isConfigStoreFault(err) ? (err as Error) : undefined);
      }
      throw err;
    }
  })();
  run.catch(() => {});
  try {
    return await Promise.race([run, expired]);
  } catch (err) {
    throw asConfigStoreError(err);
  } finally {
    if (timer !== null) timers.clearTimeout(timer);
  }
}
