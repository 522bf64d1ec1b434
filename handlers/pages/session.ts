import type { MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import type { Auth } from "../../lib/auth/create-auth.ts";
import type { AuthVariables } from "../../lib/auth/types.ts";

/** Where an anonymous page request goes: the login route, which brings the user back to `returnTo`. */
export function loginUrl(pathAndQuery: string): string {
  return `/api/auth/login?returnTo=${encodeURIComponent(pathAndQuery)}`;
}

/**
 * Pages are for signed-in users: a missing or invalid session redirects to the login route
 * (API routes answer 401 instead). Sets `c.var.user`. Workspace access is the JSON API's business:
 * the page is only a shell and every datum it shows comes through a checked API call.
 */
export function requirePageSession(auth: Pick<Auth, "sessions" | "cookieName">): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async (c, next) => {
    const token = getCookie(c, auth.cookieName);
    const user = token ? await auth.sessions.verify(token) : null;
    if (!user) {
      const url = new URL(c.req.url);
      c.header("cache-control", "no-store");
      return c.redirect(loginUrl(url.pathname + url.search), 302);
    }
    c.set("user", user);
    c.header("cache-control", "no-store");
    await next();
  };
}
