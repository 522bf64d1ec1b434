import type { Context, Hono, MiddlewareHandler } from "hono";
import type { SessionUser } from "../../lib/auth/types.ts";
import type { AuthVariables } from "../../lib/auth/types.ts";
import type { Config } from "../../lib/config/parse.ts";
import type { AssetUrls } from "./assets.ts";

/** Config the pages read: defaults for new dashboards, the window cap, the model label, the account link. */
export type PagesConfig = Pick<
  Config,
  | "CSP_REPORT_ONLY"
  | "OIDC_ACCOUNT_URL"
  | "MAX_WINDOW_POINTS"
  | "AI_MODEL"
  | "DEFAULT_TIME_FROM"
  | "DEFAULT_TIME_TO"
  | "DEFAULT_REFRESH_INTERVAL_MS"
  | "MIN_REFRESH_INTERVAL_MS"
  | "PLATFORM_ADMIN_GROUP"
  | "isProduction"
>;

export type PageEnv = { Variables: AuthVariables & { platformAdmin?: boolean; workspaceAdmin?: boolean } };
/** The app the pages are registered on (registerPages mounts it on the handlers app). */
export type PageApp = Hono<PageEnv>;

/** What every page registration gets from registerPages. */
export interface PageContext {
  config: PagesConfig;
  /** Redirects anonymous requests to the login route; sets c.var.user. */
  session: MiddlewareHandler<PageEnv>;
  assets(): Promise<AssetUrls>;
}

/** The signed-in user requirePageSession put on the context, and whether they are a platform admin or a workspace admin. */
export function pageUser(c: Context): SessionUser & { platformAdmin: boolean; workspaceAdmin: boolean } {
  return {
    ...(c.get("user") as SessionUser),
    platformAdmin: c.get("platformAdmin") === true,
    workspaceAdmin: c.get("workspaceAdmin") === true,
  };
}
