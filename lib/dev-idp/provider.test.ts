import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CookieJar } from "./testing/sign-in.ts";
import { type DevIdentityProvider, DEMO_USERS, startDevIdentityProvider } from "./index.ts";

let idp: DevIdentityProvider;
const REDIRECT = "http://app.test/api/auth/callback";

beforeAll(async () => {
  idp = await startDevIdentityProvider({ clientId: "dev-client", clientSecret: "dev-secret-0123456789", redirectUri: REDIRECT });
});
afterAll(() => idp.stop());

async function startAuthorization(jar: CookieJar): Promise<URL> {
  const url = new URL(`${idp.issuer}/auth`);
  url.search = new URLSearchParams({
    client_id: "dev-client",
    redirect_uri: REDIRECT,
    response_type: "code",
    scope: "openid",
    state: "s".repeat(22),
    nonce: "n".repeat(22),
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
  }).toString();
  const res = await fetch(url, { redirect: "manual" });
  jar.take(res);
  expect(res.status).toBe(303);
  return new URL(res.headers.get("location")!, idp.issuer);
}

describe("development identity provider", () => {
  test("publishes discovery with the groups claim and the code flow", async () => {
    const doc = await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json();
    expect(doc.issuer).toBe(idp.issuer);
    expect(doc.claims_supported).toContain("groups");
    expect(doc.response_types_supported).toContain("code");
    expect(doc.code_challenge_methods_supported).toContain("S256");
  });

  test("the sign-in page offers every demo user, escaped, with a development-only notice", async () => {
    const jar = new CookieJar();
    const interaction = await startAuthorization(jar);
    const res = await fetch(interaction, { headers: { cookie: jar.header() } });
    const html = await res.text();
    expect(res.status).toBe(200);
    for (const u of DEMO_USERS) expect(html).toContain(`value="${u.id}"`);
    expect(html).toContain("not for production");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
  });

  test("picking a user that does not exist re-renders the sign-in page with a 400", async () => {
    const jar = new CookieJar();
    const interaction = await startAuthorization(jar);
    const res = await fetch(`${interaction.href}/login`, {
      method: "POST",
      headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded" },
      body: "user=root",
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("Pick one of the demo users");
  });

  test("an interaction URL without its cookie is a friendly 400, not a stack trace", async () => {
    const res = await fetch(`${idp.issuer}/interaction/abc123`);
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain("start again");
    expect(html).not.toMatch(/\.js:\d+|node_modules/);
  });

  test("refuses to start in production", async () => {
    const before = process.env.NODE_ENV;
    process.env.NODE_ENV = "production";
    try {
      await expect(startDevIdentityProvider({ clientId: "c", clientSecret: "s", redirectUri: REDIRECT })).rejects.toThrow(/production/);
    } finally {
      process.env.NODE_ENV = before;
    }
  });

  test("stop() closes the port", async () => {
    const other = await startDevIdentityProvider({ clientId: "c", clientSecret: "s", redirectUri: REDIRECT });
    expect((await fetch(`${other.issuer}/.well-known/openid-configuration`)).status).toBe(200);
    await other.stop();
    await expect(fetch(`${other.issuer}/.well-known/openid-configuration`)).rejects.toThrow();
  });
});
