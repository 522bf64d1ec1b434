import type { Config } from "../config/parse.ts";
import { createAwsSecretSource } from "./aws.ts";
import { type SecretResolver, type SecretResolverOptions, createSecretResolver } from "./resolver.ts";

export { type AwsSecretSource, createAwsSecretSource } from "./aws.ts";
export {
  SECRET_REF_PATTERN,
  type SecretResolver,
  type SecretResolverOptions,
  type SourceCredentials,
  createSecretResolver,
  isGranted,
  isHostAllowed,
} from "./resolver.ts";

/** The resolver an entry point builds from config: files, env, and Secrets Manager when SOURCE_SECRETS_AWS_PREFIX is set. */
export function createSecretResolverFromConfig(
  config: Config,
  overrides: Partial<Omit<SecretResolverOptions, "config">> & { now?: () => number } = {},
): SecretResolver {
  const aws =
    overrides.aws !== undefined
      ? overrides.aws
      : config.SOURCE_SECRETS_AWS_PREFIX
        ? createAwsSecretSource({
            prefix: config.SOURCE_SECRETS_AWS_PREFIX,
            cacheSeconds: config.SOURCE_SECRETS_AWS_CACHE_SECONDS,
            now: overrides.now,
          })
        : null;
  return createSecretResolver({ ...overrides, config, aws });
}
