import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { AppError } from "../http/errors.ts";
import { type BearerAuthenticator, bearerOf } from "./bearer.ts";
import { callerRoleIn, roleAtLeast, type WorkspaceGroups } from "./roles.ts";
import type { SessionTokens } from "./session.ts";
import type { AuthVariables, Role } from "./types.ts";

/** Resolves the workspace a request acts on (from a path param, or by loading the resource); null when it does not exist. */
export type WorkspaceResolver = (c: Context) => Promise<string | null>;

/**
 * Reads a workspace's role groups by id; null when it does not exist. The entry point passes the config
 * store's (lib/workspaces/store.ts getWorkspace), so auth sits below the workspaces that name its roles.
 */
export type WorkspaceGroupsLookup = (workspaceId: string) => Promise<(WorkspaceGroups & { id: string }) | null>;

/**
 * Requires a valid session cookie, or an `Authorization: Bearer` API token when `tokens` is given, and
 * sets `c.var.user`. A request that carries a bearer token is judged by the token alone: its cookie is
 * ignored. Session verification is local (HS256, and the revocation check of createAuth's sessions is
 * in memory), so it keeps working while the identity provider is down. Anything missing, invalid or
 * revoked is a 401 problem.
 */
export function requireSession(deps: {
  sessions: Pick<SessionTokens, "verify">;
  cookieName: string;
  tokens?: BearerAuthenticator;
}): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async (c, next) => {
    const bearer = deps.tokens ? bearerOf(c.req.header("authorization")) : null;
    if (bearer !== null && deps.tokens) {
      c.set("user", (await deps.tokens.authenticate(bearer)).user);
      await next();
      return;
    }
    const token = getCookie(c, deps.cookieName);
    const user = token ? await deps.sessions.verify(token) : null;
    if (!user) throw new AppError("unauthenticated", "Sign in to continue: the session is missing, expired or invalid.");
    c.set("user", user);
    await next();
  };
}

/**
 * Requires at least `role` in the workspace `resolveWorkspaceId` names; needs requireSession before it.
 * Sets `c.var.workspaceId` and `c.var.role`. A missing resource and a workspace where the caller has
 * no role are the same 404, so members of other workspaces learn nothing about what exists; a role
 * that is too weak is a 403.
 */
export function requireRole(
  role: Role,
  resolveWorkspaceId: WorkspaceResolver,
  deps: { findWorkspace: WorkspaceGroupsLookup },
): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async (c, next) => {
    const user = c.get("user");
    if (!user) throw new AppError("unauthenticated", "Sign in to continue: the session is missing, expired or invalid.");
    const workspaceId = await resolveWorkspaceId(c);
    const workspace = workspaceId ? await deps.findWorkspace(workspaceId) : null;
    // An API token holds its one role in its one workspace; groups play no part.
    const have = workspace ? callerRoleIn(user, workspace) : null;
    if (!workspace || !have) throw new AppError("not_found", "Not found.");
    if (!roleAtLeast(have, role)) {
      throw new AppError("forbidden", `This needs the ${role} role in the workspace; you are ${article(have)} ${have}.`, {
        requiredRole: role,
        role: have,
      });
    }
    c.set("workspaceId", workspace.id);
    c.set("role", have);
    await next();
  };
}

function article(role: Role): string {
  return role === "admin" || role === "editor" ? "an" : "a";
}

/** A resolver reading the workspace id from a path parameter (default `workspaceId`). */
export function workspaceFromParam(name = "workspaceId"): WorkspaceResolver {
  return async (c) => c.req.param(name) || null;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Refuses mutating requests a browser sent from another site: an Origin that is not ours (or
 * "null"), or, without Origin, `Sec-Fetch-Site: cross-site`. Our origin is PUBLIC_BASE_URL when
 * set, else the request's own origin. Requests with neither header (curl, scripts) pass: they
 * carry the cookie only when their author put it there. So do requests with `Authorization: Bearer`:
 * a browser sends that header cross-site only after a CORS preflight this app never grants, and such
 * a request is judged by its token alone (requireSession ignores its cookie), so it cannot ride on one.
 */
export function rejectCrossSite(opts: { publicBaseUrl?: string; bearerTokens?: boolean }): MiddlewareHandler {
  const configured = opts.publicBaseUrl ? new URL(opts.publicBaseUrl).origin : undefined;
  return async (c, next) => {
    // Only where requireSession takes bearer tokens (and so ignores the cookie of such a request).
    const bearer = opts.bearerTokens === true && bearerOf(c.req.header("authorization")) !== null;
    if (!SAFE_METHODS.has(c.req.method) && !bearer) {
      const origin = c.req.header("origin");
      const fetchSite = c.req.header("sec-fetch-site")?.toLowerCase();
      const ours = configured ?? new URL(c.req.url).origin;
      // A browser-set Sec-Fetch-Site: same-origin cannot be forged by page scripts; trust it even when a proxy rewrote the Host.
      const crossSite = fetchSite === "same-origin" ? false : origin !== undefined ? origin !== ours : fetchSite === "cross-site";
      if (crossSite) throw new AppError("cross_site_request", "Cross-site requests may not change anything.");
    }
    await next();
  };
}
