import { createHash, createHmac } from "node:crypto";
import { type Server, createServer, validateHeaderValue } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { type JWK, SignJWT, exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { claimTextProblem } from "./claims.ts";
import { AppError } from "../http/errors.ts";
import { type LoginTransaction, type OidcSettings, createOidcLogin, oidcLoginFromConfig, safeReturnTo } from "./login.ts";

// A small identity provider speaking just enough OIDC for the relying party, so each ID token
// defect can be produced on purpose (the embedded oidc-provider only ever issues good ones).
type Key = Awaited<ReturnType<typeof generateKeyPair>>;
let server: Server;
let issuer: string;
let mainKey: Key;
let otherKey: Key;
let altKey: Key;
let mainJwk: JWK;
let altJwk: JWK;
const CLIENT_ID = "rp-test";
const CLIENT_SECRET = "client-secret-client-secret-client-secret";
const REDIRECT = "https://app.example/api/auth/callback";

let mode: "up" | "503" = "up";
let hits = { discovery: 0, token: 0, jwks: 0, userinfo: 0 };
let lastChallenge = "";
let tokenRequest: URLSearchParams | undefined;
let idToken: (nonce: string) => Promise<string>;
let userinfo: Record<string, unknown> = {};

const nowS = () => Math.floor(Date.now() / 1000);
function sign(claims: Record<string, unknown>, key: Key = mainKey, kid = "main") {
  return new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid }).sign(key.privateKey);
}
const goodClaims = (nonce: string) => ({ iss: issuer, aud: CLIENT_ID, sub: "user-1", nonce, iat: nowS(), exp: nowS() + 300 });
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");

