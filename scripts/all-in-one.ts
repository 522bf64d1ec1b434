import { createRevocationSet } from "../lib/auth/revocations.ts";
import { isStreamHostPath } from "../lib/http/stream-host-paths.ts";
import { closeConfigStore, serveProcess } from "../lib/lifecycle/serve.ts";
import type { AppServices, ServiceDeps } from "../lib/service/deps.ts";
import type { SignalSource } from "../lib/lifecycle/shutdown.ts";
import { createApp } from "../handlers/app.ts";
import { createStreamHost } from "../stream-host/app.ts";

/**
 * Serves the handlers and the stream host on one port, as CloudFront/ALB path rules do in the cloud
 * (lib/http/stream-host-paths.ts), with the stream host's drain on SIGTERM/SIGINT: the serve and drain
 * steps of every process (lib/lifecycle/serve.ts), after scripts/start.ts loaded the config and built the deps. The demo's own services (embedded PostgreSQL, the
 * development identity provider, the traffic generator) stop after the drain, in `cleanups` order.
 */
export async function runAllInOne(opts: {
  deps: ServiceDeps;
  /** The handlers' services; the stream host runs its panels through the same guarded runner. */
  services: AppServices;
  webAssetsDir?: string;
  demo?: { workspaceId: string; sourceId: string; dashboardId: string };
  say: (line: string) => void;
  cleanups: (() => Promise<void>)[];
  notes?: string[];
  /**
   * The origin sign-in works on (the redirect URI registered with the identity provider). Pages and the
   * login route asked for on another host name (127.0.0.1 for localhost) are redirected there, because the
   * login cookie set on one host name is not sent to the other.
   */
  publicOrigin?: string;
  /** Where SIGTERM and SIGINT come from (npm start passes them coalesced: one Ctrl-C reaches it twice under npm). */
  signals?: SignalSource;
  /** Appended to the last line, "Ctrl-C drains and stops": what else it stops (the embedded PostgreSQL). */
  stopsWhat?: string;
}): Promise<void> {
  const { deps, say, cleanups } = opts;
  const { config } = deps;
  // One revocation set for both apps, kept fresh by the stream host's config-store listener: a logout
  // here ends this process's open streams of that session at once.
  const revocations = createRevocationSet({ now: deps.now });
  const host = createStreamHost(deps, { queryRunner: opts.services.queryRunner, revocations });
  // One query-variable options cache for both apps: the variables bar and the streams read a variable's
  // options once per cadence between them, as in a deployment where each process has its own.
  const app = createApp({
    ...deps,
    ...opts.services,
    revocations,
    variableOptions: host.variableOptions,
    webAssetsDir: opts.webAssetsDir,
  });
  host.start();

  let exiting = false;
  const exit = (code: number) => {
    if (exiting) return;
    exiting = true;
    // Even on a forced exit the embedded server is stopped, bounded so a stuck stop cannot hold Ctrl-C.
    const stopAll = (async () => {
      for (const c of cleanups) await c().catch(() => {});
    })();
    const bound = new Promise((r) => setTimeout(r, 5_000).unref());
    void Promise.race([stopAll, bound]).finally(() => process.exit(code));
  };
  const publicOrigin = opts.publicOrigin ?? `http://localhost:${config.PORT}`;
  serveProcess({
    // A port in use ends the start in one line, after stopping what the start brought up.
    name: "start failed",
    config,
    port: config.PORT,
    portVariable: "PORT",
    fetch: (req, env) => {
      const url = new URL(req.url);
      const elsewhere = opts.publicOrigin !== undefined && url.host !== new URL(publicOrigin).host;
      if (elsewhere && isSignInEntry(req.method, url.pathname)) {
        return Response.redirect(`${publicOrigin}${url.pathname}${url.search}`, 302);
      }
      return isStreamHostPath(url.pathname) ? host.app.fetch(req, env) : app.fetch(req, env);
    },
    drain: deps.drain,
    host,
    closeStores: () => closeConfigStore(deps),
    log: deps.log,
    exit,
    proc: opts.signals,
    onListening: () => {
      say(`Pulseboard is running: ${publicOrigin}`);
      if (opts.demo) say(`  demo dashboard: ${publicOrigin}/dashboards/${opts.demo.dashboardId}`);
      for (const note of opts.notes ?? []) say(note);
      say(`  Ctrl-C drains and stops${opts.stopsWhat ?? ""}.`);
    },
  });
}

/** Page loads and the login route: what a browser opens by hand. API calls and probes answer on any host name. */
function isSignInEntry(method: string, path: string): boolean {
  if (method !== "GET" && method !== "HEAD") return false;
  return path === "/api/auth/login" || !path.startsWith("/api/");
}
