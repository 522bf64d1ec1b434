import { html } from "hono/html";
import { type PageApp, type PageContext, pageUser } from "./context.ts";
import { loading, shell } from "./layout.ts";
import { liveStreamUrl, readView } from "../../web/lib/view-url.ts";

/** GET /dashboards/:id: the live dashboard, fed by the SSE stream, with the chat panel. */
export function registerLivePage(app: PageApp, ctx: PageContext): void {
  app.get("/dashboards/:id", ctx.session, async (c) => {
    const id = c.req.param("id");
    const body = html`
<div class="page-head">
  <div>
    <p class="crumbs"><a href="/">Dashboards</a></p>
    <h1 id="title">Dashboard</h1>
  </div>
  <div class="actions">
    <span id="status" class="pill" role="status" aria-live="polite">Connecting…</span>
    <span id="updated" class="muted small"></span>
    <a class="button" id="edit-link" href="/dashboards/${id}/edit" hidden>Edit</a>
    <button type="button" id="chat-toggle" aria-expanded="false" aria-controls="chat">Ask about this dashboard</button>
  </div>
</div>
<div class="toolbar" role="toolbar" aria-label="Time range and refresh">
  <div id="time-controls" class="time-controls"></div>
  <button type="button" id="back-to-dashboard" hidden>Back to dashboard</button>
</div>
<div id="variables" class="variables" role="group" aria-label="Dashboard variables" hidden></div>
<p id="message" class="notice" role="alert" hidden></p>
<div class="live-layout">
  <section id="panels" class="panel-grid" aria-label="Panels" aria-busy="true">${loading("Loading dashboard…")}</section>
  <aside id="chat" class="chat" aria-label="Chat about this dashboard" hidden></aside>
</div>`;
    return c.html(
      await shell({
        title: "Dashboard",
        page: "live",
        nav: "dashboards",
        user: pageUser(c),
        assets: await ctx.assets(),
        data: {
          "dashboard-id": id,
          "max-window-points": ctx.config.MAX_WINDOW_POINTS,
          "min-refresh-ms": ctx.config.MIN_REFRESH_INTERVAL_MS,
          "ai-model": ctx.config.AI_MODEL,
        },
        body,
        // The stream the page opens first, for the view in its address (the page checks it is the same URL).
        earlyStream: liveStreamUrl(id, readView(new URL(c.req.url).searchParams)),
      }),
    );
  });
}
