import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { MAX_SESSION_TOKEN_LENGTH } from "../../../lib/auth/session.ts";
import type { SessionUser } from "../../../lib/auth/types.ts";
import type { Config } from "../../../lib/config/parse.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { problem } from "../../../lib/http/problem.ts";
import type { Logger } from "../../../lib/log/logger.ts";
import type { Readiness } from "../../../lib/probes/ready.ts";
import { type OidcLogin, safeReturnTo } from "../../../lib/oidc/login.ts";
import { LOGIN_TRANSACTION_TTL_SECONDS } from "../../../lib/oidc/transaction.ts";
import { listWorkspacesForGroups } from "../../../lib/workspaces/store.ts";
import { type ApiRouter, ProblemSchema, problemResponse, problems } from "../../openapi.ts";

type AuthRouteConfig = Pick<Config, "OIDC_REDIRECT_URI" | "PUBLIC_BASE_URL" | "PLATFORM_ADMIN_GROUP">;

/** Path the login cookie is scoped to: only the callback ever needs it. */
const LOGIN_COOKIE_PATH = "/api/auth";

/** What the auth routes need besides the auth toolkit and the OIDC relying party. */
export interface AuthRouteDeps {
  config: AuthRouteConfig;
  log: Logger;
  pool: pg.Pool;
  now: () => number;
  readiness?: Pick<Readiness, "checkIdentityProvider">;
}

/**
 * A failure of a sign-in step: an HTML page for a browser (Accept: text/html), problem+json otherwise.
 */
const signInFailure = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: ProblemSchema }, "text/html": { schema: z.string() } },
});

/** A redirect, with the Location it sends. */
const redirect = (description: string) => ({
  description,
  headers: { Location: { description: "Where the browser goes next", schema: { type: "string" as const } } },
});

const login = createRoute({
  method: "get",
  path: "/api/auth/login",
  tags: ["auth"],
  summary: "Start an OIDC login (authorization code, PKCE, state, nonce)",
  security: [],
  // Not a zod query schema: safeReturnTo (lib/oidc/login.ts) falls back to "/" for an unsafe returnTo
  // instead of refusing the sign-in, and a repeated parameter uses its first value.
  parameters: [
    {
      name: "returnTo",
      in: "query",
      required: false,
      schema: { type: "string" },
      description: "A same-site path to land on after sign-in; anything else lands on /.",
    },
  ],
  responses: {
    302: redirect("Redirect to the identity provider, with the login transaction cookie"),
    400: problemResponse("Invalid input (`validation_failed`: a returnTo the input rules refuse)"),
    503: signInFailure("`identity_provider_unavailable`: sign-in is not configured, or the identity provider does not answer"),
  },
});

const callback = createRoute({
  method: "get",
  path: "/api/auth/callback",
  tags: ["auth"],
  summary: "OIDC callback: verifies the ID token and sets the session cookie",
  security: [],
  // The identity provider's parameters (code, state, iss, error) are checked by openid-client against the
  // login transaction, so they have no zod schema here.
  responses: {
    302: redirect("Signed in; redirect to returnTo"),
    400: signInFailure("The sign-in expired, was already used or was started in another browser (`bad_request`)"),
    401: signInFailure(
      "The identity provider's answer failed verification, or a claim (sub, name, email, groups) holds a NUL or ill-formed Unicode (`unauthenticated`, `reason: invalid_claim` with `claim`)",
    ),
    503: signInFailure(
      "`identity_provider_unavailable`, or `config_store_unavailable` (with Retry-After) while narrowing an oversized groups claim",
    ),
  },
});

const logout = createRoute({
  method: "post",
  path: "/api/auth/logout",
  tags: ["auth"],
  summary: "Sign out: end this session on every instance (revoked in the config store) and clear the cookie",
  security: [],
  responses: {
    204: { description: "Signed out" },
    303: redirect("Signed out (an HTML form post): back to /"),
    ...problems(403),
    503: signInFailure("`config_store_unavailable`: the cookie is cleared but the session could not be ended on the server"),
  },
});

