import { html } from "hono/html";
import { type PageApp, type PageContext, pageUser } from "./context.ts";
import { loading, shell } from "./layout.ts";

/**
 * GET /dashboards/:id/edit: the dashboard editor (panels, layout, settings, JSON, history), booted by
 * web/pages/editor.ts. `/dashboards/new/edit?workspace=<id>` edits a dashboard that does not exist until
 * its first save, so leaving it leaves nothing behind.
 */
export function registerEditorPage(app: PageApp, ctx: PageContext): void {
  app.get("/dashboards/:id/edit", ctx.session, async (c) => {
    const id = c.req.param("id");
    const back = id === "new" ? "/" : `/dashboards/${id}`;
    const body = html`
<div class="page-head">
  <div>
    <p class="crumbs"><a href="/">Dashboards</a>${id === "new" ? "" : html` / <a href="/dashboards/${id}" id="view-link">View</a>`}</p>
    <h1 id="title">Edit dashboard</h1>
  </div>
  <div class="actions">
    <span id="version" class="muted"></span>
    <button type="button" id="undo" title="Undo (Ctrl+Z)" disabled>Undo</button>
    <button type="button" id="redo" title="Redo (Ctrl+Shift+Z)" disabled>Redo</button>
    <button type="button" id="history-open"${id === "new" ? " hidden" : ""}>History</button>
    <button type="button" id="delete" class="danger"${id === "new" ? " hidden" : ""}>Delete</button>
    <a class="button" id="cancel" href="${back}">Cancel</a>
    <button type="button" id="save" class="primary" title="Save (Ctrl+S)" disabled>Save</button>
  </div>
</div>
<p id="message" class="notice" role="alert" hidden></p>
<div id="editor" class="dash-editor" aria-busy="true">
  <div class="tabs" role="tablist">
    <button type="button" role="tab" id="tab-panels" aria-selected="true" aria-controls="pane-panels">Panels</button>
    <button type="button" role="tab" id="tab-settings" aria-selected="false" aria-controls="pane-settings">Settings</button>
    <button type="button" role="tab" id="tab-json" aria-selected="false" aria-controls="pane-json">JSON</button>
  </div>
  <section id="pane-panels" role="tabpanel" aria-labelledby="tab-panels">
    <div class="row"><button type="button" id="add-panel" class="primary">Add panel</button>
      <span class="muted small">Drag a panel by its title bar, resize from its corner; or focus it and use the arrow keys (Shift+arrows resize).</span></div>
    <div id="layout" class="layout-grid" aria-label="Panel layout"></div>
    <div id="panel-form" class="card"></div>
  </section>
  <section id="pane-settings" role="tabpanel" aria-labelledby="tab-settings" hidden></section>
  <section id="pane-json" role="tabpanel" aria-labelledby="tab-json" hidden>
    <label for="spec">Dashboard spec (JSON)</label> <span id="spec-state" class="muted small" aria-live="polite"></span>
    <textarea id="spec" class="code" spellcheck="false" autocomplete="off" rows="28"></textarea>
  </section>
</div>
<dialog id="history" aria-labelledby="history-title"><h2 id="history-title">History</h2><div id="history-body"></div>
  <form method="dialog"><button>Close</button></form></dialog>
<dialog id="conflict" aria-labelledby="conflict-title"><h2 id="conflict-title">Someone else saved this dashboard</h2><div id="conflict-body"></div></dialog>
${loading("Loading dashboard…")}`;
    return c.html(
      await shell({
        title: "Edit dashboard",
        page: "editor",
        nav: "dashboards",
        user: pageUser(c),
        assets: await ctx.assets(),
        data: {
          "dashboard-id": id,
          "max-window-points": ctx.config.MAX_WINDOW_POINTS,
          "default-from": ctx.config.DEFAULT_TIME_FROM,
          "default-to": ctx.config.DEFAULT_TIME_TO,
          "min-refresh-ms": ctx.config.MIN_REFRESH_INTERVAL_MS,
        },
        body,
      }),
    );
  });
}
