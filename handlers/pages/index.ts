import { type Env, Hono } from "hono";
import type { Auth } from "../../lib/auth/create-auth.ts";
import { csp } from "../../lib/http/csp.ts";
import { isPlatformAdmin } from "../../lib/auth/roles.ts";
import type { SessionUser } from "../../lib/auth/types.ts";
import { registerAccountPage } from "./account.ts";
import { registerAdminWorkspacesPage } from "./admin-workspaces.ts";
import { registerAuditPage } from "./audit.ts";
import { createAssetCatalog, registerAssets } from "./assets.ts";
import type { PageContext, PageEnv, PagesConfig } from "./context.ts";
import { registerEditorPage } from "./editor.ts";
import { registerGeneratePage } from "./generate.ts";
import { registerListPage } from "./list.ts";
import { registerLivePage } from "./live.ts";
import { requirePageSession } from "./session.ts";
import { registerSourcesPage } from "./sources.ts";
import { registerTokensPage } from "./tokens.ts";

export interface PagesDeps {
  config: PagesConfig;
  auth: Pick<Auth, "sessions" | "cookieName">;
  /** Folder of the built browser bundle (buildWebAssets' outdir); unset serves no assets. */
  webAssetsDir?: string;
  /**
   * Whether the signed-in user is an admin of at least one workspace (handlers/app.ts reads the config store). It
   * shows the Tokens and Audit entries; the pages' data still comes only through the API's own role checks.
   */
  isWorkspaceAdmin(user: SessionUser): Promise<boolean>;
}

/**
 * The server-rendered page shells and the /assets/* bundle. Registers the CSP middleware for every
 * HTML response that follows it, so call it before the routes whose HTML should carry the policy.
 */
export function registerPages<E extends Env>(app: Hono<E>, deps: PagesDeps): void {
  app.use("*", csp({ reportOnly: deps.config.CSP_REPORT_ONLY }));
  const pages = new Hono<PageEnv>();
  // Source maps show the browser code's sources to anyone: served in development, 404 in production.
  registerAssets(pages, deps.webAssetsDir, { sourceMaps: !deps.config.isProduction });
  const catalog = createAssetCatalog(deps.webAssetsDir);
  const session = requirePageSession(deps.auth);
  const ctx: PageContext = {
    config: deps.config,
    // Marks platform admins and workspace admins, so every page's navigation shows them their entries.
    session: (c, next) =>
      session(c, async () => {
        c.set("platformAdmin", isPlatformAdmin(c.var.user.groups, deps.config.PLATFORM_ADMIN_GROUP));
        c.set("workspaceAdmin", await deps.isWorkspaceAdmin(c.var.user));
        await next();
      }),
    assets: () => catalog.urls(),
  };
  registerListPage(pages, ctx);
  registerLivePage(pages, ctx);
  registerEditorPage(pages, ctx);
  registerGeneratePage(pages, ctx);
  registerSourcesPage(pages, ctx);
  registerAccountPage(pages, ctx);
  registerTokensPage(pages, ctx);
  registerAuditPage(pages, ctx);
  registerAdminWorkspacesPage(pages, ctx);
  app.route("/", pages);
}
