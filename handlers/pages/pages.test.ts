import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../../lib/auth/session.ts";
import { createHash } from "node:crypto";
import { CSP_POLICY } from "../../lib/http/csp.ts";
import { EARLY_STREAM_SCRIPT } from "../../lib/live/early-stream.ts";
import { liveStreamUrl, readView } from "../../web/lib/view-url.ts";
import type { PagesConfig } from "./context.ts";
import { TEST_PAGES_CONFIG } from "./testing/pages-config.ts";
import { registerPages } from "./index.ts";

const COOKIE = "svc_session";
const sessions = createSessionTokens({ secret: "pages-test-secret-0123456789abcdef", ttlSeconds: 3600, now: () => 1_700_000_000_000 });
const BASE: PagesConfig = TEST_PAGES_CONFIG;
const PAGES = ["/", "/dashboards/db_123", "/dashboards/db_123/edit", "/generate", "/sources", "/account"];

let dir: string;
let cookie: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pulseboard-pages-"));
  await writeFile(
    join(dir, "manifest.json"),
    JSON.stringify({
      "main.js": "main-ABCD2345.js",
      "main.css": "main-WXYZ6789.css",
      "main.imports": ["chunk-QRST2345.js", "../secret.txt", 7],
    }),
  );
  await writeFile(join(dir, "main-ABCD2345.js"), "console.log('hi')");
  await writeFile(join(dir, "main-WXYZ6789.css"), "body{}");
  await writeFile(join(dir, "main-ABCD2345.js.map"), '{"version":3,"sources":["../web/main.ts"]}');
  await writeFile(join(dir, "secret.txt"), "nope");
  cookie = `${COOKIE}=${await sessions.mint({ sub: "u-1", name: "Ada <Admin>", email: "ada@example.com", groups: ["ops", "db-admins"] })}`;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function makeApp(config: Partial<PagesConfig> = {}, webAssetsDir: string | null = dir) {
  const app = new Hono();
  registerPages(app, {
    config: { ...BASE, ...config },
    auth: { sessions, cookieName: COOKIE },
    webAssetsDir: webAssetsDir ?? undefined,
    isWorkspaceAdmin: async () => false,
  });
  return app;
}

const get = (app: Hono, path: string, withCookie = true) =>
  app.request(path, { headers: withCookie ? { cookie, accept: "text/html" } : { accept: "text/html" } });

describe("pages render for a signed-in user", () => {
  test.each(PAGES)("%s is an HTML shell with the bundle and the CSP", async (path) => {
    const res = await get(makeApp(), path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("content-security-policy")).toBe(CSP_POLICY);
    expect(res.headers.get("content-security-policy-report-only")).toBeNull();
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = await res.text();
    expect(body).toMatch(/^<!doctype html>/);
    expect(body).toContain('<script type="module" src="/assets/main-ABCD2345.js"></script>');
    // The chunk main.js imports is fetched with it, not once it is parsed; a name that is not a plain file is not.
    expect(body).toContain('<link rel="modulepreload" href="/assets/chunk-QRST2345.js">');
    expect(body.match(/modulepreload/g)).toHaveLength(1);
    expect(body).toContain('<link rel="stylesheet" href="/assets/main-WXYZ6789.css">');
    // The strict policy forbids inline script and style: the shell carries none but the live page's early stream,
    // which the policy names by the hash of its text.
    const inline = [...body.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    expect(inline).toEqual(path === "/dashboards/db_123" ? [EARLY_STREAM_SCRIPT] : []);
    for (const text of inline) expect(CSP_POLICY).toContain(`'sha256-${createHash("sha256").update(text).digest("base64")}'`);
    expect(body).not.toMatch(/\sstyle=|<style/);
    // User-provided claims are escaped.
    expect(body).toContain("Ada &lt;Admin&gt;");
    expect(body).not.toContain("Ada <Admin>");
  });

  test("the live page carries the dashboard id and the window cap for the browser", async () => {
    const body = await (await get(makeApp({ MAX_WINDOW_POINTS: 99 }), "/dashboards/db_abc")).text();
    expect(body).toContain('data-page="live"');
    expect(body).toContain('data-dashboard-id="db_abc"');
    expect(body).toContain('data-max-window-points="99"');
  });

  test.each([
    "/dashboards/db_abc",
    "/dashboards/db_abc?from=now-6h&to=now&refresh=10s&tz=utc&viewPanel=p1",
    "/dashboards/db_abc?var-host=a&var-host=b%20c&refresh=off",
    "/dashboards/db%2Fx?from=2026-01-01T00:00:00Z&to=1767229200000",
  ])("%s: the early stream opens the URL the page opens for that view, before the stylesheet", async (path) => {
    const body = await (await get(makeApp(), path)).text();
    const url = new URL(path, "http://x");
    const expected = liveStreamUrl(decodeURIComponent(url.pathname.split("/")[2]!), readView(url.searchParams));
    const attr = /<script data-stream="([^"]*)">/.exec(body)?.[1];
    expect(attr?.replaceAll("&amp;", "&")).toBe(expected);
    expect(body.indexOf("data-stream=")).toBeLessThan(body.indexOf('rel="stylesheet"'));
  });

  test("a hostile dashboard id is escaped, not injected", async () => {
    const body = await (await get(makeApp(), `/dashboards/${encodeURIComponent('"><img src=x onerror=alert(1)>')}`)).text();
    expect(body).not.toContain("<img src=x");
    expect(body).toContain("&quot;&gt;&lt;img");
  });

  test("the model label is shown read-only on generate and account", async () => {
    const app = makeApp({ AI_MODEL: "gpt-test-1" });
    expect(await (await get(app, "/generate")).text()).toContain("<code>gpt-test-1</code>");
    expect(await (await get(app, "/account")).text()).toContain('<code id="ai-model">gpt-test-1</code>');
    const off = await (await get(makeApp(), "/generate")).text();
    expect(off).toContain("not configured");
    expect(off).toMatch(/id="generate" disabled/);
  });

  test("without built assets the page says so instead of failing silently", async () => {
    const body = await (await get(makeApp({}, null), "/")).text();
    expect(body).toContain("browser assets are not built");
    expect(body).not.toContain("<script");
  });
});