beforeAll(async () => {
  mainKey = await generateKeyPair("RS256", { extractable: true });
  otherKey = await generateKeyPair("RS256", { extractable: true });
  altKey = await generateKeyPair("ES256", { extractable: true });
  mainJwk = { ...(await exportJWK(mainKey.publicKey)), kid: "main", alg: "RS256", use: "sig" };
  altJwk = { ...(await exportJWK(altKey.publicKey)), kid: "alt", alg: "ES256", use: "sig" };
  server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", issuer);
    const json = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (mode === "503") return json(503, { error: "down" });
    if (url.pathname === "/.well-known/openid-configuration") {
      hits.discovery++;
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        userinfo_endpoint: `${issuer}/userinfo`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256", "ES256"],
      });
    }
    if (url.pathname === "/jwks") {
      hits.jwks++;
      return json(200, { keys: [mainJwk] });
    }
    if (url.pathname === "/alt-jwks") return json(200, { keys: [altJwk] });
    if (url.pathname === "/userinfo") {
      hits.userinfo++;
      return json(200, { sub: "user-1", ...userinfo });
    }
    if (url.pathname === "/token" && req.method === "POST") {
      hits.token++;
      let body = "";
      for await (const chunk of req) body += chunk;
      tokenRequest = new URLSearchParams(body);
      const auth = Buffer.from((req.headers.authorization ?? "").replace(/^Basic /, ""), "base64").toString();
      const [id, secret] = auth.split(":").map((part) => decodeURIComponent(part));
      if (id !== CLIENT_ID || secret !== CLIENT_SECRET) return json(401, { error: "invalid_client" });
      const verifier = tokenRequest.get("code_verifier") ?? "";
      if (createHash("sha256").update(verifier).digest("base64url") !== lastChallenge) return json(400, { error: "invalid_grant" });
      const nonce = pendingNonce;
      return json(200, { access_token: "at-1", token_type: "Bearer", expires_in: 300, id_token: await idToken(nonce) });
    }
    json(404, {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

let pendingNonce = "";
beforeEach(() => {
  mode = "up";
  hits = { discovery: 0, token: 0, jwks: 0, userinfo: 0 };
  idToken = async (nonce) => sign({ ...goodClaims(nonce), name: "Ada", email: "ada@x.test", groups: ["g1", "g2"] });
  userinfo = {};
});

function settings(over: Partial<OidcSettings> = {}): OidcSettings {
  return {
    issuer,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    scope: "openid profile email",
    groupsClaim: "groups",
    allowInsecureHttp: true,
    ...over,
  };
}

/** begin() then complete() against the fake provider, as the callback route would. */
async function login(over: Partial<OidcSettings> = {}, rp = createOidcLogin(settings(over))) {
  const { authorizationUrl, transaction } = await rp.begin({ redirectUri: REDIRECT });
  lastChallenge = authorizationUrl.searchParams.get("code_challenge")!;
  pendingNonce = transaction.nonce;
  const callback = new URL(REDIRECT);
  callback.search = new URLSearchParams({ code: "code-1", state: transaction.state }).toString();
  return rp.complete(callback, transaction);
}

async function failure(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => {
      throw new Error("expected the login to fail");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe("a good login", () => {
  test("returns the user with groups; PKCE verifier and redirect_uri reach the token endpoint", async () => {
    expect(await login()).toEqual({ sub: "user-1", name: "Ada", email: "ada@x.test", groups: ["g1", "g2"] });
    expect(tokenRequest?.get("redirect_uri")).toBe(REDIRECT);
    expect(tokenRequest?.get("grant_type")).toBe("authorization_code");
  });

  test("discovery is fetched once per process, not per login", async () => {
    const rp = createOidcLogin(settings());
    await login({}, rp);
    await login({}, rp);
    expect(hits.discovery).toBe(1);
  });

  test("a rotated client secret (the config object re-read from Secrets Manager) is used by the next sign-in, without a restart", async () => {
    const config = {
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_CLIENT_SECRET: "the-secret-before-rotation",
      OIDC_SCOPE: "openid profile email",
      OIDC_AUDIENCE: undefined,
      OIDC_JWKS_URL: undefined,
      OIDC_GROUPS_CLAIM: "groups",
      isProduction: false,
    };
    const rp = oidcLoginFromConfig(config)!;
    // The provider refuses the old secret at the token endpoint (invalid_client): the sign-in fails cleanly.
    expect((await failure(login({}, rp))).code).toBe("unauthenticated");
    config.OIDC_CLIENT_SECRET = CLIENT_SECRET;
    expect((await login({}, rp)).sub).toBe("user-1");
    // One discovery per secret: the rotation rebuilt the client once.
    expect(hits.discovery).toBe(2);
    await login({}, rp);
    expect(hits.discovery).toBe(2);
  });

  test.each([
    ["a custom claim name", "roles", { roles: ["r1"] }, ["r1"]],
    ["a dotted path", "realm_access.roles", { realm_access: { roles: ["k1", "k2"] } }, ["k1", "k2"]],
    ["a space-separated string", "groups", { groups: "a b" }, ["a", "b"]],
    ["non-strings and duplicates dropped", "groups", { groups: ["a", 1, "", "a", null] }, ["a"]],
  ])("groups from %s", async (_n, claim, extra, groups) => {
    idToken = async (nonce) => sign({ ...goodClaims(nonce), ...extra });
    expect((await login({ groupsClaim: claim })).groups).toEqual(groups);
  });

  test("groups fall back to userinfo when the ID token has none", async () => {
    idToken = async (nonce) => sign(goodClaims(nonce));
    userinfo = { groups: ["from-userinfo"] };
    expect((await login()).groups).toEqual(["from-userinfo"]);
    expect(hits.userinfo).toBe(1);
  });

  test("OIDC_AUDIENCE is checked in addition to the client id", async () => {
    idToken = async (nonce) => sign({ ...goodClaims(nonce), aud: [CLIENT_ID, "api://pulseboard"], azp: CLIENT_ID });
    expect((await login({ audience: "api://pulseboard" })).sub).toBe("user-1");
    idToken = async (nonce) => sign(goodClaims(nonce));
    const err = await failure(login({ audience: "api://pulseboard" }));
    expect(err.code).toBe("unauthenticated");
  });

  test("OIDC_JWKS_URL replaces the discovered keys", async () => {
    idToken = async (nonce) => new SignJWT(goodClaims(nonce)).setProtectedHeader({ alg: "ES256", kid: "alt" }).sign(altKey.privateKey);
    expect((await login({ jwksUrl: `${issuer}/alt-jwks` })).sub).toBe("user-1");
    idToken = async (nonce) => sign(goodClaims(nonce)); // signed with the discovered key, which is not configured
    expect((await failure(login({ jwksUrl: `${issuer}/alt-jwks` }))).code).toBe("unauthenticated");
  });
});

describe("hostile ID tokens are refused with a clean 401", () => {
  const hmac = (alg: string, secret: string | Buffer, claims: object) => {
    const input = `${b64({ alg, typ: "JWT", kid: "main" })}.${b64(claims)}`;
    return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
  };
  const cases: [string, (nonce: string) => Promise<string>][] = [
    ["another issuer", (n) => sign({ ...goodClaims(n), iss: "https://evil.example" })],
    ["another audience", (n) => sign({ ...goodClaims(n), aud: "someone-else" })],
    ["expired", (n) => sign({ ...goodClaims(n), iat: nowS() - 7200, exp: nowS() - 3600 })],
    ["another nonce", (n) => sign({ ...goodClaims(n), nonce: `${n}x` })],
    ["no nonce", (n) => sign({ ...goodClaims(n), nonce: undefined })],
    ["signed by another key under the same kid", (n) => sign(goodClaims(n), otherKey)],
    ["alg none", async (n) => `${b64({ alg: "none" })}.${b64(goodClaims(n))}.`],
    ["HS256 keyed with the client secret", async (n) => hmac("HS256", CLIENT_SECRET, goodClaims(n))],
    ["RS256 header but HMAC keyed with the public key", async (n) => hmac("RS256", JSON.stringify(mainJwk), goodClaims(n))],
    ["signature cut off", async (n) => (await sign(goodClaims(n))).replace(/\.[^.]+$/, ".AAAA")],
    ["garbage", async () => "not.a.jwt"],
  ];
  test.each(cases)("%s", async (_name, build) => {
    idToken = build;
    const err = await failure(login());
    expect(err.code).toBe("unauthenticated");
    // Refused for the ID token itself, after a successful code exchange (not for some earlier step).
    expect(hits.token).toBe(1);
    expect(err.detail).toMatch(/^Sign-in failed: (the ID token|the identity provider's answer did not verify)/);
    expect(err.detail).not.toContain(issuer);
  });
});

describe("claim text a session cannot carry is refused at sign-in (401 naming the claim)", () => {
  const where: [string, (v: string) => Record<string, unknown>][] = [
    ["sub", (v) => ({ sub: v })],
    ["name", (v) => ({ name: v })],
    ["preferred_username", (v) => ({ preferred_username: v })],
    ["email", (v) => ({ email: v })],
    ["groups", (v) => ({ groups: ["g1", v] })],
    ["groups", (v) => ({ groups: `g1 ${v}` })],
  ];
  const hostile: [string, string][] = [
    ["a NUL character", "\u0000"],
    ["a NUL character", "a\u0000b"],
    ["invalid Unicode", "\ud800"],
    ["invalid Unicode", "a\udfffb"],
    ["invalid Unicode", "\udc00\ud800"],
  ];
  test.each(where.flatMap(([claim, put]) => hostile.map(([problem, v]) => [claim, problem, JSON.stringify(v), put(v)] as const)))(
    "%s with %s (%s)",
    async (claim, problem, _shown, extra) => {
      idToken = async (nonce) => sign({ ...goodClaims(nonce), ...extra });
      const err = await failure(login());
      expect(err.code).toBe("unauthenticated");
      expect(err.extra).toEqual({ reason: "invalid_claim", claim });
      expect(err.detail).toContain(`the identity provider's ${claim} claim contains ${problem}`);
    },
  );

  test("groups that arrive only through userinfo are checked too", async () => {
    idToken = async (nonce) => sign(goodClaims(nonce));
    userinfo = { groups: ["ok", "bad\u0000"] };
    expect((await failure(login())).extra).toEqual({ reason: "invalid_claim", claim: "groups" });
  });

  test("property: a sign-in succeeds exactly when every claim's text is free of NUL and well-formed", async () => {
    const unit = fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom("a", "é", "\u{1F600}", " ", "-") },
      // Halves of a surrogate pair, in or out of order, and NUL.
      { weight: 1, arbitrary: fc.constantFrom("\u0000", "\ud83d", "\ude00") },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) },
    );
    const text = fc.array(unit, { minLength: 1, maxLength: 12 }).map((parts) => parts.join(""));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...where), text, async ([claim, put], value) => {
        idToken = async (nonce) => sign({ ...goodClaims(nonce), ...put(value) });
        const outcome = await login().then(
          () => null,
          (e: unknown) => e,
        );
        if (claimTextProblem(value) === null) expect(outcome).toBeNull();
        else expect((outcome as AppError).extra).toEqual({ reason: "invalid_claim", claim });
      }),
      { seed: 20261127, numRuns: 80 },
    );
  });
});

