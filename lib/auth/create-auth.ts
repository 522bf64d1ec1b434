import { randomBytes } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type pg from "pg";
import type { Config } from "../config/parse.ts";
import { createTransactionSealer, type TransactionSealer } from "../oidc/transaction.ts";
import { rejectCrossSite, requireRole, requireSession, type WorkspaceGroupsLookup, type WorkspaceResolver } from "./middleware.ts";
import { createRevocationSet, type Revocation, type RevocationSet, recordRevocation, withRevocations } from "./revocations.ts";
import type { BearerAuthenticator } from "./bearer.ts";
import { createSessionTokens, type SessionTokens, sessionKeysOf } from "./session.ts";
import type { AuthVariables, Role } from "./types.ts";

/** The app's auth toolkit, built once in createApp and handed to every route module. */
export interface Auth {
  /** Session tokens whose verification also refuses revoked sessions. */
  sessions: SessionTokens;
  /** The in-memory mirror of the config store's revocations that every session check reads. */
  revocations: RevocationSet;
  /** Records a revocation in the config store (NOTIFY carries it to every process) and applies it here at once. */
  revoke(revocation: Revocation): Promise<void>;
  cookieName: string;
  /** Seals the OIDC login transaction cookie (key derived from the same secret). */
  loginTransactions: TransactionSealer;
  /** 401 unless a valid session cookie (or API token, when configured) is present; sets c.var.user. */
  requireSession: MiddlewareHandler<{ Variables: AuthVariables }>;
  /** At least `role` in the resolved workspace (after requireSession); sets c.var.workspaceId and c.var.role. */
  requireRole(role: Role, resolveWorkspaceId: WorkspaceResolver): MiddlewareHandler<{ Variables: AuthVariables }>;
  /** 403 for mutating requests a browser sent from another site. */
  rejectCrossSite: MiddlewareHandler;
  /** Whether cookies get the Secure attribute (in production). */
  secureCookies: boolean;
}

type AuthConfig = Pick<Config, "SESSION_SECRET" | "SESSION_TTL_SECONDS" | "SESSION_COOKIE_NAME" | "PUBLIC_BASE_URL" | "isProduction">;

/**
 * Builds the auth toolkit. Outside production an unset SESSION_SECRET falls back to a random
 * per-process secret (sessions then end with the process); parseConfig refuses that in production.
 */
export function createAuth(deps: {
  config: AuthConfig;
  pool: pg.Pool;
  /** Reads a workspace's role groups for requireRole (lib/workspaces/store.ts getWorkspace on the pool). */
  findWorkspace: WorkspaceGroupsLookup;
  now?: () => number;
  sessions?: SessionTokens;
  /**
   * The process's revocation set, kept fresh by its config-store listener (the entry points build it
   * with listenForRevocations). Default: a set that sees only this app's own revocations (tests).
   */
  revocations?: RevocationSet;
  /**
   * API tokens (`Authorization: Bearer`), given the revocation set's check (lib/api-tokens
   * createTokenAuthenticator); without it only session cookies are accepted.
   */
  tokens?: (isRevoked: RevocationSet["isRevoked"]) => BearerAuthenticator;
}): Auth {
  const { config } = deps;
  if (!config.SESSION_SECRET && config.isProduction) throw new Error("SESSION_SECRET is required in production");
  const secret = config.SESSION_SECRET ?? randomBytes(32).toString("base64url");
  const now = deps.now ?? Date.now;
  const revocations = deps.revocations ?? createRevocationSet({ now, loaded: true });
  const sessions = withRevocations(
    deps.sessions ?? createSessionTokens({ keys: sessionKeysOf(config, secret), ttlSeconds: config.SESSION_TTL_SECONDS, now: deps.now }),
    revocations,
  );
  const cookieName = config.SESSION_COOKIE_NAME;
  const tokens = deps.tokens?.((s) => revocations.isRevoked(s));
  return {
    sessions,
    revocations,
    async revoke(revocation) {
      await recordRevocation(deps.pool, revocation, now());
      revocations.add(revocation);
    },
    cookieName,
    loginTransactions: createTransactionSealer({ secret, now: deps.now }),
    requireSession: requireSession({ sessions, cookieName, tokens }),
    requireRole: (role, resolve) => requireRole(role, resolve, { findWorkspace: deps.findWorkspace }),
    rejectCrossSite: rejectCrossSite({ publicBaseUrl: config.PUBLIC_BASE_URL, bearerTokens: tokens !== undefined }),
    secureCookies: config.isProduction,
  };
}
