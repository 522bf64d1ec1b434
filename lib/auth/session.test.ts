import { createHmac, generateKeyPairSync, sign as rsaSign } from "node:crypto";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { MAX_SESSION_TOKEN_LENGTH, createSessionTokens } from "./session.ts";

const SECRET = "s".repeat(40);
const T0 = Date.UTC(2026, 0, 1);
const clock = { t: T0 };
const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: 3600, now: () => clock.t });
const user = { sub: "u-1", name: "Ada", email: "ada@example.com", groups: ["demo-viewers"] };

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const nowS = Math.floor(T0 / 1000);
const goodClaims = { sub: "u-1", groups: ["demo-admins"], iat: nowS, exp: nowS + 600 };

/** Builds a compact JWS by hand so the test controls header, claims and signature bytes exactly. */
function hmacToken(alg: string, hash: string, secret: string | Buffer, claims: object = goodClaims): string {
  const input = `${b64({ alg, typ: "JWT" })}.${b64(claims)}`;
  return `${input}.${createHmac(hash, secret).update(input).digest("base64url")}`;
}
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const publicPem = rsa.publicKey.export({ type: "spki", format: "pem" }) as string;

const hostile: [string, () => string][] = [
  ["alg none, empty signature", () => `${b64({ alg: "none", typ: "JWT" })}.${b64(goodClaims)}.`],
  ["alg none, no signature part", () => `${b64({ alg: "none" })}.${b64(goodClaims)}`],
  ["alg NONE spelled otherwise", () => `${b64({ alg: "None" })}.${b64(goodClaims)}.`],
  ["HS512 with the right secret", () => hmacToken("HS512", "sha512", SECRET)],
  ["HS384 with the right secret", () => hmacToken("HS384", "sha384", SECRET)],
  ["RS256 header, HMAC keyed with the RSA public key", () => hmacToken("RS256", "sha256", publicPem)],
  ["HS256 keyed with the RSA public key", () => hmacToken("HS256", "sha256", publicPem)],
  [
    "RS256 properly signed with an RSA key",
    () => {
      const input = `${b64({ alg: "RS256", typ: "JWT" })}.${b64(goodClaims)}`;
      return `${input}.${rsaSign("sha256", Buffer.from(input), rsa.privateKey).toString("base64url")}`;
    },
  ],
  ["HS256 signed with another secret", () => hmacToken("HS256", "sha256", "another-secret-another-secret-xx")],
  ["expired (exp one second ago)", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, exp: nowS - 1 })],
  ["not yet valid (nbf in the future)", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, nbf: nowS + 120 })],
  ["no exp claim", () => hmacToken("HS256", "sha256", SECRET, { sub: "u-1", groups: [], iat: nowS })],
  ["no sub claim", () => hmacToken("HS256", "sha256", SECRET, { groups: [], iat: nowS, exp: nowS + 60 })],
  ["groups not an array", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, groups: "demo-admins" })],
  ["groups with a non-string", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, groups: [{ admin: true }] })],
  ["signature stripped", () => hmacToken("HS256", "sha256", SECRET).replace(/\.[^.]+$/, ".")],
  ["truncated token", () => hmacToken("HS256", "sha256", SECRET).slice(0, -5)],
  ["truncated to two parts", () => hmacToken("HS256", "sha256", SECRET).split(".").slice(0, 2).join(".")],
  ["payload swapped after signing", () => {
    const [h, , s] = hmacToken("HS256", "sha256", SECRET).split(".");
    return `${h}.${b64({ ...goodClaims, groups: ["everyone-admins"] })}.${s}`;
  }],
  [
    "oversized but validly signed",
    () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, pad: "x".repeat(MAX_SESSION_TOKEN_LENGTH) }),
  ],
  ["garbage", () => "not-a-jwt"],
  ["empty string", () => ""],
  ["three dots", () => "..."],
  ["JSON instead of a JWT", () => JSON.stringify(goodClaims)],
  ["header is not JSON", () => `${b64("{{{")}.${b64(goodClaims)}.abc`],
];

describe("session tokens", () => {
  test("a minted token verifies back to the same user", async () => {
    clock.t = T0;
    const token = await sessions.mint(user);
    expect(await sessions.verify(token)).toEqual(user);
  });

  test("the hand-built control token is accepted, so the hostile table below tests the checks, not the builder", async () => {
    clock.t = T0;
    expect(await sessions.verify(hmacToken("HS256", "sha256", SECRET))).toEqual({ sub: "u-1", groups: ["demo-admins"] });
  });

  test("a token expires after its lifetime, by the injected clock", async () => {
    clock.t = T0;
    const token = await sessions.mint(user, 60);
    clock.t = T0 + 59_000;
    expect(await sessions.verify(token)).not.toBeNull();
    clock.t = T0 + 60_000;
    expect(await sessions.verify(token)).toBeNull();
    clock.t = T0;
  });

  test("verifyWithExpiry gives the user and when the session ends (exp, epoch ms); null where verify is null", async () => {
    clock.t = T0 + 500;
    const token = await sessions.mint(user, 60);
    expect(await sessions.verifyWithExpiry(token)).toEqual({ user, expiresAt: Math.floor((T0 + 500) / 1000) * 1000 + 60_000 });
    clock.t = T0 + 59_999;
    expect(await sessions.verifyWithExpiry(token)).toEqual({ user, expiresAt: T0 + 60_000 });
    clock.t = T0 + 60_000;
    expect(await sessions.verifyWithExpiry(token)).toBeNull();
    clock.t = T0;
    expect(await sessions.verifyWithExpiry(hmacToken("HS512", "sha512", SECRET))).toBeNull();
  });

  test.each(hostile)("refuses: %s", async (_name, build) => {
    clock.t = T0;
    expect(await sessions.verify(build())).toBeNull();
    expect(await sessions.verifyWithExpiry(build())).toBeNull();
  });

  test("random strings never verify", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 600 }), async (s) => {
        expect(await sessions.verify(s)).toBeNull();
      }),
      { numRuns: 300 },
    );
  });

  test("random three-part base64url strings never verify", async () => {
    const part = fc.base64String({ maxLength: 200 }).map((s) => s.replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", ""));
    await fc.assert(
      fc.asyncProperty(part, part, part, async (a, b, c) => {
        expect(await sessions.verify(`${a}.${b}.${c}`)).toBeNull();
      }),
      { numRuns: 300 },
    );
  });
});
