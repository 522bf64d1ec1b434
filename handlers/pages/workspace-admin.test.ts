import { Hono } from "hono";
import { describe, expect, test } from "vitest";
import { createSessionTokens } from "../../lib/auth/session.ts";
import type { SessionUser } from "../../lib/auth/types.ts";
import { CSP_POLICY } from "../../lib/http/csp.ts";
import type { PagesConfig } from "./context.ts";
import { TEST_PAGES_CONFIG } from "./testing/pages-config.ts";
import { registerPages } from "./index.ts";

// The Tokens and Audit pages: their shells for workspace admins, a 403 page for everyone else, and their entries in
// the navigation for workspace admins only. Who is one is the injected lookup's answer (handlers/app.ts asks the
// config store: lib/workspaces/store.ts isAdminOfAnyWorkspace, tested on PostgreSQL).

const COOKIE = "svc_session";
const sessions = createSessionTokens({ secret: "workspace-admin-pages-0123456789abcdef", ttlSeconds: 3600 });
const CONFIG: PagesConfig = TEST_PAGES_CONFIG;
const ADMIN_GROUP = "shop-admins";

function app(asked: SessionUser[] = []) {
  const a = new Hono();
  registerPages(a, {
    config: CONFIG,
    auth: { sessions, cookieName: COOKIE },
    isWorkspaceAdmin: async (user) => {
      asked.push(user);
      return user.groups.includes(ADMIN_GROUP);
    },
  });
  return a;
}
async function get(a: Hono, path: string, groups: string[]) {
  const cookie = `${COOKIE}=${await sessions.mint({ sub: "u", name: "U", groups })}`;
  const res = await a.request(path, { headers: { cookie, accept: "text/html" } });
  return { res, body: await res.text() };
}
const TOKENS_LINK = /<a href="\/tokens"[^>]*>Tokens<\/a>/;
const AUDIT_LINK = /<a href="\/audit"[^>]*>Audit<\/a>/;

describe.each([
  ["/tokens", "tokens", 'id="token-form"', "Managing API tokens needs the admin role in a workspace"],
  ["/audit", "audit", 'id="audit-filters"', "Reading the audit trail needs the admin role in a workspace"],
])("%s", (path, page, marker, refusal) => {
  test("a workspace admin gets the page shell (CSP, no inline script), its entry marked current", async () => {
    const { res, body } = await get(app(), path, [ADMIN_GROUP]);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(CSP_POLICY);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(body).toContain(`data-page="${page}"`);
    expect(body).toContain(marker);
    expect(body).toMatch(new RegExp(`<a href="${path}" aria-current="page">`));
    expect(body).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(body).not.toMatch(/\sstyle=/);
  });

  test("anyone else gets a 403 page saying what the role is, with no browser module and no entries", async () => {
    const { res, body } = await get(app(), path, ["shop-editors"]);
    expect(res.status).toBe(403);
    expect(body).toContain(refusal);
    expect(body).toContain('data-page="forbidden"');
    expect(body).not.toContain(marker);
    expect(body).not.toMatch(TOKENS_LINK);
    expect(body).not.toMatch(AUDIT_LINK);
  });

  test("signed out: the login redirect, and nobody is looked up", async () => {
    const asked: SessionUser[] = [];
    const res = await app(asked).request(path, { headers: { accept: "text/html" } });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(`/api/auth/login?returnTo=${encodeURIComponent(path)}`);
    expect(asked).toEqual([]);
  });
});

test.each(["/", "/sources", "/account", "/generate"])("%s shows Tokens and Audit to workspace admins only", async (path) => {
  const asked: SessionUser[] = [];
  const admin = (await get(app(asked), path, [ADMIN_GROUP])).body;
  expect(admin).toMatch(TOKENS_LINK);
  expect(admin).toMatch(AUDIT_LINK);
  expect(asked.map((u) => u.groups)).toEqual([[ADMIN_GROUP]]);
  const editor = (await get(app(), path, ["shop-editors"])).body;
  expect(editor).not.toMatch(TOKENS_LINK);
  expect(editor).not.toMatch(AUDIT_LINK);
});
