import { html } from "hono/html";
import { type PageApp, type PageContext, pageUser } from "./context.ts";
import { shell } from "./layout.ts";

/** GET /generate: prompt + source → a generated dashboard spec to review and save. */
export function registerGeneratePage(app: PageApp, ctx: PageContext): void {
  app.get("/generate", ctx.session, async (c) => {
    const model = ctx.config.AI_MODEL;
    const body = html`
<div class="page-head"><h1>Generate a dashboard</h1></div>
<p class="muted">Describe what you want to watch. The model sees the source's catalog and notes; every panel's SQL is checked by the guard before you can save it.</p>
<p class="model-label">Model: ${model ? html`<code>${model}</code>` : html`<span class="muted">not configured — generation is unavailable</span>`}</p>
<form id="generate-form" class="card form" novalidate>
  <div class="form-grid">
    <label>Workspace <select id="workspace" name="workspace" required></select></label>
    <label>Source <select id="source" name="source" required></select></label>
  </div>
  <label for="prompt">What should the dashboard show?</label>
  <textarea id="prompt" name="prompt" rows="5" maxlength="4000" required placeholder="e.g. Request rate and p95 latency per service over the last 6 hours, and the slowest routes"></textarea>
  <div class="row">
    <button type="submit" class="primary" id="generate"${model ? "" : html` disabled`}>Generate</button>
    <span id="generate-state" class="muted" role="status" aria-live="polite"></span>
  </div>
</form>
<p id="message" class="notice" role="alert" hidden></p>
<section id="result" aria-live="polite"></section>`;
    return c.html(
      await shell({
        title: "Generate",
        page: "generate",
        nav: "generate",
        user: pageUser(c),
        assets: await ctx.assets(),
        data: { "ai-model": model },
        body,
      }),
    );
  });
}
