import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
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

/**
 * Reads one secret's text with `client`, or, from the first read on, a client with the SDK's default region and
 * credential chain (the SDK loads then). Undefined for a binary secret; a failed read throws the SDK's error,
 * whose `name` says what went wrong (ResourceNotFoundException, AccessDeniedException, …).
 */
export function secretTextReader(client?: SecretsManagerClient) {
  let c = client;
  return async (secretId: string, versionStage?: "AWSCURRENT" | "AWSPREVIOUS"): Promise<string | undefined> => {
    const { GetSecretValueCommand, SecretsManagerClient } = await loadSecretsManager();
    c ??= new SecretsManagerClient({});
    return (await c.send(new GetSecretValueCommand({ SecretId: secretId, VersionStage: versionStage }))).SecretString;
  };
}