describe("identity provider outages", () => {
  test("a failed discovery is not cached: the next login retries it", async () => {
    const rp = createOidcLogin(settings());
    mode = "503";
    const err = await failure(rp.begin({ redirectUri: REDIRECT }));
    expect(err).toMatchObject({ code: "identity_provider_unavailable", status: 503 });
    mode = "up";
    expect((await login({}, rp)).sub).toBe("user-1");
    expect(hits.discovery).toBe(1);
  });

  test("an issuer nobody listens on is unavailable with a code reason", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const rp = createOidcLogin(settings({ issuer: `http://127.0.0.1:${port}` }));
    const err = await failure(rp.begin({ redirectUri: REDIRECT }));
    expect(err).toMatchObject({ code: "identity_provider_unavailable", extra: { reason: "ECONNREFUSED" } });
    expect(err.detail).not.toContain(String(port));
  });

  test("a token endpoint that fails mid-login is unavailable, not a crash", async () => {
    const rp = createOidcLogin(settings());
    const { authorizationUrl, transaction } = await rp.begin({ redirectUri: REDIRECT });
    lastChallenge = authorizationUrl.searchParams.get("code_challenge")!;
    mode = "503";
    const callback = new URL(`${REDIRECT}?code=c&state=${transaction.state}`);
    const err = await failure(rp.complete(callback, transaction as LoginTransaction));
    expect(err.code).toBe("identity_provider_unavailable");
  });

  test("an https-only issuer rule holds outside development", () => {
    expect(() => createOidcLogin(settings({ allowInsecureHttp: false }))).toThrow(/https/);
  });
});

