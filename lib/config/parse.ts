import type { z } from "zod";
import { type CidrRange, parseCidrList } from "../net/cidr.ts";
import { canonicalHost } from "../net/host-name.ts";
import { splitHostPort } from "../net/host-list.ts";
import { type VariableName, variables } from "./variables.ts";

type Parsed = { [K in VariableName]: z.output<(typeof variables)[K]["schema"]> };

/** Workspaces allowed to use one secret_ref; `"*"` grants every workspace. */
export type SecretGrants = ReadonlyMap<string, ReadonlySet<string> | "*">;

/**
 * Hosts a source using a secret_ref may connect to (SOURCE_SECRET_HOSTS), as canonical patterns: an address
 * (`10.0.0.5`, `2001:db8:0:0:0:0:0:1`), a lower-case name, or `*.suffix`. A ref without an entry is not limited.
 */
/**
 * One host a secret_ref is bound to: a canonical name or address (lib/net/host-name.ts canonicalHost), or `*.suffix`,
 * and the one port it is bound to there (null: any port).
 */
export interface SecretHostPattern {
  host: string;
  port: number | null;
}

export type SecretHosts = ReadonlyMap<string, readonly SecretHostPattern[]>;

/** The validated configuration: every variable by its env name, plus values derived from them. */
export type Config = Parsed & {
  isProduction: boolean;
  isDevelopment: boolean;
  metricsAllowedCidrs: readonly CidrRange[] | null;
  sourceSecretGrants: SecretGrants;
  sourceSecretHosts: SecretHosts;
};

