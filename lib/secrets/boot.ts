import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { Config } from "../config/parse.ts";
import type { Timers } from "../lifecycle/timers.ts";
import type { Logger } from "../log/logger.ts";
import { type AppSecrets, AppSecretError, PREVIOUS_VARIABLE, createAppSecrets, parseAppSecretRefs } from "./app-secrets.ts";

/**
 * Entry-point step before the configuration is parsed. Without APP_SECRETS_AWS it returns `env` unchanged.
 * With it, every listed secret is read from Secrets Manager and merged into the environment the config is
 * parsed from; `keepFresh` then re-reads them on a schedule and writes new values into the config object
 * (session keys and the origin secret are read from it on every use) and into `process.env` for the
 * `PG*` variables node-postgres reads when it opens a connection (a rotated password is used by the next one).
 * A listed variable also set in the environment is refused: the cloud never carries a secret as plain env.
 */
export async function resolveAppSecrets(
  env: Record<string, string | undefined>,
  opts: { client?: SecretsManagerClient; timers: Timers; log: Logger; processEnv?: Record<string, string | undefined> },
): Promise<{ env: Record<string, string | undefined>; keepFresh(config: Config): AppSecrets | null }> {
  const text = env.APP_SECRETS_AWS?.trim();
  if (!text) return { env, keepFresh: () => null };
  const refs = parseAppSecretRefs(text);
  const doubled = refs.filter((r) => env[r.variable] !== undefined && env[r.variable] !== "").map((r) => r.variable);
  if (doubled.length > 0) {
    throw new Error(`APP_SECRETS_AWS lists ${doubled.join(", ")}, which the environment also sets; remove one`);
  }
  const processEnv = opts.processEnv ?? process.env;
  let target: Config | null = null;
  const secrets = createAppSecrets({
    refs,
    refreshSeconds: Number(env.APP_SECRETS_REFRESH_SECONDS ?? 300) || 0,
    client: opts.client,
    timers: opts.timers,
    log: opts.log,
    apply(values) {
      for (const [name, value] of Object.entries(values)) if (name.startsWith("PG")) processEnv[name] = value;
      if (!target) return;
      const config = target as unknown as Record<string, unknown>;
      for (const ref of refs) if (ref.variable in config) config[ref.variable] = values[ref.variable];
      // A rotation that finished drops the previous value.
      for (const ref of refs) {
        const previous = PREVIOUS_VARIABLE[ref.variable];
        if (previous) config[previous] = values[previous];
      }
    },
  });
  const values = await secrets.load();
  return {
    env: { ...env, ...values },
    keepFresh(config) {
      target = config;
      secrets.start();
      return secrets;
    },
  };
}

/** As resolveAppSecrets, for entry points: a secret that cannot be read prints one line naming it and exits 1. */
export async function resolveAppSecretsOrExit(
  env: Record<string, string | undefined>,
  opts: Parameters<typeof resolveAppSecrets>[1] & { exit?: (code: number) => never },
) {
  try {
    return await resolveAppSecrets(env, opts);
  } catch (err) {
    const line =
      err instanceof AppSecretError
        ? `start failed: the secret of ${err.variable} could not be read from AWS Secrets Manager (${err.reason}); check APP_SECRETS_AWS and the role's secretsmanager:GetSecretValue permission`
        : `start failed: ${(err as Error).message}`;
    process.stderr.write(`${line}\n`);
    return (opts.exit ?? ((code: number) => process.exit(code)))(1);
  }
}
