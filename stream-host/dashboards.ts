import pg from "pg";
import { DASHBOARD_CHANGED_CHANNEL } from "../lib/auth/types.ts";
import { DashboardSpecBaseSchema } from "../lib/dashboard/spec.ts";
import type { Logger } from "../lib/log/logger.ts";
import type { LoadedDashboard } from "./poller.ts";
import type { Timers } from "../lib/lifecycle/timers.ts";

/** Dashboard ids are opaque random strings; anything else is answered as not found without a query. */
const DASHBOARD_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function isDashboardId(id: string): boolean {
  return DASHBOARD_ID.test(id);
}

/** Reads one dashboard (id, workspace, spec, version); null when it does not exist or its spec no longer parses. */
export async function loadDashboard(pool: pg.Pool, id: string): Promise<LoadedDashboard | null> {
  if (!isDashboardId(id)) return null;
  const { rows } = await pool.query<{ id: string; workspace_id: string; spec: unknown; version: number }>(
    "SELECT id, workspace_id, spec, version FROM dashboards WHERE id = $1",
    [id],
  );
  const row = rows[0];
  if (!row) return null;
  const spec = DashboardSpecBaseSchema.safeParse(row.spec);
  // Specs are validated on write; a row that fails here was written around the API and is not served.
  if (!spec.success) return null;
  return { id: row.id, workspaceId: row.workspace_id, version: row.version, spec: spec.data };
}

/**
 * LISTENs for dashboard changes on a dedicated connection (never a pool client: it is held for the
 * life of the process). A lost connection is re-established with backoff, and `onResync` then runs
 * because notifications sent while it was down are gone.
 */
export function createDashboardListener(opts: {
  connect: () => pg.Client;
  onChange(dashboardId: string): void;
  onResync(): void;
  timers: Timers;
  log: Logger;
}) {
  let client: pg.Client | null = null;
  let closed = false;
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
      if (msg.channel === DASHBOARD_CHANGED_CHANNEL && msg.payload) opts.onChange(msg.payload);
    });
    const lost = (err?: Error) => {
      if (client !== c) return;
      client = null;
      listening = false;
      c.removeAllListeners("notification");
      void c.end().catch(() => {});
      if (closed) return;
      opts.log.warn("dashboard change listener lost", { error: err ? errorCode(err) : "end" });
      reconnectLater();
    };
    c.on("error", lost);
    c.on("end", () => lost());
    try {
      await c.connect();
      await c.query(`LISTEN ${DASHBOARD_CHANGED_CHANNEL}`);
      if (closed) {
        await c.end().catch(() => {});
        return;
      }
      attempt = 0;
      listening = true;
      if (everConnected) opts.onResync();
      everConnected = true;
      markReady();
    } catch (err) {
      lost(err as Error);
    }
  }

  function reconnectLater() {
    if (closed || retryTimer !== null) return;
    const delay = Math.min(30_000, 500 * 2 ** attempt++);
    // Whatever changed while we were away is picked up by the resync after reconnecting.
    everConnected = true;
    retryTimer = opts.timers.setTimeout(() => {
      retryTimer = null;
      void open();
    }, delay);
  }

  return {
    start: () => open(),
    /** Closes the listening connection and stops reconnecting. */
    async close(): Promise<void> {
      closed = true;
      if (retryTimer !== null) opts.timers.clearTimeout(retryTimer);
      retryTimer = null;
      const c = client;
      client = null;
      if (c) await c.end().catch(() => {});
    },
    /** Resolves once LISTEN is in place for the first time. */
    ready,
    /** True while the LISTEN connection is up (false while reconnecting). */
    get connected() {
      return client !== null && listening;
    },
  };
}

function errorCode(err: Error): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? code : err.name;
}

/** A listener connection from a connection string (the config store's). */
export function listenerClientFactory(connectionString: string): () => pg.Client {
  return () => new pg.Client({ connectionString, application_name: "pulseboard-listen", connectionTimeoutMillis: 5_000 });
}

/**
 * Applies change notifications to the hub: reloads the dashboard and hands the new version (or its
 * deletion) over. Reloads of one dashboard never overlap; a burst collapses into one more reload.
 */
export function createDashboardSync(opts: {
  load(id: string): Promise<LoadedDashboard | null>;
  isActive(id: string): boolean;
  apply(dashboard: LoadedDashboard): void;
  remove(id: string): void;
  activeIds(): string[];
  log: Logger;
}) {
  const inFlight = new Map<string, { again: boolean; done: Promise<void> }>();
  let stopped = false;

  function changed(id: string): Promise<void> {
    if (stopped || !opts.isActive(id)) return Promise.resolve();
    const running = inFlight.get(id);
    if (running) {
      running.again = true;
      return running.done;
    }
    const entry = { again: false, done: Promise.resolve() };
    entry.done = (async () => {
      do {
        entry.again = false;
        try {
          const d = await opts.load(id);
          if (stopped) break;
          if (d) opts.apply(d);
          else opts.remove(id);
        } catch (err) {
          opts.log.warn("dashboard reload failed", { dashboard: id, error: err instanceof Error ? errorCode(err) : "error" });
        }
      } while (entry.again && !stopped);
      inFlight.delete(id);
    })();
    inFlight.set(id, entry);
    return entry.done;
  }

  return {
    changed,
    /** After a lost LISTEN connection: re-reads every dashboard that has subscribers here. */
    resync: () => Promise.all(opts.activeIds().map((id) => changed(id))).then(() => {}),
    /** Stops applying changes; resolves when the reloads in flight (config-store work) have settled. */
    async stop(): Promise<void> {
      stopped = true;
      await Promise.all([...inFlight.values()].map((e) => e.done));
    },
  };
}
