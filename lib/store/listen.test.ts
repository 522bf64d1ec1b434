import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createManualTimers } from "../lifecycle/manual-timers.ts";
import { createLogger } from "../log/logger.ts";
import { createTestConfigStore } from "../testing/pg.ts";
import { freePort } from "../embedded/postgres.ts";
import { LISTENER_RETRY_FIRST_MS, LISTENER_RETRY_MAX_MS, createNotificationListener, listenerClientFactory } from "./listen.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(() => store.close());

const log = createLogger({ silent: true });

/** Polls `cond`: these tests wait on a real PostgreSQL round trip, where no gate promise exists. */
async function until(cond: () => boolean, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("createNotificationListener", () => {
  test("routes each channel's payloads to its handler on one connection, after onListening ran once", async () => {
    const clock = createManualTimers();
    const got: string[] = [];
    const listens: boolean[] = [];
    const listener = createNotificationListener({
      connect: listenerClientFactory(store.url),
      channels: { test_channel_a: (p) => got.push(`a:${p}`), test_channel_b: (p) => got.push(`b:${p}`) },
      onListening: (reconnected) => void listens.push(reconnected),
      timers: clock.timers,
      log,
    });
    try {
      await listener.start();
      await listener.ready;
      expect(listens).toEqual([false]);
      await store.pool.query(
        "SELECT pg_notify('test_channel_b', 'two'), pg_notify('test_channel_other', 'x'), pg_notify('test_channel_a', 'one')",
      );
      await until(() => got.length === 2, "both notifications");
      expect(got).toEqual(["b:two", "a:one"]);
    } finally {
      await listener.close();
    }
  });

  test("refuses a channel name that is not a plain identifier (it is spliced into LISTEN)", () => {
    expect(() =>
      createNotificationListener({
        connect: listenerClientFactory(store.url),
        channels: { "x; DROP TABLE y": () => {} },
        timers: createManualTimers().timers,
        log,
      }),
    ).toThrow("not a channel name");
  });

  test("a failed liveness ping counts as a lost connection: it reconnects and runs onListening again", async () => {
    const clock = createManualTimers();
    const listens: boolean[] = [];
    let connections = 0;
    // The first connection stops answering its pings, as one dropped silently by a proxy would.
    const connect = () => {
      const c = listenerClientFactory(store.url)();
      if (++connections === 1) {
        const query = c.query.bind(c) as (sql: string) => Promise<unknown>;
        (c as unknown as { query: (sql: string) => Promise<unknown> }).query = (sql: string) =>
          sql === "SELECT 1" ? Promise.reject(Object.assign(new Error("Query read timeout"), { code: "ETIMEDOUT" })) : query(sql);
      }
      return c;
    };
    const listener = createNotificationListener({
      connect,
      channels: { test_channel_ping: () => {} },
      onListening: (reconnected) => void listens.push(reconnected),
      timers: clock.timers,
      log,
      pingMs: 30_000,
    });
    try {
      await listener.start();
      expect(listener.connected).toBe(true);
      clock.advance(30_000);
      await until(() => !listener.connected, "the failed ping drops the connection");
      clock.advance(500); // the first reconnect backoff
      await until(() => listener.connected, "reconnected");
      expect(connections).toBe(2);
      expect(listens).toEqual([false, true]);
      // The second connection answers its pings and stays.
      clock.advance(30_000);
      await new Promise((r) => setTimeout(r, 50));
      expect(listener.connected).toBe(true);
      expect(connections).toBe(2);
    } finally {
      await listener.close();
    }
  });

  test("an onListening that fails (its reload could not read the store) is retried on a new connection", async () => {
    const clock = createManualTimers();
    let calls = 0;
    const listener = createNotificationListener({
      connect: listenerClientFactory(store.url),
      channels: { test_channel_retry: () => {} },
      onListening: async () => {
        if (++calls === 1) throw Object.assign(new Error("reload failed"), { code: "57P01" });
      },
      timers: clock.timers,
      log,
    });
    try {
      await listener.start();
      expect(listener.connected).toBe(false);
      clock.advance(500);
      await listener.ready;
      expect(calls).toBe(2);
      expect(listener.connected).toBe(true);
    } finally {
      await listener.close();
    }
  });

  test("reconnect backoff is capped at LISTENER_RETRY_MAX_MS: a store that comes back is listened to again within about a second, then reloaded", async () => {
    const clock = createManualTimers();
    const listens: boolean[] = [];
    // Nothing listens on this port: every attempt is refused, as against a stopped store.
    const down = `postgres://u:p@127.0.0.1:${await freePort()}/none`;
    let up = false;
    let attempts = 0;
    const listener = createNotificationListener({
      connect: () => {
        attempts++;
        return listenerClientFactory(up ? store.url : down)();
      },
      channels: { test_channel_backoff: () => {} },
      onListening: (reconnected) => void listens.push(reconnected),
      timers: clock.timers,
      log,
    });
    try {
      await listener.start();
      const delays: number[] = [];
      for (let i = 0; i < 6; i++) {
        await until(() => clock.pendingDelays().length === 1, `retry ${i + 1} scheduled`);
        delays.push(clock.pendingDelays()[0]!);
        const before = attempts;
        clock.advance(clock.pendingDelays()[0]!);
        await until(() => attempts === before + 1, `attempt ${i + 2}`);
      }
      expect(delays).toEqual([LISTENER_RETRY_FIRST_MS, LISTENER_RETRY_MAX_MS, 1000, 1000, 1000, 1000]);
      expect(LISTENER_RETRY_MAX_MS).toBeLessThanOrEqual(1000);
      // The store is back: the next attempt (at most LISTENER_RETRY_MAX_MS away) listens and reloads.
      up = true;
      await until(() => clock.pendingDelays().length === 1, "the next retry scheduled");
      clock.advance(clock.pendingDelays()[0]!);
      await until(() => listener.connected, "listening again");
      expect(listens).toEqual([true]);
    } finally {
      await listener.close();
    }
  });

  test("close ends the connection and stops reconnecting", async () => {
    const clock = createManualTimers();
    const name = `listen-close-${Date.now()}`;
    const listener = createNotificationListener({
      connect: () => new pg.Client({ connectionString: store.url, application_name: name }),
      channels: { test_channel_close: () => {} },
      timers: clock.timers,
      log,
    });
    await listener.start();
    const count = async () =>
      Number((await store.pool.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", [name])).rows[0].count);
    expect(await count()).toBe(1);
    await listener.close();
    clock.advance(60_000);
    expect(listener.connected).toBe(false);
    // The server removes the backend just after the socket closes.
    let left = await count();
    for (let i = 0; i < 200 && left > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      left = await count();
    }
    expect(left).toBe(0);
  });
});
