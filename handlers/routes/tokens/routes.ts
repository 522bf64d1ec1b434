import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import { NEVER_EXPIRES, tokenSub } from "../../../lib/api-tokens/authenticate.ts";
import { type ApiToken, createApiToken, listApiTokens, revokeApiToken } from "../../../lib/api-tokens/store.ts";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { workspaceFromParam } from "../../../lib/auth/middleware.ts";
import { ROLES } from "../../../lib/auth/types.ts";
import { AppError } from "../../../lib/http/errors.ts";
import { limitBody } from "../../../lib/http/input.ts";
import { type ApiRouter, problems } from "../../openapi.ts";
import { WorkspaceParamsSchema } from "../dashboards/routes.ts";

export interface TokenRouteDeps {
  pool: pg.Pool;
  auth: Auth;
  now: () => number;
}

/** The longest an API token may live when it has an expiry (ten years). */
export const MAX_EXPIRES_IN_DAYS = 3650;

export const CreateTokenSchema = z
  .object({
    name: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .openapi({ description: "What the token is for, shown in the list (e.g. `ci-dashboards`)", example: "ci-dashboards" }),
    role: z.enum(ROLES).openapi({ description: "What the token may do in this workspace, as a person with that role" }),
    expiresInDays: z
      .number()
      .int()
      .min(1)
      .max(MAX_EXPIRES_IN_DAYS)
      .optional()
      .openapi({ description: `Days until the token stops working (1 to ${MAX_EXPIRES_IN_DAYS}); absent: it never expires` }),
  })
  .strict()
  .openapi("CreateApiToken");

export const ApiTokenSchema = z
  .object({
    id: z.string().openapi({ example: "tok_3f9a0c21b7d4" }),
    workspaceId: z.string(),
    name: z.string(),
    role: z.enum(ROLES),
    prefix: z.string().openapi({ description: "The token's text starts with `pbt_<prefix>_`" }),
    createdBy: z.string(),
    createdAt: z.string().openapi({ format: "date-time" }),
    expiresAt: z.string().nullable().openapi({ format: "date-time" }),
    lastUsedAt: z.string().nullable().openapi({ format: "date-time", description: "Last request the token made, on any instance" }),
    revokedAt: z.string().nullable().openapi({ format: "date-time" }),
    revokedBy: z.string().nullable(),
  })
  .openapi("ApiToken");

export const CreatedTokenSchema = ApiTokenSchema.extend({
  token: z.string().openapi({
    description: "The token itself, shown this once: it is stored only as a hash. Send it as `Authorization: Bearer <token>`.",
  }),
}).openapi("CreatedApiToken");

const TokenParamsSchema = WorkspaceParamsSchema.extend({
  tokenId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "tokenId", in: "path" }, example: "tok_3f9a0c21b7d4" }),
});

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function tokenJson(t: ApiToken) {
  return {
    ...t,
    createdAt: t.createdAt.toISOString(),
    expiresAt: iso(t.expiresAt),
    lastUsedAt: iso(t.lastUsedAt),
    revokedAt: iso(t.revokedAt),
  };
}

/** API tokens of a workspace: create (shown once), list (without secrets) and revoke, by its admins. */
export function registerTokenRoutes(app: ApiRouter, deps: TokenRouteDeps): void {
  const { auth, pool } = deps;
  const inWorkspace = workspaceFromParam("workspaceId");

  const create = createRoute({
    method: "post",
    path: "/api/workspaces/{workspaceId}/tokens",
    tags: ["tokens"],
    summary: "Create an API token with a role in this workspace (admin); the token is in this answer only",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("admin", inWorkspace), limitBody(4 * 1024)] as const,
    request: { params: WorkspaceParamsSchema, body: { required: true, content: { "application/json": { schema: CreateTokenSchema } } } },
    responses: {
      201: { description: "Created; copy `token` now", content: { "application/json": { schema: CreatedTokenSchema } } },
      ...problems(400, 401, 403, 404, 409),
    },
  });
  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const expiresAt = body.expiresInDays ? new Date(deps.now() + body.expiresInDays * 86_400_000) : null;
    const { token, stored } = await createApiToken(pool, {
      workspaceId: c.var.workspaceId,
      name: body.name,
      role: body.role,
      createdBy: c.var.user.sub,
      expiresAt,
      createdAt: new Date(deps.now()),
    });
    c.header("cache-control", "no-store");
    return c.json({ ...tokenJson(stored), token }, 201);
  });

  const list = createRoute({
    method: "get",
    path: "/api/workspaces/{workspaceId}/tokens",
    tags: ["tokens"],
    summary: "List the workspace's API tokens, revoked ones included, without their secrets (admin)",
    middleware: [auth.requireSession, auth.requireRole("admin", inWorkspace)] as const,
    request: { params: WorkspaceParamsSchema },
    responses: {
      200: {
        description: "The tokens, newest first",
        content: { "application/json": { schema: z.object({ tokens: z.array(ApiTokenSchema) }) } },
      },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(list, async (c) => {
    c.header("cache-control", "no-store");
    return c.json({ tokens: (await listApiTokens(pool, c.var.workspaceId)).map(tokenJson) }, 200);
  });

  const revoke = createRoute({
    method: "delete",
    path: "/api/workspaces/{workspaceId}/tokens/{tokenId}",
    tags: ["tokens"],
    summary: "Revoke an API token (admin): it fails at once on every instance and its open streams end",
    middleware: [auth.rejectCrossSite, auth.requireSession, auth.requireRole("admin", inWorkspace)] as const,
    request: { params: TokenParamsSchema },
    responses: {
      200: { description: "Revoked (again: revoking twice is not an error)", content: { "application/json": { schema: ApiTokenSchema } } },
      ...problems(400, 401, 403, 404),
    },
  });
  app.openapi(revoke, async (c) => {
    const { tokenId } = c.req.valid("param");
    const result = await revokeApiToken(pool, c.var.workspaceId, tokenId, c.var.user.sub, new Date(deps.now()));
    if (!result) throw new AppError("not_found", "Not found.");
    // The row refuses the token on its next request anywhere; the revocation's notification ends its open streams.
    await auth.revoke({
      kind: "session",
      sessionId: result.token.id,
      sub: tokenSub(result.token.id),
      expiresAt: result.token.expiresAt?.getTime() ?? NEVER_EXPIRES,
    });
    return c.json(tokenJson(result.token), 200);
  });
}
