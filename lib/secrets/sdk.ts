/** The parts of the AWS SDK's Secrets Manager client the service uses. */
export type SecretsManagerSdk = typeof import("./sdk-exports.ts");

let sdk: Promise<SecretsManagerSdk> | undefined;

/**
 * Loads the Secrets Manager client on the first secret read instead of at start: the AWS SDK is about a
 * quarter of the handlers bundle, and a process configured without APP_SECRETS_AWS or
 * SOURCE_SECRETS_AWS_PREFIX never reads a secret from AWS (docs/build.md, "Cold start").
 */
export function loadSecretsManager(): Promise<SecretsManagerSdk> {
  sdk ??= import("./sdk-exports.ts");
  return sdk;
}
