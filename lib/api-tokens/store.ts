import type pg from "pg";
import type { Role } from "../auth/types.ts";
import { AppError } from "../http/errors.ts";
import { type MintedToken, mintToken } from "./format.ts";

type Queryable = pg.Pool | pg.PoolClient;

/** An API token as listed: everything but its secret (which is never stored) and its hash. */
export interface ApiToken {
  id: string;
  workspaceId: string;
  name: string;
  role: Role;
  /** The token's text starts with `pbt_<prefix>_`, so a leaked token can be told apart from the list. */
  prefix: string;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  revokedBy: string | null;
}

/** A stored token with its hash, for verification only. */
export interface StoredToken extends ApiToken {
  secretHash: string;
}

interface Row {
  id: string;
  workspace_id: string;
  name: string;
  role: Role;
  prefix: string;
  secret_hash: string;
  created_by: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
  revoked_by: string | null;
}

const COLUMNS =
  "id, workspace_id, name, role, prefix, secret_hash, created_by, created_at, expires_at, last_used_at, revoked_at, revoked_by";

function fromRow(r: Row): StoredToken {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    role: r.role,
    prefix: r.prefix,
    secretHash: r.secret_hash,
    createdBy: r.created_by,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
    revokedBy: r.revoked_by,
  };
}

/** The listed view of a token: the stored one without its hash. */
export function publicToken(t: StoredToken): ApiToken {
  const { secretHash: _hash, ...rest } = t;
  return rest;
}

/** Tokens a workspace may hold, revoked ones included (they are kept for the audit trail). */
export const MAX_TOKENS_PER_WORKSPACE = 500;

/**
 * Creates a token in `workspaceId` and returns it with its text, which exists only in this return value.
 * `expiresAt` null: the token does not expire.
 */
export async function createApiToken(
  db: Queryable,
  input: { workspaceId: string; name: string; role: Role; createdBy: string; expiresAt: Date | null; createdAt: Date },
  mint: () => MintedToken = mintToken,
): Promise<{ token: string; stored: ApiToken }> {
  const minted = mint();
  const { rows } = await db.query<Row>(
    `INSERT INTO api_tokens (id, workspace_id, name, role, prefix, secret_hash, created_by, expires_at, created_at)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $10
      WHERE (SELECT count(*) FROM api_tokens WHERE workspace_id = $2) < $9
     RETURNING ${COLUMNS}`,
    [
      minted.id,
      input.workspaceId,
      input.name,
      input.role,
      minted.prefix,
      minted.hash,
      input.createdBy,
      input.expiresAt,
      MAX_TOKENS_PER_WORKSPACE,
      input.createdAt,
    ],
  );
  if (!rows[0]) {
    throw new AppError(
      "conflict",
      `The workspace already holds ${MAX_TOKENS_PER_WORKSPACE} API tokens (revoked ones included); ask an operator to delete old ones.`,
    );
  }
  return { token: minted.token, stored: publicToken(fromRow(rows[0])) };
}

/** The workspace's tokens, newest first, without their hashes. */
export async function listApiTokens(db: Queryable, workspaceId: string): Promise<ApiToken[]> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM api_tokens WHERE workspace_id = $1 ORDER BY created_at DESC, id`, [
    workspaceId,
  ]);
  return rows.map((r) => publicToken(fromRow(r)));
}

/** The token with lookup prefix `prefix`, with its hash; null when there is none. */
export async function findApiTokenByPrefix(db: Queryable, prefix: string): Promise<StoredToken | null> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM api_tokens WHERE prefix = $1`, [prefix]);
  return rows[0] ? fromRow(rows[0]) : null;
}

/** One token of a workspace; null when it is not there. */
export async function getApiToken(db: Queryable, workspaceId: string, id: string): Promise<ApiToken | null> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM api_tokens WHERE workspace_id = $1 AND id = $2`, [workspaceId, id]);
  return rows[0] ? publicToken(fromRow(rows[0])) : null;
}

/**
 * Marks a token revoked. Returns the token as it now is and whether this call revoked it (false when it
 * already was); null when the workspace has no such token.
 */
export async function revokeApiToken(
  db: Queryable,
  workspaceId: string,
  id: string,
  by: string,
  at: Date,
): Promise<{ token: ApiToken; revokedNow: boolean } | null> {
  const { rows } = await db.query<Row>(
    `UPDATE api_tokens SET revoked_at = $4, revoked_by = $3
      WHERE workspace_id = $1 AND id = $2 AND revoked_at IS NULL
      RETURNING ${COLUMNS}`,
    [workspaceId, id, by, at.toISOString()],
  );
  if (rows[0]) return { token: publicToken(fromRow(rows[0])), revokedNow: true };
  const had = await getApiToken(db, workspaceId, id);
  return had ? { token: had, revokedNow: false } : null;
}

/**
 * One use of a token: refills and debits its request bucket (capacity and refill `ratePerMinute`; 0 does
 * not limit) and sets last_used_at, in one statement, so every instance agrees. Returns null when the
 * bucket was empty, with the tokens it held (for Retry-After); else true.
 */
export async function takeTokenUse(
  db: Queryable,
  id: string,
  ratePerMinute: number,
  at: Date,
): Promise<{ took: true } | { took: false; available: number }> {
  const refilled = `LEAST($2::float8, COALESCE(t.bucket_tokens, $2::float8)
                       + GREATEST(0, EXTRACT(EPOCH FROM ($3::timestamptz - COALESCE(t.bucket_at, $3::timestamptz))))::float8 * $2::float8 / 60.0)`;
  const { rows } = await db.query<{ took: boolean; available: number }>(
    `WITH take AS (
       UPDATE api_tokens t SET
         bucket_tokens = CASE WHEN $2::float8 > 0 THEN ${refilled} - 1 ELSE NULL END,
         bucket_at = GREATEST(COALESCE(t.bucket_at, $3::timestamptz), $3::timestamptz),
         last_used_at = GREATEST(COALESCE(t.last_used_at, $3::timestamptz), $3::timestamptz)
        WHERE t.id = $1 AND ($2::float8 = 0 OR ${refilled} >= 1)
        RETURNING 1
     )
     SELECT EXISTS (SELECT 1 FROM take) AS took,
            (SELECT ${refilled} FROM api_tokens t WHERE t.id = $1) AS available`,
    [id, ratePerMinute, at.toISOString()],
  );
  const r = rows[0]!;
  return r.took ? { took: true } : { took: false, available: r.available ?? 0 };
}
