import { createRoute, z } from "@hono/zod-openapi";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import { ROLES } from "../../../lib/auth/types.ts";
import type { Config } from "../../../lib/config/parse.ts";
import { listWorkspacesFor } from "../../../lib/workspaces/store.ts";
import { type ApiRouter, problems } from "../../openapi.ts";

/** Response of GET /api/me. */
export const MeSchema = z
  .object({
    sub: z.string(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    groups: z.array(z.string()),
    workspaces: z.array(z.object({ id: z.string(), name: z.string(), role: z.enum(ROLES) })),
    accountUrl: z.string().nullable().openapi({ description: "OIDC_ACCOUNT_URL, or null to hide the link" }),
  })
  .openapi("Me");
export type MeResponse = z.infer<typeof MeSchema>;

export interface MeRouteDeps {
  pool: pg.Pool;
  config: Pick<Config, "OIDC_ACCOUNT_URL">;
  auth: Auth;
}

/** GET /api/me: the signed-in user from the session (no identity-provider call) and their workspaces. */
export function registerMeRoutes(app: ApiRouter, deps: MeRouteDeps): void {
  const route = createRoute({
    method: "get",
    path: "/api/me",
    tags: ["auth"],
    summary: "The signed-in user and their workspaces",
    middleware: [deps.auth.requireSession] as const,
    responses: {
      200: { description: "Me", content: { "application/json": { schema: MeSchema } } },
      ...problems(401),
    },
  });
  app.openapi(route, async (c) => {
    const user = c.var.user;
    const workspaces = await listWorkspacesFor(deps.pool, user);
    const body: MeResponse = {
      sub: user.sub,
      name: user.name ?? null,
      email: user.email ?? null,
      groups: user.groups,
      workspaces: workspaces.map((w) => ({ id: w.id, name: w.name, role: w.role })),
      accountUrl: deps.config.OIDC_ACCOUNT_URL ?? null,
    };
    c.header("cache-control", "no-store");
    return c.json(body, 200);
  });
}
