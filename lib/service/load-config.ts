import { type Config, ConfigError, parseConfig } from "../config/parse.ts";

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
