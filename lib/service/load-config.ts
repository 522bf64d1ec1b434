import { type Config, ConfigError, parseConfig } from "../config/parse.ts";
import { systemTimers } from "../lifecycle/timers.ts";
import { createLogger } from "../log/logger.ts";
import { resolveAppSecretsOrExit } from "../secrets/boot.ts";

/**
 * Entry-point helper: validates the environment, prints warnings, and on a bad configuration prints
 * every problem (variable names, never secret values) and exits with code 1.
 */
export function loadConfigOrExit(env: Record<string, string | undefined> = process.env): Config {
  try {
    const { config, warnings } = parseConfig(env);
    for (const w of warnings) process.stderr.write(`${JSON.stringify({ level: "warn", msg: w })}\n`);
    return config;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

/**
 * Boot step 1 of a serving process (the handlers, the stream host): the secrets APP_SECRETS_AWS names, read
 * from Secrets Manager before the config is parsed and refreshed in the background after (without it the
 * environment is used as it is), then the validated config. A secret that cannot be read or a bad config
 * ends the process with one line naming it, exit 1.
 */
export async function loadConfig(env: Record<string, string | undefined> = process.env): Promise<Config> {
  const secrets = await resolveAppSecretsOrExit(env, { timers: systemTimers, log: createLogger() });
  const config = loadConfigOrExit(secrets.env);
  secrets.keepFresh(config);
  return config;
}
