import { memoUntilFailure } from "../lifecycle/memo.ts";

/** The parts of the AWS SDK's Secrets Manager client the service uses. */
export type SecretsManagerSdk = typeof import("./sdk-exports.ts");

const sdk = memoUntilFailure<SecretsManagerSdk>(() => import("./sdk-exports.ts"));

/**
 * Loads the Secrets Manager client on the first secret read instead of at start: the AWS SDK is about a
 * quarter of the handlers bundle, and a process configured without APP_SECRETS_AWS or
 * SOURCE_SECRETS_AWS_PREFIX never reads a secret from AWS (docs/build.md, "Cold start").
 */
export function loadSecretsManager(): Promise<SecretsManagerSdk> {
  return sdk();
}
