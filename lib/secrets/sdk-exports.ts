// What the service uses of the Secrets Manager client, loaded through lib/secrets/sdk.ts. Named re-exports
// rather than a dynamic import of the package, so the bundler still drops its unused commands.
export { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