test.each([
  [undefined, "/"],
  ["/dashboards/x?y=1#z", "/dashboards/x?y=1#z"],
  ["//evil.example", "/"],
  ["/\\evil.example", "/"],
  ["https://evil.example", "/"],
  ["javascript:alert(1)", "/"],
  ["/a\nb", "/"],
  ["/\u007f", "/"],
  ["/a\u0085b", "/"],
  ["/a\u0000", "/"],
  ["/caf\u00e9", "/caf%C3%A9"],
  ["/\u65e5\u672c?q=\u05d0", "/%E6%97%A5%E6%9C%AC?q=%D7%90"],
  ["/a b", "/a%20b"],
  ["/\u200f\u202e", "/%E2%80%8F%E2%80%AE"],
  ["/x\ud83d\ude00", "/x%F0%9F%98%80"],
  ["/x\ud800", "/"],
  ["/%7F", "/%7F"],
])("safeReturnTo(%j) = %s", (input, output) => {
  expect(safeReturnTo(input)).toBe(output);
});

/** Any UTF-16 code unit, lone surrogates and controls included. */
const utf16Unit = fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u));

test("safeReturnTo always gives a same-site path that Node and fetch accept as a Location header", () => {
  // Node's http server refuses to write a header value with DEL or characters above U+00FF; before this
  // rule a returnTo of /%7F made the callback answer a raw 500 from the HTTP layer.
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ unit: utf16Unit }),
        fc.string({ unit: utf16Unit }).map((s) => `/${s}`),
      ),
      (input) => {
        const out = safeReturnTo(input);
        expect(out.startsWith("/")).toBe(true);
        expect(out.startsWith("//") || out.startsWith("/\\")).toBe(false);
        expect(() => validateHeaderValue("location", out)).not.toThrow();
        expect(new Headers({ location: out }).get("location")).toBe(out);
        expect(/^[\u0021-\u007e]+$/.test(out)).toBe(true);
      },
    ),
    { seed: 20261124, numRuns: 1000 },
  );
});
