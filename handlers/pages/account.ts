import { html } from "hono/html";
import { type PageApp, type PageContext, pageUser } from "./context.ts";
import { loading, shell } from "./layout.ts";

/** Only http(s) links are rendered: a `javascript:` or `data:` URL in the config must not become a link. */
function httpUrl(v: string | undefined): string | null {
  if (!v) return null;
  try {
    const u = new URL(v);
    return u.protocol === "https:" || u.protocol === "http:" ? u.href : null;
  } catch {
    return null;
  }
}

/**
 * GET /account: who the session says you are, your workspace roles, the model label, and the
 * identity provider's self-service page when OIDC_ACCOUNT_URL is set (hidden otherwise).
 */
export function registerAccountPage(app: PageApp, ctx: PageContext): void {
  app.get("/account", ctx.session, async (c) => {
    const user = pageUser(c);
    const accountUrl = httpUrl(ctx.config.OIDC_ACCOUNT_URL);
    const model = ctx.config.AI_MODEL;
    const body = html`
<div class="page-head"><h1>Account settings</h1></div>
<div class="account-grid">
  <section class="card" aria-labelledby="profile-h">
    <h2 id="profile-h">Profile</h2>
    <dl class="facts">
      <dt>Name</dt><dd>${user.name ?? html`<span class="muted">not provided</span>`}</dd>
      <dt>Email</dt><dd>${user.email ?? html`<span class="muted">not provided</span>`}</dd>
      <dt>Subject</dt><dd><code>${user.sub}</code></dd>
      <dt>Groups</dt><dd>${user.groups.length ? html`<ul class="tags">${user.groups.map((g) => html`<li>${g}</li>`)}</ul>` : html`<span class="muted">none</span>`}</dd>
    </dl>
    <p class="muted">Your name, email and groups come from your identity provider and are refreshed when you sign in again.</p>
    ${
      accountUrl
        ? html`<p><a class="button" id="account-link" href="${accountUrl}" rel="noopener noreferrer">Manage your account at your identity provider</a></p>`
        : ""
    }
    <form method="post" action="/api/auth/logout"><button type="submit">Sign out</button></form>
  </section>
  <section class="card" aria-labelledby="ws-h">
    <h2 id="ws-h">Workspaces</h2>
    <div id="workspaces" aria-busy="true">${loading("Loading workspaces…")}</div>
  </section>
  <section class="card" aria-labelledby="ai-h">
    <h2 id="ai-h">AI assistance</h2>
    <dl class="facts">
      <dt>Model</dt><dd>${model ? html`<code id="ai-model">${model}</code>` : html`<span class="muted" id="ai-model">not configured</span>`}</dd>
    </dl>
    <p class="muted">Used for dashboard generation, source notes drafts and dashboard chat. Usage limits are set per workspace by its admins.</p>
    <div id="limits"></div>
  </section>
</div>`;
    return c.html(await shell({ title: "Account settings", page: "account", nav: "account", user, assets: await ctx.assets(), body }));
  });
}
