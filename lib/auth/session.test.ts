import { createHmac, generateKeyPairSync, sign as rsaSign } from "node:crypto";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { MAX_CLOCK_SKEW_SECONDS, MAX_SESSION_TOKEN_LENGTH, createSessionTokens } from "./session.ts";

const SECRET = "s".repeat(40);
const T0 = Date.UTC(2026, 0, 1);
const clock = { t: T0 };
const TTL = 3600;
const sessions = createSessionTokens({ secret: SECRET, ttlSeconds: TTL, now: () => clock.t });
const user = { sub: "u-1", name: "Ada", email: "ada@example.com", groups: ["demo-viewers"] };

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const nowS = Math.floor(T0 / 1000);
const SID = "c2Vzc2lvbi1pZC0xMjM0NTY";
const goodClaims = { sub: "u-1", sid: SID, groups: ["demo-admins"], iat: nowS, exp: nowS + 600 };

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
  ["no exp claim", () => hmacToken("HS256", "sha256", SECRET, { sub: "u-1", sid: SID, groups: [], iat: nowS })],
  ["no sub claim", () => hmacToken("HS256", "sha256", SECRET, { sid: SID, groups: [], iat: nowS, exp: nowS + 60 })],
  ["no iat claim", () => hmacToken("HS256", "sha256", SECRET, { sub: "u-1", sid: SID, groups: [], exp: nowS + 60 })],
  [
    "no sid claim (minted before sessions had ids)",
    () => hmacToken("HS256", "sha256", SECRET, { sub: "u-1", groups: [], iat: nowS, exp: nowS + 60 }),
  ],
  ["sid not a string", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, sid: 1234567890123456 })],
  ["sid too short to be random", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, sid: "abc" })],
  ["sid with characters a session id never has", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, sid: `${SID}/../x` })],
  ["iat not a number", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, iat: String(nowS) })],
  ["groups not an array", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, groups: "demo-admins" })],
  ["groups with a non-string", () => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, groups: [{ admin: true }] })],
  ["signature stripped", () => hmacToken("HS256", "sha256", SECRET).replace(/\.[^.]+$/, ".")],
  ["truncated token", () => hmacToken("HS256", "sha256", SECRET).slice(0, -5)],
  ["truncated to two parts", () => hmacToken("HS256", "sha256", SECRET).split(".").slice(0, 2).join(".")],
  [
    "payload swapped after signing",
    () => {
      const [h, , s] = hmacToken("HS256", "sha256", SECRET).split(".");
      return `${h}.${b64({ ...goodClaims, groups: ["everyone-admins"] })}.${s}`;
    },
  ],
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

  test("verifySession gives the user, the session id and when the session was issued and ends (epoch ms); null where verify is null", async () => {
    clock.t = T0 + 500;
    const token = await sessions.mint(user, 60);
    const session = { user, sessionId: expect.stringMatching(/^[\w-]{22}$/), issuedAt: T0, expiresAt: T0 + 60_000 };
    expect(await sessions.verifySession(token)).toEqual(session);
    clock.t = T0 + 59_999;
    expect(await sessions.verifySession(token)).toEqual(session);
    clock.t = T0 + 60_000;
    expect(await sessions.verifySession(token)).toBeNull();
    clock.t = T0;
    expect(await sessions.verifySession(hmacToken("HS512", "sha512", SECRET))).toBeNull();
  });

  test("every minted session gets its own random id, carried as the sid claim", async () => {
    clock.t = T0;
    const ids = await Promise.all(
      Array.from({ length: 50 }, async () => (await sessions.verifySession(await sessions.mint(user)))!.sessionId),
    );
    expect(new Set(ids).size).toBe(50);
    const token = await sessions.mint(user);
    expect(JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString()).sid).toBe((await sessions.verifySession(token))!.sessionId);
  });

  test("mint refuses a lifetime the verifier would refuse (longer than the configured one)", async () => {
    await expect(sessions.mint(user, TTL + 1)).rejects.toThrow(RangeError);
    await expect(sessions.mint(user, 0)).rejects.toThrow(RangeError);
    expect(await sessions.verify(await sessions.mint(user, TTL))).toEqual(user);
  });

  test.each(hostile)("refuses: %s", async (_name, build) => {
    clock.t = T0;
    expect(await sessions.verify(build())).toBeNull();
    expect(await sessions.verifySession(build())).toBeNull();
  });

  test("random strings never verify", async () => {
    clock.t = T0;
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

// A token that lives longer than SESSION_TTL_SECONDS, or says it was issued in the future, was not
// minted by us with this configuration (a leaked secret, a bug, a clock far off): it is refused, and a
// revocation row, which is swept once the configured lifetime has passed, can never be outlived.
describe("lifetime rules", () => {
  const signed = (iat: number, exp: number) => hmacToken("HS256", "sha256", SECRET, { ...goodClaims, iat, exp });
  const rows: [string, number, number, boolean][] = [
    ["lifetime exactly SESSION_TTL_SECONDS", nowS, nowS + TTL, true],
    ["lifetime one second over SESSION_TTL_SECONDS", nowS, nowS + TTL + 1, false],
    ["issued an hour ago with a two-hour lifetime (not yet expired, but too long)", nowS - 3600, nowS + 3600 + 1, false],
    ["lifetime of a year", nowS, nowS + 365 * 86400, false],
    ["issued earlier, lifetime within the limit", nowS - 1000, nowS - 1000 + TTL, true],
    [
      `iat ${MAX_CLOCK_SKEW_SECONDS} s in the future (allowed clock skew)`,
      nowS + MAX_CLOCK_SKEW_SECONDS,
      nowS + MAX_CLOCK_SKEW_SECONDS + 600,
      true,
    ],
    [`iat ${MAX_CLOCK_SKEW_SECONDS + 1} s in the future`, nowS + MAX_CLOCK_SKEW_SECONDS + 1, nowS + MAX_CLOCK_SKEW_SECONDS + 601, false],
    ["iat a day in the future", nowS + 86400, nowS + 86400 + 600, false],
    ["exp before iat", nowS, nowS - 1, false],
  ];
  test.each(rows)("%s → accepted: %s", async (_name, iat, exp, ok) => {
    clock.t = T0;
    const session = await sessions.verifySession(signed(iat, exp));
    expect(session !== null).toBe(ok);
  });

  test("property: a validly signed token verifies exactly when it is unexpired, issued at most the allowed skew ahead, and lives at most the configured lifetime", async () => {
    clock.t = T0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: -2 * TTL, max: 2 * TTL }),
        fc.integer({ min: -TTL, max: 3 * TTL }),
        async (iatOffset, lifetime) => {
          const iat = nowS + iatOffset;
          const exp = iat + lifetime;
          const expected = exp > nowS && iat <= nowS + MAX_CLOCK_SKEW_SECONDS && lifetime <= TTL;
          expect((await sessions.verifySession(signed(iat, exp))) !== null).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("property: whatever the clock and the lifetime asked for, a minted token verifies until its exp and never after", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 10 * 365 * 86400 }),
        fc.integer({ min: 1, max: TTL }),
        fc.integer({ min: 0, max: 2 * TTL }),
        async (start, ttl, later) => {
          clock.t = T0 + start * 1000;
          const token = await sessions.mint(user, ttl);
          const session = (await sessions.verifySession(token))!;
          expect(session.expiresAt - session.issuedAt).toBe(ttl * 1000);
          clock.t = session.issuedAt + later * 1000;
          expect((await sessions.verifySession(token)) !== null).toBe(later < ttl);
        },
      ),
      { numRuns: 200 },
    );
    clock.t = T0;
  });
});

describe("claims with NUL or invalid Unicode", () => {
  test.each([
    ["a NUL in sub", { sub: "a\u0000b", groups: ["g"] }],
    ["a NUL in a group", { sub: "a", groups: ["g\u0000"] }],
    ["a lone surrogate in sub", { sub: "a\ud800", groups: ["g"] }],
    ["a lone surrogate in a group", { sub: "a", groups: ["\udc00g"] }],
  ])("%s: the session is refused (never reaches a query)", async (_name, user) => {
    const tokens = createSessionTokens({ secret: "claims-secret-0123456789abcdef0123", ttlSeconds: 3600 });
    expect(await tokens.verifySession(await tokens.mint(user))).toBeNull();
  });
});
