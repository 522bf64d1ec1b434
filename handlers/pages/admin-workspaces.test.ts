import { Hono } from "hono";
import { describe, expect, test } from "vitest";
import { createSessionTokens } from "../../lib/auth/session.ts";
import { CSP_POLICY } from "../../lib/http/csp.ts";
import type { PagesConfig } from "./context.ts";
import { TEST_PAGES_CONFIG } from "./testing/pages-config.ts";
import { registerPages } from "./index.ts";

const COOKIE = "svc_session";
const sessions = createSessionTokens({ secret: "admin-pages-secret-0123456789abcdef", ttlSeconds: 3600 });
const CONFIG: PagesConfig = { ...TEST_PAGES_CONFIG, PLATFORM_ADMIN_GROUP: "platform-admins" };

function app(config: Partial<PagesConfig> = {}) {
  const a = new Hono();
  registerPages(a, { config: { ...CONFIG, ...config }, auth: { sessions, cookieName: COOKIE }, isWorkspaceAdmin: async () => false });
  return a;
}
async function get(a: Hono, path: string, groups: string[]) {
  const cookie = `${COOKIE}=${await sessions.mint({ sub: "u", name: "U", groups })}`;
  const res = await a.request(path, { headers: { cookie, accept: "text/html" } });
  return { res, body: await res.text() };
}
const ADMIN_LINK = /<a href="\/admin\/workspaces"[^>]*>Admin<\/a>/;

describe("/admin/workspaces", () => {
  test("a platform admin gets the page shell (CSP, no inline script) with the Admin entry marked current", async () => {
    const { res, body } = await get(app(), "/admin/workspaces", ["platform-admins"]);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(CSP_POLICY);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(body).toContain('data-page="admin-workspaces"');
    expect(body).toMatch(/<a href="\/admin\/workspaces" aria-current="page">Admin<\/a>/);
    expect(body).toContain('id="workspaces"');
    expect(body).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(body).not.toMatch(/\sstyle=/);
  });

  test("anyone else gets a 403 page that says what the role is, and no Admin entry", async () => {
    const { res, body } = await get(app(), "/admin/workspaces", ["ops"]);
    expect(res.status).toBe(403);
    expect(body).toContain("needs the platform admin role");
    expect(body).not.toContain('id="workspaces"');
    // No browser module boots on it (the list's module would report a missing #workspaces above the 403 text).
    expect(body).not.toContain('data-page="admin-workspaces"');
    expect(body).not.toMatch(ADMIN_LINK);
    const unset = await get(app({ PLATFORM_ADMIN_GROUP: undefined }), "/admin/workspaces", ["platform-admins"]);
    expect(unset.res.status).toBe(403);
    expect(unset.body).toContain("no such group is configured here");
  });

  test("signed out: the login redirect, like every page", async () => {
    const res = await app().request("/admin/workspaces", { headers: { accept: "text/html" } });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/api/auth/login?returnTo=%2Fadmin%2Fworkspaces");
  });

  test.each(["/", "/sources", "/account"])("%s shows the Admin entry to platform admins only", async (path) => {
    const admin = (await get(app(), path, ["platform-admins"])).body;
    expect(admin).toMatch(ADMIN_LINK);
    // The browser code reads it to point a platform admin without workspaces at the Admin page.
    expect(admin).toContain('data-platform-admin="true"');
    const other = (await get(app(), path, ["ops"])).body;
    expect(other).not.toMatch(ADMIN_LINK);
    expect(other).not.toContain("data-platform-admin");
  });
});
