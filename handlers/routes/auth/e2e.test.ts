import { randomBytes } from "node:crypto";
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../../../lib/config/parse.ts";
import { type DevIdentityProvider, DEMO_WORKSPACE_GROUPS, devIdpEnv, startDevIdentityProvider } from "../../../lib/dev-idp/index.ts";
import { CookieJar, signInThroughDevIdp } from "../../../lib/dev-idp/testing/sign-in.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { testAppDeps } from "../../testing/app-deps.ts";
import { createTestConfigStore } from "../../../lib/testing/pg.ts";
import { createWorkspace } from "../../../lib/workspaces/store.ts";
import { createApp } from "../../app.ts";

// The real login, end to end: the embedded identity provider over HTTP, the redirect, the
// callback and the cookie; the app is driven with app.request() (no server needed for it).
const APP = "http://pulseboard.test";
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let idp: DevIdentityProvider;
let app: Hono;
let demoWorkspaceId: string;
const clock = { t: Date.now() };

beforeAll(async () => {
  store = await createTestConfigStore();
  demoWorkspaceId = (await createWorkspace(store.pool, { name: "Demo", ...DEMO_WORKSPACE_GROUPS })).id;
  idp = await startDevIdentityProvider({
    clientId: "pulseboard-e2e",
    clientSecret: randomBytes(24).toString("base64url"),
    redirectUri: `${APP}/api/auth/callback`,
  });
  const { config } = parseConfig({
    DATABASE_URL: store.url,
    SESSION_SECRET: randomBytes(32).toString("base64url"),
    ...devIdpEnv(idp),
    READINESS_CHECK_TIMEOUT_MS: "2000",
    AI_PROVIDER: "gateway",
    AI_MODEL: "test-model",
    AI_GATEWAY_API_KEY: "test-key",
  });
  const deps = testAppDeps(config, { pool: store.pool, log: createLogger({ silent: true }), now: () => clock.t });
  app = createApp(deps);
});

afterAll(async () => {
  await idp?.stop();
  await store?.close();
});

const me = (jar: CookieJar) => app.request(`${APP}/api/me`, { headers: { cookie: jar.header() } });

