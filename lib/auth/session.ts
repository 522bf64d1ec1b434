import { SignJWT, jwtVerify } from "jose";
import type { SessionUser } from "./types.ts";

/** Tokens longer than this are refused before any parsing (a cookie never legitimately gets close). */
export const MAX_SESSION_TOKEN_LENGTH = 4096;
const MAX_GROUPS = 256;
const MAX_CLAIM_LENGTH = 512;

/** Mints and verifies first-party session tokens: HS256 JWTs, verified locally with no identity-provider call. */
export interface SessionTokens {
  mint(user: SessionUser, ttlSeconds?: number): Promise<string>;
  /** The user for a valid token; null for anything else (other alg, bad signature, expired, not yet valid, garbage, oversized). */
  verify(token: string): Promise<SessionUser | null>;
  /** As verify, plus when the session ends (`exp`, epoch milliseconds), for connections that outlive the request. */
  verifyWithExpiry(token: string): Promise<{ user: SessionUser; expiresAt: number } | null>;
  readonly ttlSeconds: number;
}

/** Session tokens signed with `secret` (HS256 only); `now` is the clock in milliseconds. */
export function createSessionTokens(opts: { secret: string; ttlSeconds: number; now?: () => number }): SessionTokens {
  if (!opts.secret) throw new Error("session secret is empty");
  const key = new TextEncoder().encode(opts.secret);
  const now = opts.now ?? Date.now;

  async function mint(user: SessionUser, ttlSeconds = opts.ttlSeconds): Promise<string> {
    const iat = Math.floor(now() / 1000);
    const claims: Record<string, unknown> = { groups: [...user.groups] };
    if (user.name !== undefined) claims.name = user.name;
    if (user.email !== undefined) claims.email = user.email;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(user.sub)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttlSeconds)
      .sign(key);
  }

  async function verifyWithExpiry(token: string): Promise<{ user: SessionUser; expiresAt: number } | null> {
    if (typeof token !== "string" || token.length === 0 || token.length > MAX_SESSION_TOKEN_LENGTH) return null;
    try {
      // The algorithm allow-list is what refuses `none`, HS512 and RS256-with-public-key-as-secret.
      const { payload } = await jwtVerify(token, key, {
        algorithms: ["HS256"],
        currentDate: new Date(now()),
        requiredClaims: ["sub", "exp", "iat"],
      });
      const user = userFromClaims(payload);
      // jwtVerify checked that `exp` is a number in the future (requiredClaims makes it present).
      return user ? { user, expiresAt: (payload.exp as number) * 1000 } : null;
    } catch {
      return null;
    }
  }

  async function verify(token: string): Promise<SessionUser | null> {
    return (await verifyWithExpiry(token))?.user ?? null;
  }

  return { mint, verify, verifyWithExpiry, ttlSeconds: opts.ttlSeconds };
}

function shortString(v: unknown): v is string {
  return typeof v === "string" && v.length > 0 && v.length <= MAX_CLAIM_LENGTH;
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
