import type { ServerResponse } from "node:http";
import type { Context, Env, Hono } from "hono";
import { getCookie } from "hono/cookie";
import type pg from "pg";
import type { TokenAuthenticator } from "../lib/api-tokens/authenticate.ts";
import { bearerOf } from "../lib/auth/bearer.ts";
import { callerRoleIn } from "../lib/auth/roles.ts";
import type { RevocableSession } from "../lib/auth/revocations.ts";
import type { SessionTokens } from "../lib/auth/session.ts";
import { AppError } from "../lib/http/errors.ts";
import { markCaller } from "../lib/log/access.ts";
import type { DrainState } from "../lib/lifecycle/drain-state.ts";
import type { Timers } from "../lib/lifecycle/timers.ts";
import { withConfigStoreClient } from "../lib/store/deadline.ts";
import { getWorkspace } from "../lib/workspaces/store.ts";
import { isDashboardId } from "./dashboards.ts";
import type { Hub } from "./hub.ts";
import type { SessionStreams } from "./session-streams.ts";
import type { DashboardSpec } from "../lib/dashboards/spec.ts";
import type { LoadedDashboard } from "./poller.ts";
import { type Sink, drainingFrame, drainRetryMs, nodeSink, sseHeaders, webSink } from "./sse.ts";
import { type StreamCompression, deflateSink, streamEncoding } from "./stream-compression.ts";
import { type View, resolveView, viewQueryOf } from "./view.ts";
import type { ViewVariables } from "./view-variables.ts";

export interface StreamRouteDeps {
  hub: Hub;
  /** Null when no session secret is configured: every stream is then unauthenticated. Refuses revoked sessions. */
  sessions: Pick<SessionTokens, "verifySession"> | null;
  /** The in-memory revocation check, asked again after the config-store reads (a logout may land meanwhile). */
  isRevoked(session: RevocableSession): boolean;
  cookieName: string;
  /** API tokens (`Authorization: Bearer`, lib/api-tokens): a request that carries one is judged by it alone. */
  tokens?: TokenAuthenticator;
  pool: pg.Pool;
  /**
   * Bound of the stream's config-store reads (READINESS_CHECK_TIMEOUT_MS): past it the client is given up
   * and the answer is 503 `config_store_unavailable` with Retry-After.
   */
  configStoreTimeoutMs: number;
  timers: Timers;
  drain: DrainState;
  /** Reads a dashboard on `db` (the stream's own bounded client). */
  loadDashboard(id: string, db: pg.PoolClient): Promise<LoadedDashboard | null>;
  /** The saved view's cadence for a spec (the dashboard's value or the default, within the bounds). */
  savedRefreshMs(spec: DashboardSpec): number;
  /**
   * A view's requested variable values checked against the options (stream-host/view-variables.ts): the view's
   * variables as its key holds them; a value outside the options is a 400 naming `var-NAME`.
   */
  selectVariables: ViewVariables["select"];
  /** MIN_REFRESH_INTERVAL_MS: a `refresh` parameter below it is a 400. */
  minRefreshMs: number;
  /** Epoch ms (a view's range is checked at it). */
  now(): number;
  random: () => number;
  maxBufferedBytes: number;
  /** STREAM_COMPRESSION: `deflate` compresses the streams whose request accepts it (stream-host/stream-compression.ts). */
  compression: StreamCompression;
  /** Called on every stream request before the session is checked (starts the config-store listener once). */
  onRequest(): void;
  /** Per-session cap of open streams (stream-host/session-streams.ts); absent: no cap. */
  sessionStreams?: SessionStreams;
  /** Called when the first subscriber attaches (starts the heartbeat). */
  onFirstSubscriber(): void;
}

/** node-server's marker for "the handler wrote the response itself"; a fresh object so no header leaks between requests. */
function alreadySent(): Response {
  return new Response(null, { headers: { "x-hono-already-sent": "true" } });
}

/**
 * Opens a stream: straight on Node's response when served by @hono/node-server (one buffer to every
 * socket, no per-subscriber web stream), else over a web ReadableStream. Deflated when configured and the
 * request accepts it: each frame is compressed once, whatever the number of subscribers it goes to.
 */