describe("sign-in through the embedded identity provider", () => {
  test("login → provider sign-in page → consent → callback → session cookie → /api/me", async () => {
    const trace = await signInThroughDevIdp({ app, appOrigin: APP, userId: "demo-editor" });

    // The path a browser takes: our login, the provider's authorize endpoint, its sign-in and consent pages, our callback.
    expect(trace.visited[0]).toBe("/api/auth/login");
    expect(trace.visited.some((v) => v.startsWith(`${idp.issuer}/auth?`))).toBe(true);
    expect(trace.visited.some((v) => v.startsWith(`POST ${idp.issuer}/interaction/`) && v.endsWith("/login"))).toBe(true);
    expect(trace.visited.some((v) => v.endsWith("/confirm"))).toBe(true);
    expect(trace.visited.at(-1)).toBe("/api/auth/callback");

    const res = trace.callbackResponse;
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/");
    const setCookies = res.headers.getSetCookie();
    const session = setCookies.find((c) => c.startsWith("svc_session="))!;
    expect(session).toMatch(/; Max-Age=43200; Path=\/; HttpOnly; SameSite=Lax$/);
    expect(session).not.toContain("Secure"); // not in production
    // The one-use login cookie is spent.
    expect(setCookies.some((c) => c.startsWith("svc_session_login=;") && c.includes("Max-Age=0"))).toBe(true);

    const body = await (await me(trace.appJar)).json();
    expect(body).toEqual({
      sub: "demo-editor",
      name: "Demo Editor",
      email: "editor@demo.pulseboard.test",
      groups: ["demo-editors"],
      workspaces: [{ id: demoWorkspaceId, name: "Demo", role: "editor" }],
      accountUrl: null,
    });
  });

  test("the login request uses PKCE (S256), state, nonce, OIDC_SCOPE and the configured redirect URI", async () => {
    const res = await app.request(`${APP}/api/auth/login`);
    expect(res.status).toBe(302);
    const url = new URL(res.headers.get("location")!);
    expect(url.origin).toBe(idp.issuer);
    const p = url.searchParams;
    expect(p.get("response_type")).toBe("code");
    expect(p.get("client_id")).toBe("pulseboard-e2e");
    expect(p.get("redirect_uri")).toBe(`${APP}/api/auth/callback`);
    expect(p.get("scope")).toBe("openid profile email");
    expect(p.get("code_challenge_method")).toBe("S256");
    expect(p.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(p.get("state")).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(p.get("nonce")).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const loginCookie = res.headers.getSetCookie().find((c) => c.startsWith("svc_session_login="))!;
    expect(loginCookie).toMatch(/; Max-Age=600; Path=\/api\/auth; HttpOnly; SameSite=Lax$/);
    // The verifier travels only inside the signed cookie, never in the URL.
    expect(res.headers.get("location")).not.toContain("code_verifier");
  });

  test.each(["demo-viewer", "demo-admin"])("%s gets the matching role", async (userId) => {
    const trace = await signInThroughDevIdp({ app, appOrigin: APP, userId });
    const body = await (await me(trace.appJar)).json();
    expect(body.workspaces).toEqual([{ id: demoWorkspaceId, name: "Demo", role: userId === "demo-admin" ? "admin" : "viewer" }]);
  });

  test("signing in again in the same browser asks which user, so switching demo users is one click", async () => {
    const idpJar = new CookieJar();
    const first = await signInThroughDevIdp({ app, appOrigin: APP, userId: "demo-viewer", idpJar });
    expect((await (await me(first.appJar)).json()).sub).toBe("demo-viewer");
    expect(idpJar.cookies.size).toBeGreaterThan(0); // the provider's own session is alive
    const second = await signInThroughDevIdp({ app, appOrigin: APP, userId: "demo-admin", idpJar });
    expect(second.visited.some((v) => v.endsWith("/login") && v.startsWith("POST"))).toBe(true);
    expect((await (await me(second.appJar)).json()).sub).toBe("demo-admin");
  });

  test("returnTo brings the user back to a same-site path, and never to another site", async () => {
    const trace = await signInThroughDevIdp({ app, appOrigin: APP, userId: "demo-viewer", returnTo: "/dashboards/db_1?x=1" });
    expect(trace.callbackResponse.headers.get("location")).toBe("/dashboards/db_1?x=1");
    for (const evil of ["//evil.example", "https://evil.example", "/\\evil.example", "javascript:alert(1)"]) {
      const other = await signInThroughDevIdp({ app, appOrigin: APP, userId: "demo-viewer", returnTo: evil });
      expect(other.callbackResponse.headers.get("location")).toBe("/");
    }
  });
});

describe("failed and tampered callbacks", () => {
  const expectCleanProblem = async (res: Response, status: number, code: string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const text = await res.text();
    expect(text).not.toMatch(/\bat \S+ \(|node_modules|\.ts:\d+|stack/i);
    const body = JSON.parse(text);
    expect(body).toMatchObject({ code, status });
    expect(body.detail).toMatch(/sign-in|Sign-in|identity provider/);
    return body;
  };

  test("a changed state is refused (400) and no session is set", async () => {
    const trace = await signInThroughDevIdp({
      app,
      appOrigin: APP,
      userId: "demo-admin",
      beforeCallback: (u) => {
        u.searchParams.set("state", "forged-state-value-forged-state");
        return u;
      },
    });
    await expectCleanProblem(trace.callbackResponse, 400, "bad_request");
    expect(trace.appJar.get("svc_session")).toBeUndefined();
  });

  test("a forged code is refused by the provider (401) and no session is set", async () => {
    const trace = await signInThroughDevIdp({
      app,
      appOrigin: APP,
      userId: "demo-admin",
      beforeCallback: (u) => {
        u.searchParams.set("code", "forged-code");
        return u;
      },
    });
    const body = await expectCleanProblem(trace.callbackResponse, 401, "unauthenticated");
    expect(body.detail).toContain("invalid_grant");
    expect(trace.appJar.get("svc_session")).toBeUndefined();
  });

  test("a callback replayed after it completed is refused: without the spent login cookie, and with it (code already used)", async () => {
    let capturedLoginCookie = "";
    const jar = new CookieJar();
    const trace = await signInThroughDevIdp({
      app,
      appOrigin: APP,
      userId: "demo-viewer",
      appJar: jar,
      beforeCallback: (u) => {
        capturedLoginCookie = jar.header();
        return u;
      },
    });
    expect(trace.callbackResponse.status).toBe(302);
    expect(jar.get("svc_session_login")).toBeUndefined(); // spent

    const withoutCookie = await app.request(trace.callbackUrl);
    await expectCleanProblem(withoutCookie, 400, "bad_request");

    // An attacker who captured both the callback URL and the login cookie: the provider refuses the used code.
    const withCookie = await app.request(trace.callbackUrl, { headers: { cookie: capturedLoginCookie } });
    const body = await expectCleanProblem(withCookie, 401, "unauthenticated");
    expect(body.detail).toContain("invalid_grant");
    expect(withCookie.headers.getSetCookie().some((c) => c.startsWith("svc_session="))).toBe(false);
  });

  test("a callback with another login's cookie is refused (state mismatch)", async () => {
    const other = new CookieJar().take(await app.request(`${APP}/api/auth/login`));
    const trace = await signInThroughDevIdp({
      app,
      appOrigin: APP,
      userId: "demo-viewer",
      beforeCallback: (u) => u,
      appJar: new CookieJar(),
    });
    const res = await app.request(trace.callbackUrl, { headers: { cookie: other.header() } });
    await expectCleanProblem(res, 400, "bad_request");
  });

  test("a tampered login cookie is refused", async () => {
    const jar = new CookieJar();
    jar.take(await app.request(`${APP}/api/auth/login`));
    const value = jar.get("svc_session_login")!;
    const [h, p, s] = value.split(".");
    const payload = JSON.parse(Buffer.from(p, "base64url").toString());
    payload.tx.returnTo = "/elsewhere";
    const forged = `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${s}`;
    const res = await app.request(`${APP}/api/auth/callback?code=c&state=${payload.tx.state}`, {
      headers: { cookie: `svc_session_login=${forged}` },
    });
    await expectCleanProblem(res, 400, "bad_request");
  });

  test("a session cookie cannot stand in for the login cookie", async () => {
    const trace = await signInThroughDevIdp({ app, appOrigin: APP, userId: "demo-viewer" });
    const res = await app.request(`${APP}/api/auth/callback?code=c&state=s`, {
      headers: { cookie: `svc_session_login=${trace.appJar.get("svc_session")}` },
    });
    await expectCleanProblem(res, 400, "bad_request");
  });

  test("cancelling at the provider comes back as a clear 401 (access_denied), as HTML for a browser", async () => {
    const trace = await signInThroughDevIdp({ app, appOrigin: APP, userId: "demo-viewer", consent: "cancel" });
    await expectCleanProblem(trace.callbackResponse.clone(), 401, "unauthenticated");
    expect(await trace.callbackResponse.json()).toMatchObject({ detail: expect.stringContaining("access_denied") });
    const html = await app.request(trace.callbackUrl, { headers: { accept: "text/html,application/xhtml+xml" } });
    expect(html.headers.get("content-type")).toContain("text/html");
    expect(await html.text()).toContain("Sign-in failed");
  });
});

// Last in the file: it stops the identity provider.
describe("identity provider outage", () => {
  test("sessions keep working, a new login fails cleanly, readiness reports degraded with a code", async () => {
    const trace = await signInThroughDevIdp({ app, appOrigin: APP, userId: "demo-admin" });
    expect((await me(trace.appJar)).status).toBe(200);
    const ready = await (await app.request(`${APP}/api/ready`)).json();
    expect(ready).toMatchObject({ status: "ready", checks: { identityProvider: { status: "ok" } } });

    await idp.stop();
    // Past the 60 s cache of the last successful issuer check.
    clock.t += 61_000;

    const meRes = await me(trace.appJar);
    expect(meRes.status).toBe(200);
    expect((await meRes.json()).sub).toBe("demo-admin");

    const readyRes = await app.request(`${APP}/api/ready`);
    expect(readyRes.status).toBe(200);
    expect(await readyRes.json()).toMatchObject({
      status: "degraded",
      checks: { database: { status: "ok" }, identityProvider: { status: "failed", reason: "ECONNREFUSED" } },
    });

    const login = await app.request(`${APP}/api/auth/login`);
    expect(login.status).toBe(503);
    expect(login.headers.get("content-type")).toBe("application/problem+json");
    const problem = await login.json();
    expect(problem).toMatchObject({ code: "identity_provider_unavailable", reason: "ECONNREFUSED" });
    expect(problem.detail).toContain("Existing sessions keep working");
    expect(JSON.stringify(problem)).not.toContain(String(idp.port));
  });
});
