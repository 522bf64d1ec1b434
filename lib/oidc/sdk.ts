import { memoUntilFailure } from "../lifecycle/memo.ts";

/** openid-client, as much of it as the relying party uses. */
export type OpenIdClient = typeof import("./sdk-exports.ts");

const sdk = memoUntilFailure<OpenIdClient>(() => import("./sdk-exports.ts"));

/**
 * Loads openid-client on the first sign-in instead of at start: a process that answers probes and
 * session-checked requests never needs it, since sessions are verified locally (docs/build.md, "Cold start").
 */
export function loadOpenIdClient(): Promise<OpenIdClient> {
  return sdk();
}
