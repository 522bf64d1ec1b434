import { randomBytes } from "node:crypto";
import { SignJWT, jwtVerify } from "jose";
import { claimTextProblem } from "../oidc/claims.ts";
import type { SessionUser } from "./types.ts";

/** Tokens longer than this are refused before any parsing (a cookie never legitimately gets close). */
export const MAX_SESSION_TOKEN_LENGTH = 4096;
/** How far in the future a token's `iat` may lie (clock skew between the instances that mint and verify). */
export const MAX_CLOCK_SKEW_SECONDS = 60;
const MAX_GROUPS = 256;
const MAX_CLAIM_LENGTH = 512;
/** A session id: 128 random bits, base64url (what mint writes); anything else in `sid` is refused. */
const SESSION_ID = /^[A-Za-z0-9_-]{22,64}$/;

/** A verified session: who, which session (`sid`), and when it was issued and ends (epoch milliseconds). */
export interface Session {
  user: SessionUser;
  /** The token's `sid` claim: random and opaque, the key a logout revokes. */
  sessionId: string;
  /** `iat`, epoch milliseconds. */
  issuedAt: number;
  /** `exp`, epoch milliseconds. */
  expiresAt: number;
}

/** Mints and verifies first-party session tokens: HS256 JWTs, verified locally with no identity-provider call. */
export interface SessionTokens {
  /** A new session for `user`, with a fresh random session id; `ttlSeconds` may only shorten the configured lifetime. */
  mint(user: SessionUser, ttlSeconds?: number): Promise<string>;
  /**
   * The user for a valid token; null for anything else (other alg, bad signature, expired, not yet
   * valid, issued in the future, living longer than `ttlSeconds`, no session id, garbage, oversized).
   */
  verify(token: string): Promise<SessionUser | null>;
  /** As verify, with the session id and lifetime, for logout and connections that outlive the request. */
  verifySession(token: string): Promise<Session | null>;
  /** The configured lifetime (SESSION_TTL_SECONDS): the longest a token may live. */
  readonly ttlSeconds: number;
}

/** The keys of session tokens: new tokens are signed with `current`; `previous` still verify during a rotation. */
export interface SessionKeys {
  current: string;
  previous?: readonly (string | undefined)[];
}

/** The session keys in a config (SESSION_SECRET and, during a rotation, SESSION_SECRET_PREVIOUS), read on every call. */
export function sessionKeysOf(config: { SESSION_SECRET?: string; SESSION_SECRET_PREVIOUS?: string }, fallback?: string) {
  return (): SessionKeys => ({
    current: config.SESSION_SECRET ?? fallback ?? "",
    previous: [config.SESSION_SECRET_PREVIOUS],
  });
}

/**
 * Session tokens signed with `secret` (HS256 only); `now` is the clock in milliseconds, `randomId` the session
 * id source. With `keys`, the keys are read on every mint and verify, so a rotated secret applies at once:
 * signing always uses the current key, verification accepts the current and the previous ones.
 */
export function createSessionTokens(opts: {
  secret?: string;
  keys?: () => SessionKeys;
  ttlSeconds: number;
  now?: () => number;
  randomId?: () => string;
}): SessionTokens {
  const keysOf: () => SessionKeys = opts.keys ?? (() => ({ current: opts.secret ?? "" }));
  if (!keysOf().current) throw new Error("session secret is empty");
  // Each secret is imported as an HMAC key once: handed raw bytes, jose imports a key on every sign and verify,
  // which was about a third of a stream open's verification time and 12 KB of its garbage.
  const imported = new Map<string, Promise<CryptoKey>>();
  const encode = (secret: string) => {
    let key = imported.get(secret);
    if (!key) {
      // Two entries at most in practice (current and previous); a rotation replaces them.
      if (imported.size > 8) imported.clear();
      key = crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
      imported.set(secret, key);
    }
    return key;
  };
  const now = opts.now ?? Date.now;
  const randomId = opts.randomId ?? (() => randomBytes(16).toString("base64url"));

  async function mint(user: SessionUser, ttlSeconds = opts.ttlSeconds): Promise<string> {
    // verifySession refuses a longer token, so minting one would only hand out a dead cookie.
    if (!(ttlSeconds > 0 && ttlSeconds <= opts.ttlSeconds)) throw new RangeError(`session lifetime must be 1..${opts.ttlSeconds} s`);
    const iat = Math.floor(now() / 1000);
    const claims: Record<string, unknown> = { sid: randomId(), groups: [...user.groups] };
    if (user.name !== undefined) claims.name = user.name;
    if (user.email !== undefined) claims.email = user.email;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(user.sub)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttlSeconds)
      .sign(await encode(keysOf().current));
  }

  async function verifySession(token: string): Promise<Session | null> {
    if (typeof token !== "string" || token.length === 0 || token.length > MAX_SESSION_TOKEN_LENGTH) return null;
    let payload: Record<string, unknown> | undefined;
    const { current, previous = [] } = keysOf();
    for (const secret of [current, ...previous]) {
      if (!secret) continue;
      try {
        // The algorithm allow-list is what refuses `none`, HS512 and RS256-with-public-key-as-secret.
        ({ payload } = await jwtVerify(token, await encode(secret), {
          algorithms: ["HS256"],
          currentDate: new Date(now()),
          requiredClaims: ["sub", "exp", "iat", "sid"],
        }));
        break;
      } catch (err) {
        // Only a signature made with another key sends verification on to the previous key.
        if ((err as { code?: string }).code !== "ERR_JWS_SIGNATURE_VERIFICATION_FAILED") return null;
      }
    }
    if (!payload) return null;
    // jwtVerify checked that `exp` is a number in the future and `iat` a number (requiredClaims makes both present).
    const iat = payload.iat as number;
    const exp = payload.exp as number;
    // A stolen secret or a bug could mint a token that outlives SESSION_TTL_SECONDS; revocation rows
    // are swept after that lifetime, so such a token would also outlive its revocation.
    if (iat > now() / 1000 + MAX_CLOCK_SKEW_SECONDS || exp - iat > opts.ttlSeconds) return null;
    const sid = payload.sid;
    if (typeof sid !== "string" || !SESSION_ID.test(sid)) return null;
    const user = userFromClaims(payload);
    return user ? { user, sessionId: sid, issuedAt: iat * 1000, expiresAt: exp * 1000 } : null;
  }

  async function verify(token: string): Promise<SessionUser | null> {
    return (await verifySession(token))?.user ?? null;
  }

  return { mint, verify, verifySession, ttlSeconds: opts.ttlSeconds };
}

/** A claim string we accept: short, and without NUL or invalid Unicode (PostgreSQL would refuse it in every query). */
function shortString(v: unknown): v is string {
  return typeof v === "string" && v.length > 0 && v.length <= MAX_CLAIM_LENGTH && claimTextProblem(v) === null;
}

/** Validates the claim shapes; a token we signed always passes, anything else is treated as invalid. */
function userFromClaims(p: Record<string, unknown>): SessionUser | null {
  if (!shortString(p.sub)) return null;
  const groups = p.groups;
  if (!Array.isArray(groups) || groups.length > MAX_GROUPS || !groups.every(shortString)) return null;
  const user: SessionUser = { sub: p.sub, groups: [...groups] };
  if (p.name !== undefined) {
    if (typeof p.name !== "string") return null;
    user.name = p.name;
  }
  if (p.email !== undefined) {
    if (typeof p.email !== "string") return null;
    user.email = p.email;
  }
  return user;
}
