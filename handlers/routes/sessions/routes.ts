import { createRoute, z } from "@hono/zod-openapi";
import { deleteCookie } from "hono/cookie";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { isWellFormedText } from "../../../lib/oidc/claims.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import type { Revocation } from "../../../lib/auth/revocations.ts";
import type { Config } from "../../../lib/config/parse.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody } from "../../../lib/http/input.ts";
import type { Logger } from "../../../lib/log/logger.ts";
import { createRateLimiter } from "../../../lib/sources/rate-limit.ts";
import { type ApiRouter, problemResponse, problems } from "../../openapi.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";
import { requirePlatformAdmin } from "../workspaces/routes.ts";

type SessionRouteConfig = Pick<Config, "PLATFORM_ADMIN_GROUP" | "SESSION_REVOKE_RATE_PER_MINUTE" | "SESSION_REVOCATIONS_MAX">;

/** A `sub` as an identity provider issues it: printable text (no NUL, no control characters, well-formed Unicode). */
const SubSchema = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[^\u0000-\u001f\u007f]*$/, { error: "must not contain control characters" })
  .refine(isWellFormedText, { error: "must be well-formed Unicode" });

/** Body of the admins' revocations: whose sessions end. */
export const RevokeUserSessionsSchema = z
  .object({ sub: SubSchema.openapi({ description: "The user's `sub` (as in GET /api/me)", example: "demo-viewer" }) })
  .openapi("RevokeUserSessions");

/** What a revocation recorded. */
export const SessionRevocationSchema = z
  .object({
    sub: z.string(),
    revokedBefore: z.string().openapi({
      format: "date-time",
      description: "Every session of `sub` issued at or before this instant is ended (or loses the workspace)",
    }),
    workspaceId: z
      .string()
      .optional()
      .openapi({ description: "Present when only this workspace's access was revoked; absent when the sessions ended everywhere" }),
  })
  .openapi("SessionRevocation");

const configStoreUnavailable = {
  503: problemResponse(
    "The revocation could not be recorded or sessions cannot be checked (`config_store_unavailable`, with Retry-After)",
    true,
  ),
};

/**
 * Who may end whose sessions (docs/auth.md, "Ending sessions"):
 * - POST /api/auth/sessions/revoke: anyone signed in ends every session of their own, this one included.
 * - POST /api/workspaces/{workspaceId}/sessions/revoke: an admin of the workspace ends a person's access to that
 *   workspace only, in every session issued so far; the person's other workspaces are untouched. A person who is not
 *   a member loses nothing, since they had no access to lose (the answer is the same, so it says nothing about who is
 *   a member).
 * - POST /api/admin/sessions/revoke: a platform admin ends every session of a person, everywhere.
 * Each is rate limited per caller (SESSION_REVOKE_RATE_PER_MINUTE); the admins' revocations are also capped
 * (SESSION_REVOCATIONS_MAX entries kept at once).
 */
