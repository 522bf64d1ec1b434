import type { Hono } from "hono";
import type pg from "pg";
import type { Auth } from "../../../lib/auth/create-auth.ts";
import type { Config } from "../../../lib/config/parse.ts";
import { listWorkspacesForGroups } from "../../../lib/workspaces/store.ts";

/** Response of GET /api/me. */
export interface MeResponse {
  sub: string;
  name: string | null;
  email: string | null;
  groups: string[];
  workspaces: { id: string; name: string; role: "viewer" | "editor" | "admin" }[];
  /** The identity provider's self-service page (OIDC_ACCOUNT_URL), or null to hide the link. */
  accountUrl: string | null;
}

/** GET /api/me: the signed-in user from the session (no identity-provider call) and their workspaces. */
export function registerMe(app: Hono<any>, deps: { pool: pg.Pool; config: Pick<Config, "OIDC_ACCOUNT_URL"> }, auth: Auth): void {
  app.get("/api/me", auth.requireSession, async (c) => {
    const user = c.var.user;
    const workspaces = await listWorkspacesForGroups(deps.pool, user.groups);
    const body: MeResponse = {
      sub: user.sub,
      name: user.name ?? null,
      email: user.email ?? null,
      groups: user.groups,
      workspaces: workspaces.map((w) => ({ id: w.id, name: w.name, role: w.role })),
      accountUrl: deps.config.OIDC_ACCOUNT_URL ?? null,
    };
    c.header("cache-control", "no-store");
    return c.json(body);
  });
}
