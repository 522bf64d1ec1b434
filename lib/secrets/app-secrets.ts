import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { Timers } from "../lifecycle/timers.ts";
import type { Logger } from "../log/logger.ts";
import { secretTextReader } from "./sdk.ts";

/** One variable whose value lives in Secrets Manager: the secret's id or ARN, and optionally a JSON field of it. */
export interface AppSecretRef {
  variable: string;
  secretId: string;
  field?: string;
}

/**
 * Variables whose previous value (the secret's AWSPREVIOUS stage) is kept beside the current one while a
 * rotation is under way: a session signed with the old key stays valid on every instance, and the CDN's
 * old origin header is still accepted until CloudFront has the new one.
 */
export const PREVIOUS_VARIABLE: Readonly<Record<string, string>> = {
  SESSION_SECRET: "SESSION_SECRET_PREVIOUS",
  ORIGIN_VERIFY_SECRET: "ORIGIN_VERIFY_SECRET_PREVIOUS",
};

const VARIABLE = /^[A-Z][A-Z0-9_]*$/;

/**
 * Parses APP_SECRETS_AWS: `<VARIABLE>=<secret id or ARN>[#<json field>]` entries separated by `;`. Throws an
 * Error naming the bad entry by its variable (never a value: the entries hold only names and ARNs).
 */
export function parseAppSecretRefs(text: string): AppSecretRef[] {
  const refs: AppSecretRef[] = [];
  for (const raw of text.split(";")) {
    const entry = raw.trim();
    if (!entry) continue;
    const eq = entry.indexOf("=");
    const variable = eq === -1 ? entry : entry.slice(0, eq).trim();
    const target = eq === -1 ? "" : entry.slice(eq + 1).trim();
    if (!VARIABLE.test(variable)) throw new Error(`APP_SECRETS_AWS: "${variable}" is not a variable name`);
    const hash = target.indexOf("#");
    const secretId = hash === -1 ? target : target.slice(0, hash);
    const field = hash === -1 ? undefined : target.slice(hash + 1);
    if (!secretId || field === "") throw new Error(`APP_SECRETS_AWS: entry ${variable} must be ${variable}=<secret>[#<field>]`);
    if (refs.some((r) => r.variable === variable)) throw new Error(`APP_SECRETS_AWS: ${variable} is listed twice`);
    refs.push({ variable, secretId, field });
  }
  return refs;
}

/** A secret could not be read; `name` is the SDK's error class (its message can carry ARNs and account ids). */
export class AppSecretError extends Error {
  readonly code = "app_secret_unavailable";
  constructor(
    readonly variable: string,
    readonly reason: string,
  ) {
    super(`secret for ${variable} could not be read (${reason})`);
    this.name = "AppSecretError";
  }
}

/**
 * Reads the process's own secrets (session key, config-store password, OIDC client secret, AI key, origin
 * secret) from Secrets Manager: once before the configuration is parsed, then again every `refreshSeconds`,
 * so a rotated value reaches every instance within that interval without a deploy. `apply` receives every
 * value after each read (the previous stage under the `_PREVIOUS` name when there is one).
 */
export function createAppSecrets(opts: {
  refs: readonly AppSecretRef[];
  refreshSeconds: number;
  apply(values: Record<string, string>): void;
  client?: SecretsManagerClient;
  timers: Timers;
  log: Logger;
}) {
  const readText = secretTextReader(opts.client);
  let timer: unknown = null;
  let current: Record<string, string> = {};

  /** One stage of one secret as text; undefined for a previous stage that does not exist. */
  async function stage(secretId: string, variable: string, versionStage: "AWSCURRENT" | "AWSPREVIOUS") {
    let text: string | undefined;
    try {
      text = await readText(secretId, versionStage);
    } catch (err) {
      const name = (err as { name?: string }).name ?? "Error";
      // A secret that was never rotated has no previous version.
      if (versionStage === "AWSPREVIOUS" && name === "ResourceNotFoundException") return undefined;
      throw new AppSecretError(variable, name);
    }
    if (text === undefined) throw new AppSecretError(variable, "not_a_string");
    return text;
  }

  function pick(ref: AppSecretRef, text: string): string {
    if (!ref.field) return text;
    let value: unknown;
    try {
      value = (JSON.parse(text) as Record<string, unknown>)?.[ref.field];
    } catch {
      throw new AppSecretError(ref.variable, "not_json");
    }
    if (typeof value !== "string" || !value) throw new AppSecretError(ref.variable, "field_missing");
    return value;
  }

  /**
   * Reads every secret once per round (fields of one secret, such as a rotating user name and password,
   * always come from the same version); throws an AppSecretError naming the first variable that failed.
   */
  async function read(): Promise<Record<string, string>> {
    const values: Record<string, string> = {};
    const bySecret = new Map<string, AppSecretRef[]>();
    for (const r of opts.refs) bySecret.set(r.secretId, [...(bySecret.get(r.secretId) ?? []), r]);
    await Promise.all(
      [...bySecret].map(async ([secretId, refs]) => {
        const wantsPrevious = refs.some((r) => PREVIOUS_VARIABLE[r.variable]);
        const [current, previous] = await Promise.all([
          stage(secretId, refs[0].variable, "AWSCURRENT"),
          wantsPrevious ? stage(secretId, refs[0].variable, "AWSPREVIOUS") : undefined,
        ]);
        for (const ref of refs) {
          const value = pick(ref, current!);
          values[ref.variable] = value;
          const previousName = PREVIOUS_VARIABLE[ref.variable];
          if (previousName && previous !== undefined) {
            const old = pick(ref, previous);
            if (old !== value) values[previousName] = old;
          }
        }
      }),
    );
    return values;
  }

  async function refresh(): Promise<void> {
    try {
      const values = await read();
      const changed = Object.keys({ ...values, ...current }).filter((k) => values[k] !== current[k]);
      current = values;
      if (changed.length > 0) {
        opts.apply(values);
        // Names only, never values.
        opts.log.info("secrets refreshed", { changed });
      }
    } catch (err) {
      // Keep serving with the values already in memory; the next refresh tries again.
      const e = err as AppSecretError;
      opts.log.warn("secrets refresh failed", { variable: e.variable ?? null, reason: e.reason ?? "error" });
    }
  }

  return {
    /** The first read, before the configuration is parsed: every value, or an AppSecretError. */
    async load(): Promise<Record<string, string>> {
      current = await read();
      opts.apply(current);
      return current;
    },
    /** Re-reads every `refreshSeconds` until `stop`. */
    start(): void {
      if (timer !== null || opts.refreshSeconds <= 0) return;
      timer = opts.timers.setInterval(() => void refresh(), opts.refreshSeconds * 1000);
    },
    stop(): void {
      if (timer !== null) opts.timers.clearInterval(timer);
      timer = null;
    },
    /** One refresh now (tests drive it with their own clock). */
    refresh,
  };
}

export type AppSecrets = ReturnType<typeof createAppSecrets>;