describe("CSP_REPORT_ONLY switches the header name", () => {
  test.each(PAGES)("%s", async (path) => {
    const res = await get(makeApp({ CSP_REPORT_ONLY: true }), path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy-report-only")).toBe(CSP_POLICY);
    expect(res.headers.get("content-security-policy")).toBeNull();
  });

  test("the policy is strict and same-origin only", () => {
    for (const d of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'self'",
    ]) {
      expect(CSP_POLICY).toContain(d);
    }
    expect(CSP_POLICY).not.toMatch(/unsafe|\*|https?:/);
  });

  test("HTML from other routes registered after the pages gets the policy; JSON does not", async () => {
    const app = makeApp();
    app.get("/other-html", () => new Response("<p>x</p>", { headers: { "content-type": "text/html" } }));
    app.get("/api/thing", (c) => c.json({ ok: true }));
    expect((await app.request("/other-html")).headers.get("content-security-policy")).toBe(CSP_POLICY);
    expect((await app.request("/api/thing")).headers.get("content-security-policy")).toBeNull();
  });
});

describe("account link", () => {
  test("appears when OIDC_ACCOUNT_URL is set", async () => {
    const body = await (await get(makeApp({ OIDC_ACCOUNT_URL: "https://idp.example.com/account?x=1&y=2" }), "/account")).text();
    expect(body).toContain('id="account-link" href="https://idp.example.com/account?x=1&amp;y=2"');
  });

  test.each(["javascript:alert(1)", "data:text/html,<b>x</b>", "not a url"])("is not rendered for a non-http URL %j", async (url) => {
    const body = await (await get(makeApp({ OIDC_ACCOUNT_URL: url }), "/account")).text();
    expect(body).not.toContain("account-link");
  });

  test("is hidden when OIDC_ACCOUNT_URL is unset", async () => {
    const body = await (await get(makeApp(), "/account")).text();
    expect(body).not.toContain("account-link");
    expect(body).not.toContain("identity provider</a>");
  });

  test("the account page shows the session's claims", async () => {
    const body = await (await get(makeApp(), "/account")).text();
    expect(body).toContain("ada@example.com");
    expect(body).toContain("<li>db-admins</li>");
  });
});

describe("anonymous users", () => {
  test.each(PAGES)("%s redirects to the login route with returnTo", async (path) => {
    const res = await get(makeApp(), `${path}?from=x`, false);
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(`/api/auth/login?returnTo=${encodeURIComponent(`${path}?from=x`)}`);
  });

  test.each([
    ["a garbage token", "garbage"],
    ["a token signed with another secret", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"],
    ["an empty cookie", ""],
  ])("%s is treated as anonymous", async (_label, token) => {
    const res = await makeApp().request("/", { headers: { cookie: `${COOKIE}=${token}` } });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toMatch(/^\/api\/auth\/login\?returnTo=/);
  });

  test("an expired session redirects", async () => {
    const old = createSessionTokens({ secret: "pages-test-secret-0123456789abcdef", ttlSeconds: 60, now: () => 1_600_000_000_000 });
    const res = await makeApp().request("/", { headers: { cookie: `${COOKIE}=${await old.mint({ sub: "u", groups: [] })}` } });
    expect(res.status).toBe(302);
  });
});

describe("/assets/*", () => {
  test("serves hashed bundle files with long cache headers", async () => {
    const res = await makeApp().request("/assets/main-ABCD2345.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await res.text()).toBe("console.log('hi')");
    const css = await makeApp().request("/assets/main-WXYZ6789.css");
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
  });

  test.each([
    "/assets/manifest.json",
    "/assets/secret.txt",
    "/assets/..%2F..%2Fetc%2Fpasswd",
    "/assets/%2e%2e%2fpackage.json",
    "/assets/missing-AAAAAAAA.js",
    "/assets/.hidden.js",
  ])("%s is 404", async (path) => {
    expect((await makeApp().request(path)).status).toBe(404);
  });

  test("source maps are served outside production (development keeps them for debugging)", async () => {
    const res = await makeApp().request("/assets/main-ABCD2345.js.map");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });

  test("in production (NODE_ENV=production) source maps are 404 and the bundle itself is still served", async () => {
    const app = makeApp({ isProduction: true });
    expect((await app.request("/assets/main-ABCD2345.js.map")).status).toBe(404);
    expect((await app.request("/assets/main-ABCD2345.js")).status).toBe(200);
  });

  test("no assets directory serves nothing", async () => {
    expect((await makeApp({}, null).request("/assets/main-ABCD2345.js")).status).toBe(404);
  });

  test("without a manifest, plain main.js is referenced with a content-hash version query", async () => {
    const plain = await mkdtemp(join(tmpdir(), "pulseboard-plain-"));
    try {
      await writeFile(join(plain, "main.js"), "1");
      const body = await (await get(makeApp({}, plain), "/")).text();
      expect(body).toMatch(/src="\/assets\/main\.js\?v=[0-9a-f]{12}"/);
      const res = await makeApp({}, plain).request("/assets/main.js?v=abc");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    } finally {
      await rm(plain, { recursive: true, force: true });
    }
  });
});
