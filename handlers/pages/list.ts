import { html } from "hono/html";
import { type PageApp, type PageContext, pageUser } from "./context.ts";
import { loading, shell } from "./layout.ts";

/** GET /: the dashboards of the chosen workspace, with create and generate actions for editors. */
export function registerListPage(app: PageApp, ctx: PageContext): void {
  app.get("/", ctx.session, async (c) => {
    const body = html`
<div class="page-head">
  <h1>Dashboards</h1>
  <div class="actions">
    <label class="inline">Workspace <select id="workspace" aria-label="Workspace"></select></label>
    <a class="button" id="generate-link" href="/generate" hidden>Generate with AI</a>
    <button type="button" class="primary" id="new-dashboard" hidden>New dashboard</button>
  </div>
</div>
<p id="message" class="notice" role="status" hidden></p>
<section id="dashboards" aria-label="Dashboards" aria-busy="true">${loading("Loading dashboards…")}</section>`;
    return c.html(
      await shell({
        title: "Dashboards",
        page: "list",
        nav: "dashboards",
        user: pageUser(c),
        assets: await ctx.assets(),
        data: {
          "default-from": ctx.config.DEFAULT_TIME_FROM,
          "default-to": ctx.config.DEFAULT_TIME_TO,
        },
        body,
      }),
    );
  });
}
