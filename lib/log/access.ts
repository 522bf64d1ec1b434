import type { Context, MiddlewareHandler } from "hono";
import { routePatternOf } from "../http/route-pattern.ts";
import type { Logger } from "./logger.ts";

/** Who made a request, as the access line says: nobody authenticated, a person's session, or an API token. */
export type CallerKind = "anonymous" | "person" | "token";

/** The identity a route authenticated (c.var.user of lib/auth, or what the stream route verified). */
interface Caller {
  token?: unknown;
}

const CALLER = "accessLogCaller";

/**
 * Tells the access line who the caller was, for a route that authenticates without lib/auth's
 * requireSession (the stream host's stream route).
 */
export function markCaller(c: Context, user: Caller): void {
  c.set(CALLER as never, user as never);
}

function callerKind(c: Context): CallerKind {
  const user = (c.get("user" as never) ?? c.get(CALLER as never)) as Caller | undefined;
  if (!user) return "anonymous";
  return user.token ? "token" : "person";
}

/**
 * One `request` line (info) per request, when the response is ready: method, the route's pattern (never
 * the raw path), status, duration in ms, request id and caller kind. Nothing else: no query string, body,
 * header, cookie, token or user text. For a stream the duration is the time to its first byte.
 */
export function accessLog(opts: { log: Logger; monotonic?: () => number }): MiddlewareHandler {
  const clock = opts.monotonic ?? (() => performance.now());
  return async (c, next) => {
    const started = clock();
    try {
      await next();
    } finally {
      opts.log.info("request", {
        method: c.req.method,
        route: routePatternOf(c),
        status: c.res.status,
        durationMs: Math.round((clock() - started) * 10) / 10,
        requestId: c.get("requestId" as never),
        caller: callerKind(c),
      });
    }
  };
}