/**
 * GET /api/auth/login, GET /api/auth/callback and POST /api/auth/logout ("sign out everywhere" and
 * the admins' revocations are in handlers/routes/sessions). `oidc` is null when sign-in is not configured; login then answers 503 with a
 * clear message.
 */
export function registerAuthRoutes(app: ApiRouter, deps: AuthRouteDeps, auth: Auth, oidc: OidcLogin | null): void {
  const loginCookie = `${auth.cookieName}_login`;

  app.openapi(login, async (c) => {
    try {
      if (!oidc)
        throw new AppError("identity_provider_unavailable", "Sign-in is not configured: OIDC_ISSUER and OIDC_CLIENT_ID must be set.");
      // Discovery is cached, so ask the readiness check (itself cached 60 s / 5 s) whether the issuer
      // answers before sending the browser to a provider that is down.
      const idp = await deps.readiness?.checkIdentityProvider();
      if (idp?.status === "failed") {
        throw new AppError(
          "identity_provider_unavailable",
          "The identity provider is unreachable, so sign-in is unavailable right now. Existing sessions keep working; try again shortly.",
          { reason: idp.reason },
        );
      }
      const redirectUri = deps.config.OIDC_REDIRECT_URI ?? new URL("/api/auth/callback", deps.config.PUBLIC_BASE_URL ?? c.req.url).href;
      const { authorizationUrl, transaction } = await oidc.begin({ redirectUri, returnTo: c.req.query("returnTo") });
      setCookie(c, loginCookie, await auth.loginTransactions.seal(transaction), {
        httpOnly: true,
        secure: auth.secureCookies,
        // Lax: the identity provider's redirect back is a top-level GET, which Lax cookies survive.
        sameSite: "Lax",
        path: LOGIN_COOKIE_PATH,
        maxAge: LOGIN_TRANSACTION_TTL_SECONDS,
      });
      c.header("cache-control", "no-store");
      return c.redirect(authorizationUrl.href, 302);
    } catch (err) {
      return failure(c, err, "login");
    }
  });

  app.openapi(callback, async (c) => {
    // One use only: whatever happens next, the transaction is spent.
    const tx = await auth.loginTransactions.open(getCookie(c, loginCookie));
    const clearTx = () => deleteCookie(c, loginCookie, { path: LOGIN_COOKIE_PATH, secure: auth.secureCookies, httpOnly: true });
    try {
      if (!tx) {
        throw new AppError(
          "bad_request",
          "This sign-in expired, was already used or was started in another browser. Start again from the sign-in page.",
        );
      }
      if (!oidc)
        throw new AppError("identity_provider_unavailable", "Sign-in is not configured: OIDC_ISSUER and OIDC_CLIENT_ID must be set.");
      const token = await sessionToken(await oidc.complete(new URL(c.req.url), tx));
      clearTx();
      setCookie(c, auth.cookieName, token.value, {
        httpOnly: true,
        secure: auth.secureCookies,
        sameSite: "Lax",
        path: "/",
        maxAge: auth.sessions.ttlSeconds,
      });
      deps.log.info("sign-in", { sub: token.user.sub, groups: token.user.groups.length });
      c.header("cache-control", "no-store");
      return c.redirect(safeReturnTo(tx.returnTo), 302);
    } catch (err) {
      clearTx();
      return failure(c, err, "callback");
    }
  });

  app.openapi({ ...logout, middleware: [auth.rejectCrossSite] as const }, async (c) => {
    const token = getCookie(c, auth.cookieName);
    // The cookie goes whatever happens next, so this browser is signed out even if the server-side record fails.
    deleteCookie(c, auth.cookieName, { path: "/", secure: auth.secureCookies, httpOnly: true, sameSite: "Lax" });
    c.header("cache-control", "no-store");
    try {
      // A token that is already invalid, expired or revoked has nothing left to end.
      const session = token ? await auth.sessions.verifySession(token) : null;
      if (session) {
        // Revoked in the config store (every instance learns it by NOTIFY) and in this process at once.
        await auth.revoke({ kind: "session", sessionId: session.sessionId, sub: session.user.sub, expiresAt: session.expiresAt });
        deps.log.info("sign-out", { sub: session.user.sub });
      }
    } catch (err) {
      return failure(c, configStoreFailure(err), "sign-out");
    }
    // A plain HTML form post lands back on the home page; fetch callers get 204.
    if (prefersHtml(c)) return c.redirect("/", 303);
    return c.body(null, 204);
  });

  /** A failed revocation write is a 503: the caller must know the session may still be usable elsewhere. */
  function configStoreFailure(err: unknown): unknown {
    if (err instanceof AppError) return err;
    deps.log.warn("sign-out could not be recorded", { error: errorCode(err) });
    return new AppError(
      "config_store_unavailable",
      "This browser is signed out, but the session could not be ended on the server because the configuration store is unavailable, so a copy of it would work until it expires. Once the service is back, sign in and end every session of yours (POST /api/auth/sessions/revoke).",
      {},
      { "retry-after": "5" },
    );
  }

  /**
   * The session token for a signed-in user. Browsers drop a cookie over 4096 bytes (name and value)
   * and verify refuses such a token, so a directory that sends hundreds of long group names would
   * loop the user through sign-in: then only the groups that name a workspace role (or the platform admin group) are
   * kept.
   */
  async function sessionToken(user: SessionUser): Promise<{ value: string; user: SessionUser }> {
    const max = Math.min(MAX_SESSION_TOKEN_LENGTH, 4096 - auth.cookieName.length - 1);
    const value = await auth.sessions.mint(user);
    if (value.length <= max) return { value, user };
    const workspaces = await listWorkspacesForGroups(deps.pool, user.groups);
    const roleGroups = new Set(workspaces.flatMap((w) => [w.viewer_group, w.editor_group, w.admin_group]));
    if (deps.config.PLATFORM_ADMIN_GROUP) roleGroups.add(deps.config.PLATFORM_ADMIN_GROUP);
    const kept: SessionUser = { ...user, groups: user.groups.filter((g) => roleGroups.has(g)) };
    const smaller = await auth.sessions.mint(kept);
    if (smaller.length > max) {
      throw new AppError(
        "unauthenticated",
        "Sign-in failed: the identity provider sent more workspace groups than fit in a session. Ask an administrator to narrow the groups claim.",
      );
    }
    return { value: smaller, user: kept };
  }

  /** Expected failures become an HTML page for browsers and problem+json otherwise, keeping any Set-Cookie. */
  function failure(c: Context, err: unknown, step: "login" | "callback" | "sign-out"): Response {
    if (!(err instanceof AppError)) throw err;
    deps.log.warn(step === "sign-out" ? "sign-out failed" : `sign-in ${step} failed`, { code: err.code, reason: err.extra.reason });
    const cookies = c.res.headers.getSetCookie?.() ?? [];
    const res = prefersHtml(c)
      ? errorPage(err, step === "sign-out" ? "Sign-out incomplete" : "Sign-in failed")
      : problem(c, err.code, err.detail, err.extra, err.headers);
    for (const cookie of cookies) res.headers.append("set-cookie", cookie);
    return res;
  }
}

function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : err instanceof Error ? err.name : "error";
}

function prefersHtml(c: Context): boolean {
  const accept = c.req.header("accept") ?? "";
  return accept.includes("text/html");
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);

function errorPage(err: AppError, title: string): Response {
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · Pulseboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto; padding: 0 1rem">
<h1>${title}</h1>
<p>${escapeHtml(err.detail)}</p>
<p><small>Code: <code>${escapeHtml(err.code)}</code></small></p>
<p><a href="/api/auth/login">Try signing in again</a> · <a href="/">Home</a></p>
</body></html>`;
  return new Response(body, {
    status: err.status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...err.headers },
  });
}
