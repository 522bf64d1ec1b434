import { html } from "hono/html";
import { type PageApp, type PageContext, pageUser } from "./context.ts";
import { loading, shell } from "./layout.ts";

/** GET /dashboards/:id/edit: JSON spec editing with per-panel query preview; saves with the version it loaded. */
export function registerEditorPage(app: PageApp, ctx: PageContext): void {
  app.get("/dashboards/:id/edit", ctx.session, async (c) => {
    const id = c.req.param("id");
    const body = html`
<div class="page-head">
  <div>
    <p class="crumbs"><a href="/">Dashboards</a> / <a href="/dashboards/${id}" id="view-link">View</a></p>
    <h1 id="title">Edit dashboard</h1>
  </div>
  <div class="actions">
    <span id="version" class="muted"></span>
    <button type="button" id="delete" class="danger">Delete</button>
    <a class="button" href="/dashboards/${id}">Cancel</a>
    <button type="button" id="save" class="primary" disabled>Save</button>
  </div>
</div>
<p id="message" class="notice" role="alert" hidden></p>
<div id="editor" class="editor-layout" aria-busy="true">
  <section class="card">
    <div class="card-head"><h2><label for="spec">Dashboard spec (JSON)</label></h2><span id="spec-state" class="muted" aria-live="polite"></span></div>
    <textarea id="spec" class="code" spellcheck="false" autocomplete="off" rows="28" disabled></textarea>
    <p class="hint">Panels: <code>{id, title, type: timeseries|stat|table|bar, sourceId, sql, unit?}</code>. Time: <code>now</code>, <code>now-6h</code> or an ISO-8601 instant. Refresh at least ${ctx.config.MIN_REFRESH_INTERVAL_MS} ms.</p>
  </section>
  <section class="card">
    <div class="card-head"><h2>Query preview</h2></div>
    <div class="form-grid">
      <label>Panel <select id="preview-panel"></select></label>
      <label>Source <select id="preview-source"></select></label>
    </div>
    <label for="preview-sql">SQL</label>
    <textarea id="preview-sql" class="code" spellcheck="false" rows="10"></textarea>
    <div class="row">
      <button type="button" id="preview-run" class="primary">Run preview</button>
      <button type="button" id="preview-apply">Put this SQL into the spec</button>
    </div>
    <div id="preview-result" class="preview" aria-live="polite"></div>
  </section>
</div>
${loading("Loading dashboard…")}`;
    return c.html(
      await shell({
        title: "Edit dashboard",
        page: "editor",
        nav: "dashboards",
        user: pageUser(c),
        assets: await ctx.assets(),
        data: { "dashboard-id": id, "max-window-points": ctx.config.MAX_WINDOW_POINTS },
        body,
      }),
    );
  });
}
