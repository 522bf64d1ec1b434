import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { AppError } from "../http/errors.ts";
import type { SourceCredentials } from "./resolver.ts";
import { secretTextReader } from "./sdk.ts";

/** The optional AWS Secrets Manager backend of source credentials (docs/query-runner.md). */
export interface AwsSecretSource {
  /** Credentials for `secretRef`, or null when the secret does not exist. Other failures throw a coded AppError. */
  get(secretRef: string): Promise<SourceCredentials | null>;
  /** Where a secret_ref is looked up, for error messages (a secret name, never a value). */
  describe(secretRef: string): string;
}

export interface AwsSecretSourceOptions {
  /** SOURCE_SECRETS_AWS_PREFIX: the secret id is `<prefix><secret_ref>`. */
  prefix: string;
  /** SOURCE_SECRETS_AWS_CACHE_SECONDS; 0 disables the cache. */
  cacheSeconds: number;
  /** Defaults to a client with the SDK's default region and credential chain. */
  client?: SecretsManagerClient;
  now?: () => number;
}

/** Resolves `<prefix><secret_ref>` to a JSON secret `{username,password}`, cached briefly and deduplicated in flight. */
export function createAwsSecretSource(opts: AwsSecretSourceOptions): AwsSecretSource {
  const now = opts.now ?? Date.now;
  const readText = secretTextReader(opts.client);
  const cache = new Map<string, { value: SourceCredentials; expiresAt: number }>();
  const inFlight = new Map<string, Promise<SourceCredentials | null>>();
  const secretId = (ref: string) => `${opts.prefix}${ref}`;

  async function fetchSecret(ref: string): Promise<SourceCredentials | null> {
    let text: string | undefined;
    try {
      text = await readText(secretId(ref));
    } catch (err) {
      const name = (err as { name?: string }).name ?? "Error";
      if (name === "ResourceNotFoundException") return null;
      // The SDK's message can carry account ids and ARNs; only the error class name leaves this module.
      throw new AppError("source_credentials_missing", `AWS Secrets Manager lookup of ${secretId(ref)} failed (${name}).`, {
        secretRef: ref,
      });
    }
    const parsed = parseSecret(text);
    if (!parsed) {
      throw new AppError(
        "source_credentials_missing",
        `AWS secret ${secretId(ref)} must be a JSON object with string fields username and password.`,
        { secretRef: ref },
      );
    }
    return parsed;
  }

  return {
    describe: (ref) => `AWS Secrets Manager secret ${secretId(ref)}`,
    async get(ref) {
      const hit = cache.get(ref);
      if (hit && hit.expiresAt > now()) return hit.value;
      const pending = inFlight.get(ref);
      if (pending) return pending;
      const p = fetchSecret(ref)
        .then((value) => {
          if (value && opts.cacheSeconds > 0) cache.set(ref, { value, expiresAt: now() + opts.cacheSeconds * 1000 });
          return value;
        })
        .finally(() => inFlight.delete(ref));
      inFlight.set(ref, p);
      return p;
    },
  };
}

function parseSecret(text: string | undefined): SourceCredentials | null {
  if (!text) return null;
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== "object" || v === null) return null;
    const { username, password } = v as Record<string, unknown>;
    if (typeof username !== "string" || typeof password !== "string" || !username || !password) return null;
    return { username, password };
  } catch {
    return null;
  }
}
