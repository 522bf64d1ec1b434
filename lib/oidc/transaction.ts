import { createHmac } from "node:crypto";
import { SignJWT, jwtVerify } from "jose";
import type { LoginTransaction } from "./login.ts";

/** How long a started sign-in may take before its callback is refused. */
export const LOGIN_TRANSACTION_TTL_SECONDS = 600;

/** Seals a login transaction (state, nonce, PKCE verifier) into a signed cookie value and opens it again. */
export interface TransactionSealer {
  seal(tx: LoginTransaction): Promise<string>;
  /** The transaction, or null when the value is missing, tampered with, expired or not ours. */
  open(value: string | undefined): Promise<LoginTransaction | null>;
}

/**
 * HS256 with a key derived from the session secret for this one purpose, so a login cookie can
 * never pass as a session token and the other way round.
 */
export function createTransactionSealer(opts: { secret: string; now?: () => number }): TransactionSealer {
  const key = createHmac("sha256", opts.secret).update("pulseboard/login-transaction/v1").digest();
  const now = opts.now ?? Date.now;
  return {
    async seal(tx) {
      const iat = Math.floor(now() / 1000);
      return new SignJWT({ tx })
        .setProtectedHeader({ alg: "HS256" })
        .setIssuedAt(iat)
        .setExpirationTime(iat + LOGIN_TRANSACTION_TTL_SECONDS)
        .sign(key);
    },
    async open(value) {
      if (!value || value.length > 4096) return null;
      try {
        const { payload } = await jwtVerify(value, key, { algorithms: ["HS256"], currentDate: new Date(now()) });
        const tx = payload.tx as Partial<LoginTransaction> | undefined;
        const fields = ["state", "nonce", "codeVerifier", "redirectUri", "returnTo"] as const;
        if (!tx || !fields.every((f) => typeof tx[f] === "string" && tx[f].length > 0)) return null;
        return tx as LoginTransaction;
      } catch {
        return null;
      }
    },
  };
}
