// The config-store pool under a hung and a stopped store. The hang is a TCP proxy in this test that stops
// forwarding (lib/store/testing/hang-proxy.ts) in front of the run's shared embedded PostgreSQL: to the
// client that is exactly a server frozen with SIGSTOP (the kernel accepts and buffers, nothing answers),
// it hangs and recovers in microseconds, and a second server per file would cost seconds of initdb. The
// process test of the stream host (stream-host/dependency-faults.process.test.ts) freezes real servers.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTestConfigStore } from "../testing/pg.ts";
import { withConfigStoreClient } from "./deadline.ts";
import { configStoreFaultCode, isConfigStoreFault } from "./faults.ts";
import { createConfigStorePool } from "./pool.ts";
import { type HangProxy, startHangProxy } from "./testing/hang-proxy.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let proxy: HangProxy;
let url: string;

beforeAll(async () => {
  store = await createTestConfigStore();
  const u = new URL(store.url);
  proxy = await startHangProxy({ host: u.hostname, port: Number(u.port) });
  url = proxy.urlFor(store.url);
});
afterAll(async () => {
  await proxy.close();
  await store.close();
});

/** Polls `cond`: these wait on sockets closing, where no gate promise exists. */
async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error("expected a rejection");
    },
    (err: unknown) => err,
  );
}

describe("createConfigStorePool with a statement timeout", () => {
  test("every connection runs with the statement_timeout; a slow statement is cancelled by the server (57014, a fault)", async () => {
    const pool = createConfigStorePool({ connectionString: url, max: 2, statementTimeoutMs: 300 });
    try {
      expect((await pool.query("SHOW statement_timeout")).rows[0].statement_timeout).toBe("300ms");
      const err = await rejection(pool.query("SELECT pg_sleep(30)"));
      expect((err as { code?: string }).code).toBe("57014");
      expect(configStoreFaultCode(err)).toBe("57014");
      // The connection stayed healthy: the next query answers.
      expect((await pool.query("SELECT 1 AS one")).rows[0].one).toBe(1);
    } finally {
      await pool.end();
    }
  });

  test("an error about the statement itself is not a fault; an unmarked pg error is not one either", async () => {
    const pool = createConfigStorePool({ connectionString: url, max: 1, statementTimeoutMs: 1000 });
    try {
      const err = await rejection(pool.query("SELECT * FROM no_such_table"));
      expect((err as { code?: string }).code).toBe("42P01");
      expect(isConfigStoreFault(err)).toBe(false);
    } finally {
      await pool.end();
    }
    // The same kind of failure from a client that is not the config store's (a metrics source) is never marked.
    const foreign = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    expect(isConfigStoreFault(foreign)).toBe(false);
  });

  test("a hung store: queries past the pool's size all give up, every client leaves the pool at once, and it works after the hang", async () => {
    const pool = createConfigStorePool({ connectionString: url, max: 2, statementTimeoutMs: 200 });
    try {
      await Promise.all([pool.query("SELECT 1"), pool.query("SELECT 1")]);
      expect(pool.totalCount).toBe(2);
      proxy.hang();
      const errors = await Promise.all(Array.from({ length: 5 }, () => rejection(pool.query("SELECT 1"))));
      for (const err of errors) {
        expect(isConfigStoreFault(err)).toBe(true);
        expect(["query_timeout", "connect_timeout"]).toContain(configStoreFaultCode(err));
      }
      expect(errors.some((e) => configStoreFaultCode(e) === "query_timeout")).toBe(true);
      // No caller is left waiting, nothing sits idle on the hung server, and the pool never grew past its
      // size (waiters that got a freed slot may still be connecting, bounded by the connect timeout).
      expect(pool.waitingCount).toBe(0);
      expect(pool.idleCount).toBe(0);
      expect(pool.totalCount).toBeLessThanOrEqual(2);
      proxy.resume();
      expect((await pool.query("SELECT 2 AS two")).rows[0].two).toBe(2);
    } finally {
      proxy.resume();
      await pool.end();
    }
  });

  test("answerTimeoutMs gives a query up before statement_timeout + grace: a request fails within the readiness bound", async () => {
    // statement_timeout a minute away: only the answer bound can end this wait within the test's timeout.
    const pool = createConfigStorePool({ connectionString: url, max: 1, statementTimeoutMs: 60_000, answerTimeoutMs: 150 });
    try {
      expect((await pool.query("SHOW statement_timeout")).rows[0].statement_timeout).toBe("1min");
      proxy.hang();
      const err = await rejection(pool.query("SELECT 1"));
      expect(configStoreFaultCode(err)).toBe("query_timeout");
      expect(pool.totalCount).toBe(0);
      proxy.resume();
      expect((await pool.query("SELECT 4 AS four")).rows[0].four).toBe(4);
    } finally {
      proxy.resume();
      await pool.end();
    }
  });

  test("a caller that releases a timed-out client without an error still never returns it to the pool", async () => {
    const pool = createConfigStorePool({ connectionString: url, max: 1, statementTimeoutMs: 200 });
    try {
      const client = await pool.connect();
      proxy.hang();
      const err = await rejection(client.query("SELECT 1"));
      expect(configStoreFaultCode(err)).toBe("query_timeout");
      client.release();
      expect(pool.idleCount).toBe(0);
      expect(pool.totalCount).toBe(0);
      proxy.resume();
      expect((await pool.query("SELECT 3 AS three")).rows[0].three).toBe(3);
    } finally {
      proxy.resume();
      await pool.end();
    }
  });

  test("a stopped store: connection refused is a fault, and the pool reconnects when it is back", async () => {
    const pool = createConfigStorePool({ connectionString: url, max: 2, statementTimeoutMs: 1000 });
    try {
      await pool.query("SELECT 1");
      await proxy.stop();
      const err = await rejection(pool.query("SELECT 1"));
      expect(isConfigStoreFault(err)).toBe(true);
      expect(["ECONNREFUSED", "connection_lost"]).toContain(configStoreFaultCode(err));
      const refused = await rejection(pool.query("SELECT 1"));
      expect(configStoreFaultCode(refused)).toBe("ECONNREFUSED");
      await proxy.start();
      expect((await pool.query("SELECT 4 AS four")).rows[0].four).toBe(4);
    } finally {
      if (!proxy.connections && !(await canConnect())) await proxy.start();
      await pool.end();
    }
  });
});