/** Thrown when configuration is invalid; `problems` names every bad variable (never a secret's value). */
export class ConfigError extends Error {
  readonly code = "config_invalid";
  constructor(readonly problems: readonly { variable: string; message: string }[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p.variable}: ${p.message}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

const SECRET_REF = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Parses SOURCE_SECRET_REFS (`REF:ws1,ws2;REF2:*`) into grants; returns the problem text on bad syntax. */
export function parseSecretRefs(text: string): { grants: Map<string, Set<string> | "*"> } | { error: string } {
  const grants = new Map<string, Set<string> | "*">();
  for (const raw of text.split(";")) {
    const entry = raw.trim();
    if (!entry) continue;
    const colon = entry.indexOf(":");
    if (colon === -1) return { error: `entry "${entry}" must have the form <SECRET_REF>:<workspace>,<workspace>` };
    const ref = entry.slice(0, colon).trim();
    if (!SECRET_REF.test(ref)) return { error: `"${ref}" is not a valid secret_ref (letters, digits and _)` };
    const workspaces = entry
      .slice(colon + 1)
      .split(",")
      .map((w) => w.trim())
      .filter(Boolean);
    if (workspaces.length === 0) return { error: `secret_ref ${ref} grants no workspace` };
    const prior = grants.get(ref);
    if (workspaces.includes("*") || prior === "*") grants.set(ref, "*");
    else grants.set(ref, new Set([...(prior ?? []), ...workspaces]));
  }
  return { grants };
}

export { canonicalHost };

/**
 * Parses SOURCE_SECRET_HOSTS (`REF:db.internal:5432,10.0.0.5;REF2:*.rds.amazonaws.com`: hosts with an optional port,
 * an IPv6 address with a port in brackets); returns the problem text on bad syntax.
 */
export function parseSecretHosts(text: string): { hosts: Map<string, SecretHostPattern[]> } | { error: string } {
  const hosts = new Map<string, SecretHostPattern[]>();
  for (const raw of text.split(";")) {
    const entry = raw.trim();
    if (!entry) continue;
    const colon = entry.indexOf(":");
    if (colon === -1) return { error: `entry "${entry}" must have the form <SECRET_REF>:<host>,<host>` };
    const ref = entry.slice(0, colon).trim();
    if (!SECRET_REF.test(ref)) return { error: `"${ref}" is not a valid secret_ref (letters, digits and _)` };
    // IPv6 addresses contain ":"; only the first one separates the ref.
    const items = entry
      .slice(colon + 1)
      .split(",")
      .map((h) => h.trim())
      .filter(Boolean);
    if (items.length === 0) return { error: `secret_ref ${ref} lists no host` };
    const patterns = hosts.get(ref) ?? [];
    for (const item of items) {
      const split = splitHostPort(item);
      const wildcard = split?.target.startsWith("*.") === true;
      const c = split ? canonicalHost(wildcard ? split.target.slice(2) : split.target) : null;
      if (!split || !c || (wildcard && c.address)) {
        return {
          error: `host ${JSON.stringify(item)} of secret_ref ${ref} is not a host name, an IP address or *.<domain>, with an optional :<port> (1-65535; [<IPv6>]:<port>)`,
        };
      }
      const pattern = { host: wildcard ? `*.${c.host}` : c.host, port: split.port };
      if (!patterns.some((p) => p.host === pattern.host && p.port === pattern.port)) patterns.push(pattern);
    }
    hosts.set(ref, patterns);
  }
  return { hosts };
}

/**
 * Validates the environment. Returns the config and production warnings, or throws one
 * ConfigError listing every bad variable by name.
 */
export function parseConfig(env: Record<string, string | undefined> = process.env): {
  config: Config;
  warnings: string[];
} {
  const problems: { variable: string; message: string }[] = [];
  const warnings: string[] = [];
  const parsed: Record<string, unknown> = {};

  for (const [name, def] of Object.entries(variables)) {
    const result = (def.schema as z.ZodType).safeParse(env[name]);
    if (result.success) parsed[name] = result.data;
    else problems.push({ variable: name, message: result.error.issues.map((i) => i.message).join("; ") });
  }

  const p = parsed as Parsed;
  const isProduction = p.NODE_ENV === "production";

  if (typeof p.DEFAULT_REFRESH_INTERVAL_MS === "number" && typeof p.MIN_REFRESH_INTERVAL_MS === "number") {
    if (p.DEFAULT_REFRESH_INTERVAL_MS < p.MIN_REFRESH_INTERVAL_MS) {
      problems.push({
        variable: "DEFAULT_REFRESH_INTERVAL_MS",
        message: `must not be below MIN_REFRESH_INTERVAL_MS (${p.MIN_REFRESH_INTERVAL_MS})`,
      });
    }
  }

  if (isProduction) {
    if (!p.SESSION_SECRET) problems.push({ variable: "SESSION_SECRET", message: "is required in production" });
    else if (p.SESSION_SECRET.length < 32)
      problems.push({ variable: "SESSION_SECRET", message: "must be at least 32 characters in production" });
    if (!p.SOURCE_SECRET_REFS)
      problems.push({ variable: "SOURCE_SECRET_REFS", message: "is required in production (unset grants nothing)" });
  }

  let sourceSecretGrants: SecretGrants = new Map();
  if (p.SOURCE_SECRET_REFS) {
    const refs = parseSecretRefs(p.SOURCE_SECRET_REFS);
    if ("error" in refs) problems.push({ variable: "SOURCE_SECRET_REFS", message: refs.error });
    else sourceSecretGrants = refs.grants;
  }

  let sourceSecretHosts: SecretHosts = new Map();
  if (p.SOURCE_SECRET_HOSTS) {
    const hosts = parseSecretHosts(p.SOURCE_SECRET_HOSTS);
    if ("error" in hosts) problems.push({ variable: "SOURCE_SECRET_HOSTS", message: hosts.error });
    else sourceSecretHosts = hosts.hosts;
  }

  let metricsAllowedCidrs: CidrRange[] | null = null;
  if (p.METRICS_ALLOWED_CIDRS) {
    const { ranges, invalid } = parseCidrList(p.METRICS_ALLOWED_CIDRS);
    if (invalid.length > 0) {
      problems.push({
        variable: "METRICS_ALLOWED_CIDRS",
        message: `entries that do not parse as an IP address or CIDR range: ${invalid.map((e) => JSON.stringify(e)).join(", ")}`,
      });
    } else if (ranges.length === 0) {
      problems.push({ variable: "METRICS_ALLOWED_CIDRS", message: "lists no address" });
    } else metricsAllowedCidrs = ranges;
  }

  if (problems.length > 0) throw new ConfigError(problems);

  if (isProduction) {
    if (p.METRICS_ALLOWED_CIDRS && !p.METRICS_TOKEN)
      warnings.push("METRICS_ALLOWED_CIDRS is set without METRICS_TOKEN: /api/metrics is guarded by source address alone");
    if (p.METRICS_TOKEN && p.METRICS_TOKEN.length < 24) warnings.push("METRICS_TOKEN is shorter than 24 characters");
    // Production refuses a secret_ref that SOURCE_SECRET_HOSTS does not bind (lib/secrets/resolver.ts): say which.
    const unbound = [...sourceSecretGrants.keys()].filter((ref) => !sourceSecretHosts.has(ref));
    if (!p.SOURCE_SECRET_HOSTS)
      warnings.push("SOURCE_SECRET_HOSTS is unset: every source is refused (grant_missing) until its secret_ref is bound to hosts");
    else if (unbound.length > 0)
      warnings.push(
        `SOURCE_SECRET_HOSTS binds no host to secret_ref ${unbound.join(", ")}: sources using them are refused (grant_missing)`,
      );
  }

  return {
    config: {
      ...p,
      isProduction,
      isDevelopment: p.NODE_ENV === "development",
      metricsAllowedCidrs,
      sourceSecretGrants,
      sourceSecretHosts,
    },
    warnings,
  };
}
