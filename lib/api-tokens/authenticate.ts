import type pg from "pg";
import type { RevocableSession } from "../auth/revocations.ts";
import type { SessionUser } from "../auth/types.ts";
import { AppError } from "../http/errors.ts";
import { parseToken, sameHash, hashToken } from "./format.ts";
import { findApiTokenByPrefix, takeTokenUse } from "./store.ts";

type Queryable = pg.Pool | pg.PoolClient;

/** The `sub` every API token acts as: `token:<id>` (what audit entries and revocations name). */
export function tokenSub(id: string): string {
  return `token:${id}`;
}

/** Epoch ms that stands for "never" where a token without expiry needs a number (a revocation's lifetime). */
export const NEVER_EXPIRES = Date.UTC(9999, 0, 1);

/** A verified token use, shaped like a session so streams and revocations treat it like one. */
export interface TokenSession extends RevocableSession {
  user: SessionUser & { token: NonNullable<SessionUser["token"]> };
  /** The token's expiry (epoch ms), or null when it has none. */
  tokenExpiresAt: number | null;
}

/** Verifies `Authorization: Bearer` API tokens (lib/api-tokens). */
export interface TokenAuthenticator {
  /**
   * The identity of `raw` (the text after `Bearer `), or a 401 `unauthenticated` saying what is wrong
   * (malformed, unknown, expired, revoked), or a 429 `rate_limited` when the token is over
   * API_TOKEN_RATE_PER_MINUTE. Reads the config store on `db` (the pool by default) on every call, so a
   * revocation applies at once on every instance; the in-memory `isRevoked` is asked too.
   */
  authenticate(raw: string, db?: Queryable): Promise<TokenSession>;
}

const unauthenticated = (why: string) =>
  new AppError("unauthenticated", `The API token was refused: ${why}.`, {}, { "www-authenticate": 'Bearer realm="pulseboard"' });

/** Builds the authenticator on the config store `pool`. */
export function createTokenAuthenticator(deps: {
  pool: Queryable;
  /** API_TOKEN_RATE_PER_MINUTE, read on every call. */
  ratePerMinute: () => number;
  /** The process's in-memory revocation check (a notification may arrive before the row is visible here). */
  isRevoked?: (session: RevocableSession) => boolean;
  now?: () => number;
}): TokenAuthenticator {
  const now = deps.now ?? Date.now;
  return {
    async authenticate(raw, db = deps.pool) {
      const parsed = parseToken(raw);
      if (!parsed.ok) throw unauthenticated(parsed.reason);
      const stored = await findApiTokenByPrefix(db, parsed.prefix);
      // An unknown prefix costs a hash too, so the answer's timing does not tell which prefixes exist.
      const presented = hashToken(raw);
      if (!stored || !sameHash(presented, stored.secretHash))
        throw unauthenticated("no such token (it may have been deleted with its workspace)");
      const at = now();
      const session: TokenSession = {
        user: {
          sub: tokenSub(stored.id),
          name: stored.name,
          groups: [],
          token: { id: stored.id, workspaceId: stored.workspaceId, role: stored.role },
        },
        sessionId: stored.id,
        issuedAt: stored.createdAt.getTime(),
        expiresAt: stored.expiresAt?.getTime() ?? NEVER_EXPIRES,
        tokenExpiresAt: stored.expiresAt?.getTime() ?? null,
      };
      if (stored.revokedAt || deps.isRevoked?.(session)) throw unauthenticated("it was revoked");
      if (stored.expiresAt && stored.expiresAt.getTime() <= at) {
        throw unauthenticated(`it expired at ${stored.expiresAt.toISOString()}`);
      }
      const rate = deps.ratePerMinute();
      const use = await takeTokenUse(db, stored.id, rate, new Date(at));
      if (!use.took) {
        const perToken = 60 / rate;
        const retryAfter = Math.max(1, Math.ceil((1 - use.available) * perToken));
        throw new AppError(
          "rate_limited",
          `Too many requests with this API token: the limit is ${rate} per minute (API_TOKEN_RATE_PER_MINUTE).`,
          { retryAfterSeconds: retryAfter },
          { "Retry-After": String(retryAfter) },
        );
      }
      return session;
    },
  };
}
