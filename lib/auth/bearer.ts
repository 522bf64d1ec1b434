import type { SessionUser } from "./types.ts";

/**
 * The bearer token of a request's `Authorization` header: the text after `Bearer ` (the scheme matched
 * without regard to case), "" for a `Bearer` with nothing after it, or null when the header is absent
 * or names another scheme.
 */
export function bearerOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const m = /^bearer(?:\s+(.*))?$/is.exec(header.trim());
  return m ? (m[1] ?? "").trim() : null;
}

/**
 * Verifies a bearer token (lib/api-tokens createTokenAuthenticator): the identity it acts as, or a coded
 * error (401 with the reason, 429 over its rate). Declared here so auth does not depend on the store.
 */
export interface BearerAuthenticator {
  authenticate(raw: string): Promise<{ user: SessionUser }>;
}
