import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { SessionUser } from "../../lib/auth/types.ts";
import { EARLY_STREAM_SCRIPT } from "../../lib/live/early-stream.ts";
import type { AssetUrls } from "./assets.ts";

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** An inline SVG icon (img-src allows data:), so browsers do not ask for /favicon.ico. */
const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='4' fill='%232f6fd6'/%3E%3Cpath d='M3 10h2l2-5 2 7 2-4h2' stroke='white' stroke-width='1.5' fill='none'/%3E%3C/svg%3E";

/** The navigation entries; `active` marks the current one for screen readers and styling. */
const NAV = [
  { key: "dashboards", href: "/", label: "Dashboards" },
  { key: "generate", href: "/generate", label: "Generate" },
  { key: "sources", href: "/sources", label: "Sources" },
  { key: "account", href: "/account", label: "Account" },
] as const;

/** Shown to admins of at least one workspace: its API tokens and its audit trail. */
const WORKSPACE_ADMIN_NAV = [
  { key: "tokens", href: "/tokens", label: "Tokens" },
  { key: "audit", href: "/audit", label: "Audit" },
] as const;

/** Shown to platform admins only (PLATFORM_ADMIN_GROUP): where workspaces are created and their groups set. */
const ADMIN_NAV = { key: "admin", href: "/admin/workspaces", label: "Admin" } as const;

export type NavKey = (typeof NAV)[number]["key"] | (typeof WORKSPACE_ADMIN_NAV)[number]["key"] | typeof ADMIN_NAV.key;

/** Who the navigation is for: platform admins get Admin, workspace admins Tokens and Audit. */
export type ShellUser = SessionUser & { platformAdmin?: boolean; workspaceAdmin?: boolean };

export interface ShellOptions {
  title: string;
  /** Which browser module boots (web/main.ts reads data-page). */
  page: string;
  nav: NavKey | null;
  /** `platformAdmin` and `workspaceAdmin` (set by the pages' session middleware) add their entries to the navigation. */
  user: ShellUser;
  assets: AssetUrls;
  /** data-* attributes for the browser module (values are escaped). */
  data?: Record<string, string | number | null | undefined>;
  body: Html;
  /**
   * The live page's stream URL: an inline script, first in the head, opens it while the bundle loads
   * (lib/live/early-stream.ts; the policy allows that one script by its hash).
   */
  earlyStream?: string;
}

/**
 * The HTML shell every page shares. It carries no inline style and no inline script but the live page's early
 * stream, whose text is a constant the CSP names by its hash: everything else runs from the same-origin bundle.
 * That script comes before the stylesheet, since a script after a pending stylesheet waits for it.
 */
export function shell(o: ShellOptions): Html {
  const data = Object.entries({ page: o.page, ...o.data, "platform-admin": o.user.platformAdmin ? "true" : undefined })
    .filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => html` data-${k.replace(/[^a-z0-9-]/g, "")}="${String(v)}"`);
  const who = o.user.name ?? o.user.email ?? o.user.sub;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
${o.earlyStream && o.assets.script ? html`<script data-stream="${o.earlyStream}">${raw(EARLY_STREAM_SCRIPT)}</script>` : ""}
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="${FAVICON}">
<title>${o.title} · Pulseboard</title>
${o.assets.style ? html`<link rel="stylesheet" href="${o.assets.style}">` : ""}
${o.assets.script ? html`<script type="module" src="${o.assets.script}"></script>` : ""}
${o.assets.script ? (o.assets.preload ?? []).map((href) => html`<link rel="modulepreload" href="${href}">`) : ""}
</head>
<body${data}>
<a class="skip" href="#main">Skip to content</a>
<header class="topbar">
  <a class="brand" href="/" aria-label="Pulseboard home"><span class="brand-mark" aria-hidden="true"></span>Pulseboard</a>
  <nav aria-label="Main">
    <ul class="nav-list">
      ${[...NAV, ...(o.user.workspaceAdmin ? WORKSPACE_ADMIN_NAV : []), ...(o.user.platformAdmin ? [ADMIN_NAV] : [])].map(
        (n) => html`<li><a href="${n.href}"${n.key === o.nav ? html` aria-current="page"` : ""}>${n.label}</a></li>`,
      )}
    </ul>
  </nav>
  <div class="who">
    <span class="who-name" title="${o.user.email ?? o.user.sub}">${who}</span>
    <form method="post" action="/api/auth/logout"><button type="submit" class="link">Sign out</button></form>
  </div>
</header>
<main id="main">
${o.assets.script ? "" : html`<p class="notice error" role="alert">The browser assets are not built, so this page cannot load its data. Run <code>npm start</code> or <code>npm run build</code>.</p>`}
${o.body}
</main>
</body>
</html>`;
}

/** The standard "working on it" placeholder a browser module replaces. */
export function loading(label: string): Html {
  return html`<div class="state loading" role="status" aria-live="polite"><span class="spinner" aria-hidden="true"></span>${label}</div>`;
}
