import { randomBytes } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type pg from "pg";
import type { Config } from "../config/parse.ts";
import { createTransactionSealer, type TransactionSealer } from "../oidc/transaction.ts";
import { rejectCrossSite, requireRole, requireSession, type WorkspaceResolver } from "./middleware.ts";
import { createSessionTokens, type SessionTokens } from "./session.ts";
import type { AuthVariables, Role } from "./types.ts";

/** The app's auth toolkit, built once in createApp and handed to every route module. */
export interface Auth {
  sessions: SessionTokens;
  cookieName: string;
  /** Seals the OIDC login transaction cookie (key derived from the same secret). */
  loginTransactions: TransactionSealer;
  /** 401 unless a valid session cookie is present; sets c.var.user. */
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
export function createAuth(deps: { config: AuthConfig; pool: pg.Pool; now?: () => number; sessions?: SessionTokens }): Auth {
  const { config } = deps;
  if (!config.SESSION_SECRET && config.isProduction) throw new Error("SESSION_SECRET is required in production");
  const secret = config.SESSION_SECRET ?? randomBytes(32).toString("base64url");
  const sessions = deps.sessions ?? createSessionTokens({ secret, ttlSeconds: config.SESSION_TTL_SECONDS, now: deps.now });
  const cookieName = config.SESSION_COOKIE_NAME;
  return {
    sessions,
    cookieName,
    loginTransactions: createTransactionSealer({ secret, now: deps.now }),
    requireSession: requireSession({ sessions, cookieName }),
    requireRole: (role, resolve) => requireRole(role, resolve, { pool: deps.pool }),
    rejectCrossSite: rejectCrossSite({ publicBaseUrl: config.PUBLIC_BASE_URL }),
    secureCookies: config.isProduction,
  };
}
