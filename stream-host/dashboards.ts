import type pg from "pg";
import { DashboardSpecBaseSchema } from "../lib/dashboards/spec.ts";
import { getDashboard } from "../lib/dashboards/store.ts";
import type { Logger } from "../lib/log/logger.ts";
import type { LoadedDashboard } from "./poller.ts";

/** Dashboard ids are opaque random strings; anything else is answered as not found without a query. */
const DASHBOARD_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function isDashboardId(id: string): boolean {
  return DASHBOARD_ID.test(id);
}

/** Reads one dashboard (id, workspace, spec, version); null when it does not exist or its spec no longer parses. */
export async function loadDashboard(db: pg.Pool | pg.PoolClient, id: string): Promise<LoadedDashboard | null> {
  if (!isDashboardId(id)) return null;
  const row = await getDashboard(db, id);
  if (!row) return null;
  const spec = DashboardSpecBaseSchema.safeParse(row.spec);
  // Specs are validated on write; a row that fails here was written around the API and is not served.
  if (!spec.success) return null;
  return { id: row.id, workspaceId: row.workspaceId, version: row.version, spec: spec.data };
}

export { listenerClientFactory } from "../lib/store/listen.ts";

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

function errorCode(err: Error): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? code : err.name;
}
