import type { IncomingMessage, ServerResponse } from "node:http";
import type { Provider } from "oidc-provider";
import type { DevUser } from "./users.ts";

/**
 * Our own minimal interaction pages for the development identity provider (oidc-provider's
 * devInteractions accept any typed login, so they cannot offer the demo users): a sign-in page
 * where you pick a demo user, then a consent page. Returns false when the path is not ours.
 */
export async function handleInteraction(
  provider: Provider,
  users: readonly DevUser[],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> {
  const url = new URL(req.url ?? "/", "http://idp.invalid");
  const match = /^\/interaction\/([A-Za-z0-9_-]{1,100})(?:\/(login|confirm|abort))?$/.exec(url.pathname);
  if (!match) return false;
  const [, uid, action] = match;
  try {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid)
      return send(res, 400, page("Sign-in expired", "<p>This sign-in page is stale. Go back to the application and start again.</p>"));

    if (!action && req.method === "GET") {
      if (details.prompt.name === "login") return send(res, 200, loginPage(uid, users));
      if (details.prompt.name === "consent") {
        const user = users.find((u) => u.id === details.session?.accountId);
        return send(res, 200, consentPage(uid, String(details.params.client_id), String(details.params.scope ?? ""), user));
      }
      return send(res, 501, page("Not supported", "<p>This prompt is not supported by the development provider.</p>"));
    }
    if (req.method !== "POST") return send(res, 405, page("Method not allowed", ""));

    const form = await readForm(req);
    if (action === "login") {
      const user = users.find((u) => u.id === form.get("user"));
      if (!user || details.prompt.name !== "login") return send(res, 400, loginPage(uid, users, "Pick one of the demo users."));
      await provider.interactionFinished(req, res, { login: { accountId: user.id } }, { mergeWithLastSubmission: false });
      return true;
    }
    if (action === "confirm") {
      if (details.prompt.name !== "consent" || !details.session?.accountId) return send(res, 400, page("Nothing to confirm", ""));
      const grant = details.grantId
        ? ((await provider.Grant.find(details.grantId)) ??
          new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id }))
        : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return true;
    }
    // abort
    await provider.interactionFinished(
      req,
      res,
      { error: "access_denied", error_description: "The user cancelled the sign-in" },
      { mergeWithLastSubmission: false },
    );
    return true;
  } catch (err) {
    const name = err instanceof Error ? err.name : "Error";
    return send(
      res,
      400,
      page("Sign-in expired", `<p>The sign-in session was not found (${esc(name)}). Go back to the application and start again.</p>`),
    );
  }
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let body = "";
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 10_000) break;
  }
  return new URLSearchParams(body);
}

function send(res: ServerResponse, status: number, html: string): true {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
  });
  res.end(html);
  return true;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · Pulseboard development sign-in</title>
<style>
body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1d2330}
.note{background:#fff4d6;border:1px solid #e8c66b;padding:.5rem .75rem;border-radius:6px;font-size:.9rem}
button{display:block;width:100%;text-align:left;padding:.75rem 1rem;margin:.5rem 0;border:1px solid #c5cad6;border-radius:8px;background:#fff;font-size:1rem;cursor:pointer}
button:hover{border-color:#3b6ef5}.muted{color:#5b6477;font-size:.9rem}.row{display:flex;gap:.5rem}.row button{text-align:center}
.error{color:#b42318}
</style></head><body><h1>${esc(title)}</h1>
<p class="note">Development identity provider: not for production. Anyone can pick any user.</p>
${body}</body></html>`;
}

function loginPage(uid: string, users: readonly DevUser[], error?: string): string {
  const buttons = users
    .map(
      (u) => `<button type="submit" name="user" value="${esc(u.id)}"><strong>${esc(u.name)}</strong>
<span class="muted">· ${esc(u.email)}${u.description ? ` · ${esc(u.description)}` : ""}<br>groups: ${esc(u.groups.join(", ") || "none")}</span></button>`,
    )
    .join("\n");
  return page(
    "Sign in",
    `${error ? `<p class="error">${esc(error)}</p>` : ""}<p>Pick a demo user:</p>
<form method="post" action="/interaction/${esc(uid)}/login">${buttons}</form>
<form method="post" action="/interaction/${esc(uid)}/abort"><button type="submit" class="muted">Cancel</button></form>`,
  );
}

function consentPage(uid: string, clientId: string, scope: string, user: DevUser | undefined): string {
  return page(
    "Allow access",
    `<p><strong>${esc(clientId)}</strong> asks to sign you in${user ? ` as <strong>${esc(user.name)}</strong>` : ""}
and to read: <code>${esc(scope)}</code>${user ? `, and your groups <code>${esc(user.groups.join(", "))}</code>` : ""}.</p>
<div class="row">
<form method="post" action="/interaction/${esc(uid)}/confirm" style="flex:1"><button type="submit" name="allow" value="yes"><strong>Allow</strong></button></form>
<form method="post" action="/interaction/${esc(uid)}/abort" style="flex:1"><button type="submit">Cancel</button></form>
</div>`,
  );
}
