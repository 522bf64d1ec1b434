import { html } from "hono/html";
import { type PageApp, type PageContext, pageUser } from "./context.ts";
import { loading, shell } from "./layout.ts";

/**
 * GET /admin/workspaces: the platform admin's list of every workspace, with create, rename, the OIDC groups of each
 * role, and delete. Everything it shows and changes goes through /api/admin/workspaces; others get a 403 page saying
 * what the role is and where it comes from.
 */
export function registerAdminWorkspacesPage(app: PageApp, ctx: PageContext): void {
  app.get("/admin/workspaces", ctx.session, async (c) => {
    const user = pageUser(c);
    if (!user.platformAdmin) {
      const body = html`
<div class="page-head"><h1>Workspaces</h1></div>
<p class="notice error" role="alert">Managing workspaces needs the platform admin role: membership of the OIDC group that
${ctx.config.PLATFORM_ADMIN_GROUP ? "PLATFORM_ADMIN_GROUP names" : "PLATFORM_ADMIN_GROUP names, and no such group is configured here (workspaces then come from a provisioning file, npm run provision)"}.</p>`;
      return c.html(
        // No browser module: the 403 text is the whole page (the list's module would look for its list and fail).
        await shell({ title: "Workspaces · Admin", page: "forbidden", nav: "admin", user, assets: await ctx.assets(), body }),
        403,
      );
    }
    const body = html`
<div class="page-head">
  <h1>Workspaces</h1>
  <div class="actions"><button type="button" class="primary" id="new-workspace">New workspace</button></div>
</div>
<p class="muted">People get a role in a workspace through their identity provider's groups: name the group for each role. An empty group grants that role to nobody. Workspaces written in a provisioning file are put back to the file's values when it is applied again.</p>
<p id="message" class="notice" role="status" hidden></p>
<section id="workspace-form" class="card" aria-label="New workspace" hidden></section>
<section id="workspaces" aria-label="Workspaces" aria-busy="true">${loading("Loading workspaces…")}</section>`;
    return c.html(
      await shell({ title: "Workspaces · Admin", page: "admin-workspaces", nav: "admin", user, assets: await ctx.assets(), body }),
    );
  });
}