async function canConnect(): Promise<boolean> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  c.on("error", () => {});
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

describe("withConfigStoreClient", () => {
  test("a caller that gives up gets config_store_unavailable and its client is closed at once, not when pg's timeout fires", async () => {
    // No statement timeout on this pool: only the caller's deadline ends the wait.
    const pool = createConfigStorePool({ connectionString: url, max: 1 });
    try {
      await pool.query("SELECT 1");
      proxy.hang();
      const err = await rejection(withConfigStoreClient(pool, 150, (c) => c.query("SELECT 1")));
      expect(err).toMatchObject({ code: "config_store_unavailable", status: 503, extra: { cause: "timeout" } });
      expect((err as { headers: Record<string, string> }).headers["retry-after"]).toBe("5");
      // Given up at once: the only slot is free again while the store still hangs.
      expect(pool.totalCount).toBe(0);
      // A second caller, while the store still hangs, waits for a new connection and gives up the same way.
      const again = await rejection(withConfigStoreClient(pool, 150, (c) => c.query("SELECT 1")));
      expect(again).toMatchObject({ code: "config_store_unavailable" });
      proxy.resume();
      // The checkout still connecting when the caller gave up arrives now and goes back to the pool.
      await until(() => pool.idleCount === 1, "the late checkout back in the pool");
      expect(await withConfigStoreClient(pool, 5000, async (c) => (await c.query("SELECT 5 AS five")).rows[0].five)).toBe(5);
    } finally {
      proxy.resume();
      await pool.end();
    }
  });

  test("a statement error is rethrown unchanged and the client goes back to the pool", async () => {
    const pool = createConfigStorePool({ connectionString: url, max: 1, statementTimeoutMs: 1000 });
    try {
      const err = await rejection(withConfigStoreClient(pool, 5000, (c) => c.query("SELECT * FROM no_such_table")));
      expect((err as { code?: string }).code).toBe("42P01");
      expect(pool.idleCount).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
