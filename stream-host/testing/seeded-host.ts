// A real stream host process over a seeded stream fixture, with a viewer's session cookie: the setup the
// drain process tests share.
import type pg from "pg";
import { createSessionTokens } from "../../lib/auth/session.ts";
import { freePort } from "../../lib/embedded/postgres.ts";
import { type HostProcess, openStream, spawnStreamHost } from "./child.ts";
import { seedStreamFixture } from "./seed.ts";

export const PROCESS_SESSION_SECRET = "process-test-session-secret-0123456789";

/**
 * Seeds a workspace, a source on `metricsUrl` and dashboards of `panels` (then `more`), every one ticking
 * each 100 ms, and spawns a stream host on the config store at `storeUrl` (pushed to `children` so the
 * caller's afterAll can kill it). Returns the host, the first dashboard's stream path and a viewer cookie.
 */
export async function startSeededHost(opts: {
  store: { url: string; pool: pg.Pool };
  metricsUrl: string;
  panels: { id: string; view: string }[];
  more?: { id: string; view: string }[][];
  env?: Record<string, string>;
  children: HostProcess[];
}) {
  const fixture = await seedStreamFixture(opts.store.pool, {
    metricsUrl: opts.metricsUrl,
    panels: opts.panels,
    refreshIntervalMs: 100,
    more: opts.more,
  });
  const host = await spawnStreamHost({
    DATABASE_URL: opts.store.url,
    SESSION_SECRET: PROCESS_SESSION_SECRET,
    STREAM_PORT: String(await freePort()),
    NODE_ENV: "test",
    MIN_REFRESH_INTERVAL_MS: "100",
    DEFAULT_REFRESH_INTERVAL_MS: "100",
    FRAMEWORK_MANUAL_SIG_HANDLE: "true",
    ...fixture.env,
    ...opts.env,
  });
  opts.children.push(host);
  const token = await createSessionTokens({ secret: PROCESS_SESSION_SECRET, ttlSeconds: 3600 }).mint({
    sub: "viewer-1",
    groups: [fixture.workspace.viewer_group],
  });
  const cookie = { cookie: `svc_session=${token}` };
  const pathOf = (i: number) => `/api/dashboards/${fixture.dashboardIds[i]}/stream`;
  const path = pathOf(0);
  return {
    host,
    path,
    cookie,
    pathOf,
    open: (n: number, p = path) => Promise.all(Array.from({ length: n }, () => openStream(host.port, p, cookie))),
  };
}