function openStream(c: Context, o: { maxBufferedBytes: number; compression: StreamCompression }): { sink: Sink; response: Response } {
  const encoding = streamEncoding(o.compression, c.req.header("accept-encoding"));
  const headers = sseHeaders(encoding, o.compression !== "off");
  const encode = (sink: Sink) => (encoding === "deflate" ? deflateSink(sink) : sink);
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing && typeof outgoing.writeHead === "function" && !outgoing.headersSent) {
    // @hono/node-server's own `close` listener (it aborts the request's signal and drains an unread body) closes over
    // its request wrapper, the parsed headers, the URL and the response object: kept for the hours a stream lives,
    // for nothing, since a stream's GET has no body and nothing reads its signal. The stream owns the response from
    // here on, so that listener goes (about 1 KB per subscriber: bench/fanout.ts prints the heap per subscriber).
    // Removed after the sink added its own, so the response's listener table keeps its shape (a table whose last
    // `close` listener is deleted turns into a slower, larger dictionary).
    const theirs = outgoing.listeners("close") as (() => void)[];
    const sink = nodeSink(outgoing, { maxBufferedBytes: o.maxBufferedBytes, headers });
    for (const l of theirs) outgoing.removeListener("close", l);
    return { sink: encode(sink), response: alreadySent() };
  }
  const { sink, body } = webSink({ maxBufferedBytes: o.maxBufferedBytes });
  return { sink: encode(sink), response: new Response(body, { status: 200, headers }) };
}

/**
 * GET /api/dashboards/:id/stream: session cookie and a role in the dashboard's workspace. A missing
 * dashboard and one in a workspace the caller has no role in are the same 404. While draining the
 * answer is a 200 carrying only the terminal frame (a non-200 makes EventSource give up for good),
 * sent before any authentication so no dependency is touched.
 */
export function registerStream<E extends Env>(app: Hono<E>, deps: StreamRouteDeps): void {
  const terminal = (c: Context) => {
    const { sink, response } = openStream(c, deps);
    void sink.end(drainingFrame(drainRetryMs(deps.random)));
    return response;
  };

  app.get("/api/dashboards/:id/stream", async (c) => {
    if (deps.drain.draining) return terminal(c);
    deps.onRequest();
    const bearer = deps.tokens ? bearerOf(c.req.header("authorization")) : null;
    const token = bearer === null ? getCookie(c, deps.cookieName) : undefined;
    // Revoked sessions are refused here too (an in-memory check, kept fresh by the listener); an API token
    // is looked up in the config store, bounded like the reads below.
    const session =
      bearer !== null && deps.tokens
        ? await withConfigStoreClient(deps.pool, deps.configStoreTimeoutMs, (client) => deps.tokens!.authenticate(bearer, client), {
            timers: deps.timers,
          })
        : token && deps.sessions
          ? await deps.sessions.verifySession(token)
          : null;
    if (!session) throw new AppError("unauthenticated", "Sign in to continue: the session is missing, expired or invalid.");
    markCaller(c, session.user);

    const id = c.req.param("id");
    if (!isDashboardId(id)) throw new AppError("not_found", "Not found.");
    // One client for both reads, bounded like a readiness check: a store that is down answers at once,
    // a hung one within the bound, and either way its client is given up (503 config_store_unavailable).
    const { dashboard, workspace } = await withConfigStoreClient(
      deps.pool,
      deps.configStoreTimeoutMs,
      async (client) => {
        const d = deps.hub.current(id) ?? (await deps.loadDashboard(id, client));
        return { dashboard: d, workspace: d ? await getWorkspace(client, d.workspaceId) : null };
      },
      { timers: deps.timers },
    );
    if (!dashboard) throw new AppError("not_found", "Not found.");
    if (!workspace || !callerRoleIn(session.user, workspace)) throw new AppError("not_found", "Not found.");

    // The view (from, to, refresh, var-*): checked against the dashboard only once the caller may see it.
    const query = viewQueryOf(c.req.url);
    let view: View | undefined;
    if (Object.keys(query).length > 0) {
      const viewed = deps.hub.current(id) ?? dashboard;
      view = resolveView(query, viewed.spec, {
        savedRefreshMs: deps.savedRefreshMs(viewed.spec),
        minRefreshMs: deps.minRefreshMs,
        now: deps.now(),
      });
      // Values against the variables' options (a query variable's from the process's cache): a viewer cannot
      // mint views beyond them. Values equal to the defaults are the saved view's.
      if (Object.keys(view.vars).length > 0) view = { ...view, vars: await deps.selectVariables(viewed, view.vars) };
    }
    // The drain may have begun, or the session been revoked, while we were reading the config store.
    if (deps.drain.draining) return terminal(c);
    if (deps.isRevoked(session)) throw new AppError("unauthenticated", "Sign in to continue: the session is missing, expired or invalid.");
    const current = deps.hub.current(id) ?? dashboard;
    const refused = deps.hub.refusal(current, view);
    if (refused) throw refused;
    const release = deps.sessionStreams?.open(session.sessionId);
    const { sink, response } = openStream(c, deps);
    if (release) sink.onClose(release);
    deps.onFirstSubscriber();
    // The stream ends with `event: session_expired` when the session's `exp` passes or it is revoked.
    deps.hub.subscribe(current, sink, { expiresAt: session.expiresAt, session }, view);
    return response;
  });
}
