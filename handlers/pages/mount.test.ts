import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSessionTokens } from "../../lib/auth/session.ts";
import { parseConfig } from "../../lib/config/parse.ts";
import { CSP_POLICY } from "../../lib/http/csp.ts";
import { createLogger } from "../../lib/log/logger.ts";
import { testAppDeps } from "../testing/app-deps.ts";
import { createTestConfigStore } from "../../lib/testing/pg.ts";
import { buildWebAssets } from "../../web/build.ts";
import { createApp } from "../app.ts";

// The pages as createApp mounts them, with a real build of the browser bundle behind /assets/*.
const SECRET = "pages-mount-secret-0123456789abcdefghij";
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let dir: string;
let cookie: string;

async function appWith(env: Record<string, string>): Promise<Hono> {
  const { config } = parseConfig({ DATABASE_URL: store.url, SESSION_SECRET: SECRET, ...env });
  const deps = testAppDeps(config, { pool: store.pool, log: createLogger({ silent: true }) });
  return createApp({ ...deps, oidc: null, webAssetsDir: dir });
}

beforeAll(async () => {
  store = await createTestConfigStore();
  dir = await mkdtemp(join(tmpdir(), "pulseboard-pages-mount-"));
  await buildWebAssets({ outdir: dir, minify: true, sourcemap: false });
  const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: 600 });
  cookie = `svc_session=${await sessions.mint({ sub: "u1", name: "Una", groups: [] })}`;
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe("pages mounted by createApp", () => {
  test("the live dashboard page loads the built bundle, which is served with long cache headers", async () => {
    const app = await appWith({});
    const res = await app.request("/dashboards/db_demo", { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(CSP_POLICY);
    const body = await res.text();
    const script = /<script type="module" src="(\/assets\/main-[A-Z0-9]+\.js)"><\/script>/.exec(body)?.[1];
    const style = /<link rel="stylesheet" href="(\/assets\/main-[A-Z0-9]+\.css)">/.exec(body)?.[1];
    expect(script).toBeDefined();
    expect(style).toBeDefined();
    const js = await app.request(script!);
    expect(js.status).toBe(200);
    expect(js.headers.get("cache-control")).toContain("immutable");
    expect(await js.text()).toContain("/stream");
    expect((await app.request(style!)).status).toBe(200);
  });

  test.each([
    ["br, gzip, deflate", "br"],
    ["gzip, deflate", "gzip"],
    ["gzip;q=1, br;q=0", "gzip"],
    ["*", "br"],
    ["identity", null],
    ["br;q=0, gzip;q=0", null],
  ])("the bundle goes out compressed as Accept-Encoding %j allows: %s", async (accept, expected) => {
    const app = await appWith({});
    const page = await (await app.request("/dashboards/db_demo", { headers: { cookie } })).text();
    const script = /src="(\/assets\/main-[A-Z0-9]+\.js)"/.exec(page)![1];
    const plain = Buffer.from(await (await app.request(script)).arrayBuffer());
    const res = await app.request(script, { headers: { "accept-encoding": accept } });
    expect(res.headers.get("content-encoding")).toBe(expected);
    expect(res.headers.get("vary")).toBe("accept-encoding");
    const body = Buffer.from(await res.arrayBuffer());
    const decoded = expected === "br" ? brotliDecompressSync(body) : expected === "gzip" ? gunzipSync(body) : body;
    expect(decoded.equals(plain)).toBe(true);
    if (expected) expect(body.length).toBeLessThan(plain.length / 2);
  });

  test("anonymous page requests go to the auth route's login with returnTo", async () => {
    const res = await (await appWith({})).request("/dashboards/db_demo/edit");
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/api/auth/login?returnTo=%2Fdashboards%2Fdb_demo%2Fedit");
  });

  test("the auth route's HTML error page is covered by the CSP too; JSON API answers are not", async () => {
    const app = await appWith({ CSP_REPORT_ONLY: "true" });
    const login = await app.request("/api/auth/login", { headers: { accept: "text/html" } });
    expect(login.headers.get("content-type")).toMatch(/^text\/html/);
    expect(login.headers.get("content-security-policy-report-only")).toBe(CSP_POLICY);
    const me = await app.request("/api/me", { headers: { cookie } });
    expect(me.status).toBe(200);
    expect(me.headers.get("content-security-policy-report-only")).toBeNull();
    expect(me.headers.get("content-security-policy")).toBeNull();
  });

  test("OIDC_ACCOUNT_URL from the environment reaches the account page", async () => {
    const withLink = await (await appWith({ OIDC_ACCOUNT_URL: "https://id.example.org/me" })).request("/account", { headers: { cookie } });
    expect(await withLink.text()).toContain('href="https://id.example.org/me"');
    const without = await (await appWith({})).request("/account", { headers: { cookie } });
    expect(await without.text()).not.toContain("account-link");
  });
});
