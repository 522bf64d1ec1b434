import { readFile as fsReadFile } from "node:fs/promises";
import { join } from "node:path";
import type { Config, SecretGrants, SecretHostPattern, SecretHosts } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { canonicalHost, nameMatches } from "../net/host-name.ts";
import type { AwsSecretSource } from "./aws.ts";

/** Credentials of one source connection. Never logged, never put in an error. */
export interface SourceCredentials {
  username: string;
  password: string;
}

/** Resolves a source's `secret_ref` to credentials for one workspace (spec, Sessions). */
export interface SecretResolver {
  /**
   * Throws AppError `grant_missing` (naming the secret_ref only) unless the workspace may use `secretRef` and, when
   * SOURCE_SECRET_HOSTS lists hosts for it, `host` (on `port`, where the entry names one) is one of them (a limited
   * ref with no host given, or no port given for a port-bound entry, is refused). In production a ref that
   * SOURCE_SECRET_HOSTS does not list is refused too.
   */
  checkGrant(secretRef: string, workspaceId: string, host?: string, port?: number): void;
  /**
   * Grant and host check, then `<REF>_USERNAME`/`<REF>_PASSWORD` from files in SOURCE_SECRETS_DIR (read on every call),
   * then the environment, then AWS Secrets Manager when configured. Throws AppError `grant_missing` or
   * `source_credentials_missing` (naming variable names, never values).
   */
  resolve(secretRef: string, workspaceId: string, host?: string, port?: number): Promise<SourceCredentials>;
}

/** Same rule as SOURCE_SECRET_REFS: letters, digits and `_`, so a ref can never name a path outside the folder. */
export const SECRET_REF_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

type ReadFile = (path: string) => Promise<string>;

export interface SecretResolverOptions {
  config: Pick<Config, "sourceSecretGrants" | "SOURCE_SECRETS_DIR"> & Partial<Pick<Config, "sourceSecretHosts" | "isProduction">>;
  /** Where `<REF>_USERNAME`/`_PASSWORD` are looked up after the files. */
  env?: Record<string, string | undefined>;
  /** Current grants; defaults to the configured ones. A getter lets an operator revoke without a restart. */
  grants?: () => SecretGrants;
  /** The optional Secrets Manager backend (see createAwsSecretSource); absent means files and env only. */
  aws?: AwsSecretSource | null;
  readFile?: ReadFile;
}

/** True when `workspaceId` holds a grant for `secretRef`. */
export function isGranted(grants: SecretGrants, secretRef: string, workspaceId: string): boolean {
  const grant = grants.get(secretRef);
  if (grant === undefined) return false;
  return grant === "*" || grant.has(workspaceId);
}

/**
 * True when `host` on `port` matches one of a ref's SOURCE_SECRET_HOSTS patterns: the same address (compared in
 * normalized form) or name (case and a trailing dot ignored), or a name ending in `.suffix` for `*.suffix`, and the
 * pattern's port when it names one (a pattern without a port takes any). An address never matches a `*.` pattern, a
 * host that is neither an address nor a valid name matches nothing, and no port given matches only portless patterns.
 */
export function isHostAllowed(patterns: readonly SecretHostPattern[], host: string, port?: number): boolean {
  const c = canonicalHost(host);
  if (!c) return false;
  return patterns.some(
    (p) =>
      (p.port === null || p.port === port) && (p.host.startsWith("*.") ? !c.address && nameMatches(p.host, c.host) : p.host === c.host),
  );
}

/** Builds the resolver. Files are read on every call, so a rotated file takes effect on the next connection. */
export function createSecretResolver(opts: SecretResolverOptions): SecretResolver {
  const env = opts.env ?? process.env;
  const configured = opts.config.sourceSecretGrants;
  const grants = opts.grants ?? (() => configured);
  const hosts: SecretHosts = opts.config.sourceSecretHosts ?? new Map();
  const dir = opts.config.SOURCE_SECRETS_DIR;
  const readFile: ReadFile = opts.readFile ?? ((p) => fsReadFile(p, "utf8"));
  const aws = opts.aws ?? null;
  // In production a credential goes only to hosts an operator bound it to: any other rule lets a workspace admin
  // send it (the username in the clear, a SCRAM exchange at best) to a server of their choice.
  const bindingRequired = opts.config.isProduction === true;

  function checkGrant(secretRef: string, workspaceId: string, host?: string, port?: number): void {
    if (!SECRET_REF_PATTERN.test(secretRef)) {
      throw new AppError("grant_missing", "The source's secret_ref is not a valid name (letters, digits and _).");
    }
    if (!isGranted(grants(), secretRef, workspaceId)) {
      throw new AppError(
        "grant_missing",
        `This workspace has no grant for secret_ref ${secretRef}; an operator must add it to SOURCE_SECRET_REFS.`,
        { secretRef },
      );
    }
    const allowed = hosts.get(secretRef);
    if (!allowed && bindingRequired) {
      throw new AppError(
        "grant_missing",
        `secret_ref ${secretRef} is not bound to any host; in production an operator must list its hosts in SOURCE_SECRET_HOSTS.`,
        { secretRef, reason: "host_not_bound" },
      );
    }
    if (allowed && (host === undefined || !isHostAllowed(allowed, host, port))) {
      // Neither the host, the port nor the allowed list is named, and a wrong port reads as a wrong host: viewers
      // running a panel see this too, they are not shown a source's connection details, and nothing was connected,
      // so the answer says nothing about what listens on the port.
      throw new AppError(
        "grant_missing",
        `The source's host and port are not allowed for secret_ref ${secretRef}; an operator must list them in SOURCE_SECRET_HOSTS.`,
        { secretRef, reason: "host_not_allowed" },
      );
    }
  }

  async function fromFile(name: string): Promise<string | undefined> {
    if (!dir) return undefined;
    try {
      // Kubernetes and Docker secret files often end with one newline that is not part of the value.
      return (await readFile(join(dir, name))).replace(/\r?\n$/, "");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return undefined;
      throw new AppError("source_credentials_missing", `Cannot read ${name} in SOURCE_SECRETS_DIR (${code ?? "read error"}).`, {
        variable: name,
      });
    }
  }

  async function lookup(name: string): Promise<string | undefined> {
    const file = await fromFile(name);
    if (file !== undefined && file !== "") return file;
    const value = env[name];
    return value === undefined || value === "" ? undefined : value;
  }

  return {
    checkGrant,
    async resolve(secretRef, workspaceId, host, port) {
      checkGrant(secretRef, workspaceId, host, port);
      const userVar = `${secretRef}_USERNAME`;
      const passVar = `${secretRef}_PASSWORD`;
      const [username, password] = await Promise.all([lookup(userVar), lookup(passVar)]);
      if (username !== undefined && password !== undefined) return { username, password };
      if (aws) {
        const fromAws = await aws.get(secretRef);
        if (fromAws) return fromAws;
      }
      const missing = [username === undefined ? userVar : null, password === undefined ? passVar : null].filter(
        (v): v is string => v !== null,
      );
      const where = [dir ? "a file in SOURCE_SECRETS_DIR" : null, "the environment", aws ? aws.describe(secretRef) : null]
        .filter(Boolean)
        .join(", ");
      throw new AppError(
        "source_credentials_missing",
        `No credentials for secret_ref ${secretRef}: set ${missing.join(" and ")} (looked in ${where}).`,
        { secretRef, missing },
      );
    },
  };
}
