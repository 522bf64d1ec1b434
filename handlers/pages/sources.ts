import { html } from "hono/html";
import { type PageApp, type PageContext, pageUser } from "./context.ts";
import { loading, shell } from "./layout.ts";

/** GET /sources: the workspace's metrics sources; admins add, edit, test, refresh catalogs and draft notes. */
export function registerSourcesPage(app: PageApp, ctx: PageContext): void {
  app.get("/sources", ctx.session, async (c) => {
    const body = html`
<div class="page-head">
  <h1>Sources</h1>
  <div class="actions">
    <label class="inline">Workspace <select id="workspace" aria-label="Workspace"></select></label>
    <button type="button" class="primary" id="new-source" hidden>Add source</button>
  </div>
</div>
<p id="message" class="notice" role="alert" hidden></p>
<div class="sources-layout">
  <section id="sources" aria-label="Sources" aria-busy="true">${loading("Loading sources…")}</section>
  <section id="source-detail" class="card" aria-label="Source details" hidden></section>
</div>`;
    return c.html(
      await shell({
        title: "Sources",
        page: "sources",
        nav: "sources",
        user: pageUser(c),
        assets: await ctx.assets(),
        data: { "ai-model": ctx.config.AI_MODEL },
        body,
      }),
    );
  });
}
