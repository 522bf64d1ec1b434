import { html } from "hono/html";
import type { PageApp, PageContext } from "./context.ts";
import { loading } from "./layout.ts";
import { workspaceAdminPage } from "./workspace-admin.ts";

/**
 * GET /tokens: a workspace's API tokens for its admins: the list (never a secret), a new token shown once, and
 * revoke. Everything goes through /api/workspaces/{id}/tokens.
 */
export function registerTokensPage(app: PageApp, ctx: PageContext): void {
  app.get("/tokens", ctx.session, (c) =>
    workspaceAdminPage(c, ctx, {
      title: "API tokens",
      module: "tokens",
      nav: "tokens",
      what: "Managing API tokens",
      body: html`
<div class="page-head">
  <h1>API tokens</h1>
  <div class="actions">
    <label class="inline">Workspace <select id="workspace" aria-label="Workspace"></select></label>
  </div>
</div>
<p class="muted">A token acts in one workspace with the role it was given, as a person with that role would: send it as
<code>Authorization: Bearer &lt;token&gt;</code> to the API (dashboards as code from CI, scripts). It is shown once, when it is
created, and stored only as a hash. Revoking it makes it fail at once on every instance and ends its open streams.</p>
<p id="message" class="notice" role="status" hidden></p>
<section class="card" aria-labelledby="new-token-title">
  <h2 id="new-token-title">New token</h2>
  <form id="token-form" class="form">
    <div class="form-grid">
      <label>Name <input type="text" name="name" id="token-name" required maxlength="100" autocomplete="off" spellcheck="false" placeholder="ci-dashboards"></label>
      <label>Role <select name="role" id="token-role">
        <option value="viewer">viewer</option>
        <option value="editor" selected>editor</option>
        <option value="admin">admin</option>
      </select></label>
      <label>Expires in days <input type="number" name="expiresInDays" id="token-expires" min="1" max="3650" step="1" inputmode="numeric" placeholder="never"></label>
    </div>
    <div class="actions"><button type="submit" class="primary" id="token-create">Create token</button></div>
  </form>
  <div id="token-secret" class="secret-box" hidden></div>
</section>
<section id="tokens" aria-label="Tokens" aria-busy="true">${loading("Loading tokens…")}</section>`,
    }),
  );
}
