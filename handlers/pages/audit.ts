import { html } from "hono/html";
import { AUDIT_ACTIONS } from "../../lib/audit/store.ts";
import type { PageApp, PageContext } from "./context.ts";
import { loading } from "./layout.ts";
import { workspaceAdminPage } from "./workspace-admin.ts";

/**
 * GET /audit: a workspace's audit trail for its admins: who changed what and when, with the versions before and
 * after, filtered (the filters are the URL's query, so a filtered view can be shared) and paged by entry id.
 * Everything goes through /api/workspaces/{id}/audit.
 */
export function registerAuditPage(app: PageApp, ctx: PageContext): void {
  app.get("/audit", ctx.session, (c) =>
    workspaceAdminPage(c, ctx, {
      title: "Audit trail",
      module: "audit",
      nav: "audit",
      what: "Reading the audit trail",
      body: html`
<div class="page-head">
  <h1>Audit trail</h1>
  <div class="actions">
    <label class="inline">Workspace <select id="workspace" aria-label="Workspace"></select></label>
  </div>
</div>
<form id="audit-filters" class="card form filters" aria-label="Filters">
  <div class="form-grid">
    <label>Action <select name="action"><option value="">Any</option>${AUDIT_ACTIONS.map((a) => html`<option value="${a}">${a}</option>`)}</select></label>
    <label>Who <select name="actorKind">
      <option value="">Anyone</option><option value="person">a person</option><option value="token">an API token</option><option value="system">provisioning</option>
    </select></label>
    <label>Person or token id <input type="text" name="actorId" maxlength="512" autocomplete="off" spellcheck="false"></label>
    <label>Target <select name="targetKind">
      <option value="">Anything</option><option value="dashboard">dashboard</option><option value="source">source</option><option value="workspace">workspace</option>
      <option value="limits">limits</option><option value="token">token</option><option value="user">user</option>
    </select></label>
    <label>Target id <input type="text" name="targetId" maxlength="512" autocomplete="off" spellcheck="false"></label>
    <label>Since <input type="datetime-local" name="since" step="1"></label>
    <label>Until <input type="datetime-local" name="until" step="1"></label>
  </div>
  <div class="actions"><button type="submit" class="primary">Apply</button><button type="reset" id="audit-clear">Clear</button></div>
</form>
<p id="message" class="notice" role="status" hidden></p>
<section id="audit" aria-label="Entries" aria-busy="true">${loading("Loading the audit trail…")}</section>
<div class="actions"><button type="button" id="audit-more" hidden>Older entries</button></div>`,
    }),
  );
}
