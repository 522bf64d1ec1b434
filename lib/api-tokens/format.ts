import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * The text of an API token: `pbt_` + 12 hex digits (the lookup prefix, public: it is also the token's id,
 * `tok_<prefix>`) + `_` + 43 base64url characters (256 random bits, the secret). 60 characters in all.
 */
const TOKEN = /^pbt_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
export const TOKEN_LENGTH = 60;

/** A freshly minted token: its text (shown once), its lookup prefix, id and the hash that is stored. */
export interface MintedToken {
  token: string;
  prefix: string;
  id: string;
  hash: string;
}

/** Mints a token from `random` (256 + 48 bits of it). */
export function mintToken(random: (bytes: number) => Buffer = randomBytes): MintedToken {
  const prefix = random(6).toString("hex");
  const token = `pbt_${prefix}_${random(32).toString("base64url")}`;
  return { token, prefix, id: tokenIdOf(prefix), hash: hashToken(token) };
}

/** The id of the token with lookup prefix `prefix`. */
export function tokenIdOf(prefix: string): string {
  return `tok_${prefix}`;
}

/**
 * SHA-256 of the whole token, hex. A fast hash is enough: the secret is 256 random bits, so there is
 * nothing to guess that a slow hash would protect.
 */
export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Constant-time comparison of two hex hashes of the same length. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/**
 * The lookup prefix of a presented token, or why it cannot be one. The text is never echoed back: the
 * reason names only what is wrong with its shape.
 */
export function parseToken(raw: string): { ok: true; prefix: string } | { ok: false; reason: string } {
  if (raw.length === 0) return { ok: false, reason: "the bearer token is empty" };
  if (raw.length > TOKEN_LENGTH) return { ok: false, reason: `an API token is ${TOKEN_LENGTH} characters; this one has ${raw.length}` };
  if (/[\u0000-\u001f\u007f]/.test(raw)) return { ok: false, reason: "the bearer token contains a control character" };
  const m = TOKEN.exec(raw);
  if (!m) return { ok: false, reason: "an API token looks like pbt_<12 hex digits>_<43 characters>" };
  return { ok: true, prefix: m[1]! };
}
