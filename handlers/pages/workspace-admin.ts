import { html } from "hono/html";
import type { Context } from "hono";
import { type PageContext, pageUser } from "./context.ts";
import { type Html, type NavKey, shell } from "./layout.ts";

/**
 * A page for workspace admins (Tokens, Audit): the shell with its browser module for an admin of at least one
 * workspace; anyone else gets a 403 page saying what the role is and where it comes from, and no browser module
 * (it would look for its list and fail).
 */
export async function workspaceAdminPage(
  c: Context,
  ctx: PageContext,
  page: { title: string; module: string; nav: NavKey; what: string; body: Html },
): Promise<Response> {
  const user = pageUser(c);
  const assets = await ctx.assets();
  if (!user.workspaceAdmin) {
    const body = html`
<div class="page-head"><h1>${page.title}</h1></div>
<p class="notice error" role="alert">${page.what} needs the admin role in a workspace: membership of the identity provider group
that the workspace names for admins (a platform admin sets it on the Admin page, or a provisioning file does).</p>`;
    return c.html(await shell({ title: page.title, page: "forbidden", nav: page.nav, user, assets, body }), 403);
  }
  return c.html(await shell({ title: page.title, page: page.module, nav: page.nav, user, assets, body: page.body }));
}
