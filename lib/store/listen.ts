import pg from "pg";
import type { Timers } from "../lifecycle/timers.ts";
import type { Logger } from "../log/logger.ts";

/** A listener connection from a connection string (the config store's). */
export function listenerClientFactory(connectionString: string): () => pg.Client {
  return () =>
    new pg.Client({
      connectionString,
      application_name: "pulseboard-listen",
      connectionTimeoutMillis: 5_000,
      // Bounds the liveness ping (and LISTEN itself): a connection that stopped answering is replaced.
      query_timeout: 10_000,
      keepAlive: true,
    });
}

/** First delay before reconnecting a lost listener connection; it doubles per failed attempt up to the cap. */
export const LISTENER_RETRY_FIRST_MS = 500;
/** Longest delay between two reconnect attempts. */
export const LISTENER_RETRY_MAX_MS = 1_000;

/** Default interval of the listener's liveness ping. */
export const LISTENER_PING_MS = 30_000;

/** What a process's config-store listener is. */
export interface NotificationListener {
  /** Connects and LISTENs (idempotent); resolves when the first attempt settled. */
  start(): Promise<void>;
  /** Closes the listening connection and stops reconnecting. */
  close(): Promise<void>;
  /** Resolves once LISTEN is in place and `onListening` succeeded for the first time. */
  readonly ready: Promise<void>;
  /** True while the LISTEN connection is up (false while reconnecting). */
  readonly connected: boolean;
}

/**
 * LISTENs on the config store's NOTIFY channels on one dedicated connection (never a pool client: it
 * is held for the life of the process). A lost connection is re-established with backoff. After every
 * LISTEN, `onListening` runs (`reconnected` is false the first time): notifications sent while nobody
 * listened are gone, so that is where a process reloads what it mirrors. A failing `onListening`
 * counts as a lost connection and is retried the same way.
 */
export function createNotificationListener(opts: {
  connect: () => pg.Client;
  /** Channel name → handler of its payloads. Names are our own constants, never user input. */
  channels: Record<string, (payload: string) => void>;
  onListening?(reconnected: boolean): Promise<void> | void;
  timers: Timers;
  log: Logger;
  /**
   * How often the connection proves it is alive (`SELECT 1`); 0 disables. A connection dropped
   * silently (a NAT or proxy idle timeout, a container frozen between requests) raises no error, and
   * every notification sent meanwhile would be lost; a failed ping counts as a lost connection.
   */
  pingMs?: number;
}): NotificationListener {
  const pingMs = opts.pingMs ?? LISTENER_PING_MS;
  let pingTimer: unknown = null;
  const channels = Object.keys(opts.channels);
  for (const ch of channels) if (!/^[a-z_][a-z0-9_]*$/.test(ch)) throw new Error(`not a channel name: ${ch}`);
  let client: pg.Client | null = null;
  let closed = false;
  let started: Promise<void> | null = null;
  let retryTimer: unknown = null;
  let attempt = 0;
  let everConnected = false;
  let listening = false;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  async function open(): Promise<void> {
    if (closed) return;
    const c = opts.connect();
    client = c;
    c.on("notification", (msg) => {
      const handler = Object.hasOwn(opts.channels, msg.channel) ? opts.channels[msg.channel] : undefined;
      if (handler && msg.payload) handler(msg.payload);
    });
    const lost = (err?: Error) => {
      if (client !== c) return;
      client = null;
      listening = false;
      stopPing();
      c.removeAllListeners("notification");
      void c.end().catch(() => {});
      if (closed) return;
      opts.log.warn("config-store listener lost", { error: err ? errorCode(err) : "end" });
      reconnectLater();
    };
    c.on("error", lost);
    c.on("end", () => lost());
    try {
      await c.connect();
      for (const ch of channels) await c.query(`LISTEN ${ch}`);
      if (closed) {
        await c.end().catch(() => {});
        return;
      }
      // LISTEN is in place before anything is reloaded, so no change falls between the two.
      await opts.onListening?.(everConnected);
      if (client !== c) return;
      if (attempt > 0) opts.log.info("config-store listener back", { attempts: attempt });
      attempt = 0;
      listening = true;
      everConnected = true;
      markReady();
      schedulePing(c, lost);
    } catch (err) {
      lost(err as Error);
    }
  }

  function schedulePing(c: pg.Client, lost: (err?: Error) => void) {
    if (pingMs <= 0) return;
    pingTimer = opts.timers.setTimeout(async () => {
      pingTimer = null;
      if (client !== c) return;
      try {
        await c.query("SELECT 1");
        if (client === c) schedulePing(c, lost);
      } catch (err) {
        lost(err as Error);
      }
    }, pingMs);
  }

  function stopPing() {
    if (pingTimer !== null) opts.timers.clearTimeout(pingTimer);
    pingTimer = null;
  }

  function reconnectLater() {
    if (closed || retryTimer !== null) return;
    // Capped low: a store that comes back is listened to again within about a second, so changes made
    // right after its return arrive as notifications. An attempt against a store that is down costs one
    // refused connection; against a hung one it waits for its connect timeout first, so the cap never
    // turns into a storm.
    const delay = Math.min(LISTENER_RETRY_MAX_MS, LISTENER_RETRY_FIRST_MS * 2 ** attempt++);
    // Whatever changed while we were away is picked up by onListening after reconnecting.
    everConnected = true;
    retryTimer = opts.timers.setTimeout(() => {
      retryTimer = null;
      void open();
    }, delay);
  }

  return {
    start() {
      started ??= open();
      return started;
    },
    async close(): Promise<void> {
      closed = true;
      stopPing();
      if (retryTimer !== null) opts.timers.clearTimeout(retryTimer);
      retryTimer = null;
      const c = client;
      client = null;
      if (c) await c.end().catch(() => {});
    },
    ready,
    get connected() {
      return client !== null && listening;
    },
  };
}

function errorCode(err: Error): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? code : err.name;
}