export function registerSessionRoutes(
  app: ApiRouter,
  deps: { config: SessionRouteConfig; auth: Auth; log: Logger; now: () => number },
): void {
  const { auth, config } = deps;
  const limiter = createRateLimiter({ perMinute: config.SESSION_REVOKE_RATE_PER_MINUTE, now: deps.now, what: "session revocations" });

  /** Refuses a revocation of someone else's sessions that would add an entry past SESSION_REVOCATIONS_MAX. */
  function checkCap(): void {
    if (auth.revocations.size < config.SESSION_REVOCATIONS_MAX) return;
    throw new AppError(
      "rate_limited",
      `Too many revocations are in force (SESSION_REVOCATIONS_MAX, ${config.SESSION_REVOCATIONS_MAX}); try again once older ones have expired.`,
      { retryAfterSeconds: 60 },
      { "Retry-After": "60" },
    );
  }

  /** Records "every session of `sub` issued up to now" (everywhere, or in one workspace) until those sessions would have expired. */
  async function record(sub: string, workspaceId?: string) {
    const revokedBefore = deps.now();
    const expiresAt = revokedBefore + auth.sessions.ttlSeconds * 1000;
    const revocation: Revocation = workspaceId
      ? { kind: "workspace", sub, workspaceId, revokedBefore, expiresAt }
      : { kind: "user", sub, revokedBefore, expiresAt };
    try {
      await auth.revoke(revocation);
    } catch (err) {
      if (err instanceof AppError) throw err;
      const code = (err as { code?: unknown } | null)?.code;
      deps.log.warn("session revocation could not be recorded", { error: typeof code === "string" ? code : "error" });
      throw new AppError(
        "config_store_unavailable",
        "The sessions could not be ended because the configuration store is unavailable; try again shortly.",
        {},
        { "retry-after": "5" },
      );
    }
    return { sub, revokedBefore: new Date(revokedBefore).toISOString(), ...(workspaceId ? { workspaceId } : {}) };
  }

  const body = { required: true, content: { "application/json": { schema: RevokeUserSessionsSchema } } } as const;
  const recorded = (description: string) => ({ description, content: { "application/json": { schema: SessionRevocationSchema } } });

  const own = createRoute({
    method: "post",
    path: "/api/auth/sessions/revoke",
    tags: ["auth"],
    summary: "Sign out everywhere: end every session of mine, this one included (any signed-in user)",
    middleware: [auth.rejectCrossSite, auth.requireSession] as const,
    responses: {
      200: recorded("Ended; the session cookie is cleared"),
      ...problems(401, 403, 429),
      ...configStoreUnavailable,
    },
  });
  app.openapi(own, async (c) => {
    limiter.take(c.var.user.sub);
    const result = await record(c.var.user.sub);
    deleteCookie(c, auth.cookieName, { path: "/", secure: auth.secureCookies, httpOnly: true, sameSite: "Lax" });
    c.header("cache-control", "no-store");
    deps.log.info("sessions revoked", { sub: result.sub, by: "self" });
    return c.json(result, 200);
  });

  const inWorkspace = createRoute({
    method: "post",
    path: "/api/workspaces/{workspaceId}/sessions/revoke",
    tags: ["auth"],
    summary: "End a person's access to this workspace in every session issued so far (admin of this workspace)",
    middleware: [
      auth.rejectCrossSite,
      auth.requireSession,
      auth.requireRole("admin", workspaceFromParam("workspaceId")),
      limitBody(4 * 1024),
    ] as const,
    request: { params: WorkspaceParamsSchema, body },
    responses: {
      200: recorded("Revoked for this workspace"),
      ...problems(400, 401, 403, 404, 429),
      ...configStoreUnavailable,
    },
  });
  app.openapi(inWorkspace, async (c) => {
    limiter.take(c.var.user.sub);
    checkCap();
    const result = await record(c.req.valid("json").sub, c.var.workspaceId);
    c.header("cache-control", "no-store");
    deps.log.info("workspace access revoked", { sub: result.sub, by: c.var.user.sub, workspace: c.var.workspaceId });
    return c.json(result, 200);
  });

  const everywhere = createRoute({
    method: "post",
    path: "/api/admin/sessions/revoke",
    tags: ["auth"],
    summary: "End every session of a person, in every workspace (platform admin)",
    middleware: [auth.rejectCrossSite, auth.requireSession, requirePlatformAdmin(config), limitBody(4 * 1024)] as const,
    request: { body },
    responses: {
      200: recorded("Ended everywhere"),
      ...problems(400, 401, 403, 429),
      ...configStoreUnavailable,
    },
  });
  app.openapi(everywhere, async (c) => {
    limiter.take(c.var.user.sub);
    checkCap();
    const result = await record(c.req.valid("json").sub);
    c.header("cache-control", "no-store");
    deps.log.info("sessions revoked", { sub: result.sub, by: c.var.user.sub, platformAdmin: true });
    return c.json(result, 200);
  });
}
