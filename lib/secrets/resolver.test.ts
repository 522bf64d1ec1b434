import fc from "fast-check";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetSecretValueCommand, ResourceNotFoundException, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { parseConfig, parseSecretRefs } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { rejection } from "../testing/rejection.ts";
import { createAwsSecretSource } from "./aws.ts";
import { createSecretResolverFromConfig } from "./index.ts";
import { createSecretResolver, isHostAllowed } from "./resolver.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pb-secrets-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function config(extra: Record<string, string> = {}) {
  return parseConfig({
    DATABASE_URL: "postgres://x@127.0.0.1/db",
    SOURCE_SECRET_REFS: "METRICS:ws_a,ws_b;SHARED:*",
    SOURCE_SECRETS_DIR: dir,
    ...extra,
  }).config;
}

describe("grants", () => {
  const resolver = createSecretResolver({ config: config(), env: { METRICS_USERNAME: "u", METRICS_PASSWORD: "p" } });

  test("a granted workspace resolves; `*` grants every workspace", async () => {
    await expect(resolver.resolve("METRICS", "ws_a")).resolves.toEqual({ username: "u", password: "p" });
    expect(() => resolver.checkGrant("SHARED", "ws_anything")).not.toThrow();
  });

  test("a workspace without a grant gets grant_missing naming the secret_ref, never the values", async () => {
    const err = await rejection(resolver.resolve("METRICS", "ws_c"));
    expect(err.code).toBe("grant_missing");
    expect(err.detail).toContain("METRICS");
    expect(JSON.stringify([err.detail, err.extra])).not.toMatch(/"u"|"p"/);
  });

  test("grants are checked before any lookup", async () => {
    const reads: string[] = [];
    const r = createSecretResolver({
      config: config(),
      env: {},
      readFile: async (p) => {
        reads.push(p);
        return "x";
      },
    });
    await rejection(r.resolve("METRICS", "ws_c"));
    expect(reads).toEqual([]);
  });

  test("a secret_ref that could name a path is refused before any file access", async () => {
    const grants = new Map([["../etc/passwd", "*" as const]]);
    const reads: string[] = [];
    const r = createSecretResolver({
      config: { sourceSecretGrants: grants, SOURCE_SECRETS_DIR: dir },
      readFile: async (p) => {
        reads.push(p);
        return "x";
      },
    });
    expect((await rejection(r.resolve("../etc/passwd", "ws_a"))).code).toBe("grant_missing");
    expect(reads).toEqual([]);
  });

  test("a revoked grant is refused on the next call (grants getter)", async () => {
    let grants = (parseSecretRefs("METRICS:ws_a") as { grants: Map<string, Set<string> | "*"> }).grants;
    const r = createSecretResolver({
      config: config(),
      env: { METRICS_USERNAME: "u", METRICS_PASSWORD: "p" },
      grants: () => grants,
    });
    await expect(r.resolve("METRICS", "ws_a")).resolves.toBeTruthy();
    grants = new Map();
    expect((await rejection(r.resolve("METRICS", "ws_a"))).code).toBe("grant_missing");
  });
});

/** Portless patterns, as SOURCE_SECRET_HOSTS parses bare hosts. */
const hosts = (...names: string[]) => names.map((host) => ({ host, port: null }));

describe("host binding (SOURCE_SECRET_HOSTS)", () => {
  const cfg = () =>
    config({
      SOURCE_SECRET_REFS: "METRICS:ws_a;RDS:ws_a;SHARED:*",
      SOURCE_SECRET_HOSTS: "METRICS:metrics.internal,10.0.0.5,2001:db8::1;RDS:*.rds.amazonaws.com",
    });
  const env = { METRICS_USERNAME: "u", METRICS_PASSWORD: "p", SHARED_USERNAME: "u", SHARED_PASSWORD: "p" };

  test("a listed host resolves; names ignore case and a trailing dot, addresses compare normalized", async () => {
    const r = createSecretResolver({ config: cfg(), env });
    for (const host of ["metrics.internal", "METRICS.internal.", "10.0.0.5", "::ffff:10.0.0.5", "2001:DB8:0::1"]) {
      await expect(r.resolve("METRICS", "ws_a", host), host).resolves.toEqual({ username: "u", password: "p" });
    }
  });

  test("another host is grant_missing naming the secret_ref, before any lookup, never the host or values", async () => {
    const reads: string[] = [];
    const r = createSecretResolver({
      config: cfg(),
      env,
      readFile: async (path) => {
        reads.push(path);
        return "x";
      },
    });
    for (const host of ["attacker.example", "10.0.0.6", "metrics.internal.attacker.example", "127.0.0.1"]) {
      const err = await rejection(r.resolve("METRICS", "ws_a", host));
      expect(err.code).toBe("grant_missing");
      expect(err.detail).toContain("secret_ref METRICS");
      expect(err.detail).toContain("not allowed");
      expect(err.extra).toEqual({ secretRef: "METRICS", reason: "host_not_allowed" });
      const shown = JSON.stringify([err.detail, err.extra]);
      for (const leak of [host, "metrics.internal", "10.0.0.5", '"u"', '"p"']) expect(shown).not.toContain(leak);
      expect(() => r.checkGrant("METRICS", "ws_a", host)).toThrow(AppError);
    }
    expect(reads).toEqual([]);
  });

  test("a limited ref with no host given is refused; a ref without a host list is not limited", async () => {
    const r = createSecretResolver({ config: cfg(), env });
    expect((await rejection(r.resolve("METRICS", "ws_a"))).code).toBe("grant_missing");
    await expect(r.resolve("SHARED", "ws_x", "anywhere.example")).resolves.toEqual({ username: "u", password: "p" });
    await expect(r.resolve("SHARED", "ws_x")).resolves.toBeTruthy();
  });

  test("in production a ref SOURCE_SECRET_HOSTS does not bind is refused, before any lookup; bound refs are not", async () => {
    const reads: string[] = [];
    const prod = createSecretResolver({
      config: { ...cfg(), isProduction: true },
      env,
      readFile: async (path) => {
        reads.push(path);
        return "x";
      },
    });
    for (const host of ["anywhere.example", "10.0.0.5", undefined]) {
      const err = await rejection(prod.resolve("SHARED", "ws_a", host));
      expect(err.code).toBe("grant_missing");
      expect(err.extra).toEqual({ secretRef: "SHARED", reason: "host_not_bound" });
      expect(err.detail).toContain("SOURCE_SECRET_HOSTS");
      expect(() => prod.checkGrant("SHARED", "ws_a", host)).toThrow(AppError);
    }
    expect(reads).toEqual([]);
    await expect(prod.resolve("METRICS", "ws_a", "metrics.internal")).resolves.toBeTruthy();
    // With no SOURCE_SECRET_HOSTS at all, every ref is unbound.
    const bare = createSecretResolver({ config: { ...config(), isProduction: true }, env });
    expect((await rejection(bare.resolve("SHARED", "ws_a", "anywhere.example"))).extra).toMatchObject({ reason: "host_not_bound" });
  });

  test("the grant is still checked first: a listed host does not stand in for a missing grant", async () => {
    const r = createSecretResolver({ config: cfg(), env });
    const err = await rejection(r.resolve("METRICS", "ws_other", "metrics.internal"));
    expect(err.code).toBe("grant_missing");
    expect(err.detail).toContain("no grant");
  });

  test("*.suffix matches names under the suffix only: not the suffix itself, not a look-alike, not an address", () => {
    const patterns = hosts("*.rds.amazonaws.com", "db.internal");
    expect(isHostAllowed(patterns, "x.rds.amazonaws.com")).toBe(true);
    expect(isHostAllowed(patterns, "a.b.RDS.amazonaws.com.")).toBe(true);
    expect(isHostAllowed(patterns, "rds.amazonaws.com")).toBe(false);
    expect(isHostAllowed(patterns, ".rds.amazonaws.com")).toBe(false);
    expect(isHostAllowed(patterns, "evilrds.amazonaws.com")).toBe(false);
    expect(isHostAllowed(patterns, "x.rds.amazonaws.com.evil.example")).toBe(false);
    expect(isHostAllowed(patterns, "x.rds.amazonaws.com:5432")).toBe(false);
    expect(isHostAllowed(hosts("*.internal"), "10.0.0.1")).toBe(false);
    // Legacy numeric forms the resolver would read as 127.0.0.1 are neither names nor dotted-quad addresses.
    expect(isHostAllowed(hosts("*.internal", "127.0.0.1"), "127.1")).toBe(false);
    expect(isHostAllowed(hosts("127.0.0.1"), "0x7f000001")).toBe(false);
    expect(isHostAllowed(patterns, "db.internal")).toBe(true);
    expect(isHostAllowed(patterns, "db.internal.evil.example")).toBe(false);
  });
});

describe("host and port binding (SOURCE_SECRET_HOSTS entries with :port)", () => {
  const cfg = () =>
    config({
      SOURCE_SECRET_REFS: "METRICS:ws_a",
      SOURCE_SECRET_HOSTS: "METRICS:metrics.internal:5432,10.0.0.5:6432,[2001:db8::1]:5433,*.rds.amazonaws.com:5432,replica.internal",
    });
  const env = { METRICS_USERNAME: "u", METRICS_PASSWORD: "p" };

  test.each([
    ["metrics.internal", 5432],
    ["METRICS.internal.", 5432],
    ["10.0.0.5", 6432],
    ["::ffff:10.0.0.5", 6432],
    ["2001:DB8:0::1", 5433],
    ["x.rds.amazonaws.com", 5432],
    // An entry without a port binds the host on every port.
    ["replica.internal", 5432],
    ["replica.internal", 15432],
  ])("%s:%i is bound: resolves", async (host, port) => {
    await expect(createSecretResolver({ config: cfg(), env }).resolve("METRICS", "ws_a", host, port)).resolves.toEqual({
      username: "u",
      password: "p",
    });
  });

  test.each([
    ["metrics.internal", 5433],
    ["metrics.internal", 22],
    ["10.0.0.5", 5432],
    ["2001:db8::1", 5432],
    ["x.rds.amazonaws.com", 3306],
    ["metrics.internal", undefined],
    ["attacker.example", 5432],
  ])("%s:%s is refused, before any lookup, with the message of a wrong host (naming neither)", async (host, port) => {
    const reads: string[] = [];
    const r = createSecretResolver({
      config: cfg(),
      env,
      readFile: async (path) => {
        reads.push(path);
        return "x";
      },
    });
    const err = await rejection(r.resolve("METRICS", "ws_a", host, port));
    expect(err.code).toBe("grant_missing");
    expect(err.extra).toEqual({ secretRef: "METRICS", reason: "host_not_allowed" });
    expect(err.detail).toBe(
      "The source's host and port are not allowed for secret_ref METRICS; an operator must list them in SOURCE_SECRET_HOSTS.",
    );
    expect(() => r.checkGrant("METRICS", "ws_a", host, port)).toThrow(AppError);
    expect(reads).toEqual([]);
  });

  test("property: a port-bound entry admits exactly its port; a portless one every port", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 1, max: 65535 }), (bound, asked) => {
        expect(isHostAllowed([{ host: "db.internal", port: bound }], "db.internal", asked)).toBe(bound === asked);
        expect(isHostAllowed([{ host: "db.internal", port: null }], "db.internal", asked)).toBe(true);
      }),
      { seed: 20261127, numRuns: 500 },
    );
  });
});

describe("files and environment", () => {
  test("files win over the environment and are re-read on every call", async () => {
    await writeFile(join(dir, "METRICS_USERNAME"), "file_user\n");
    await writeFile(join(dir, "METRICS_PASSWORD"), "first\n");
    const r = createSecretResolver({ config: config(), env: { METRICS_USERNAME: "env_user", METRICS_PASSWORD: "env" } });
    await expect(r.resolve("METRICS", "ws_a")).resolves.toEqual({ username: "file_user", password: "first" });
    await writeFile(join(dir, "METRICS_PASSWORD"), "second");
    await expect(r.resolve("METRICS", "ws_a")).resolves.toEqual({ username: "file_user", password: "second" });
  });

  test("each variable falls back to the environment on its own", async () => {
    await writeFile(join(dir, "SHARED_USERNAME"), "file_user");
    const r = createSecretResolver({ config: config(), env: { SHARED_PASSWORD: "env_pw" } });
    await expect(r.resolve("SHARED", "ws_x")).resolves.toEqual({ username: "file_user", password: "env_pw" });
  });

  test("missing credentials name the variables, not values", async () => {
    const r = createSecretResolver({ config: config(), env: { SHARED_PASSWORD: "hunter2" } });
    await rm(join(dir, "SHARED_USERNAME"), { force: true });
    const err = await rejection(r.resolve("SHARED", "ws_x"));
    expect(err.code).toBe("source_credentials_missing");
    expect(err.detail).toContain("SHARED_USERNAME");
    expect(err.detail).not.toContain("SHARED_PASSWORD");
    expect(err.detail).not.toContain("hunter2");
    expect(err.extra).toEqual({ secretRef: "SHARED", missing: ["SHARED_USERNAME"] });
  });

  test("an unreadable secret file is a coded error naming the file, not a fall-through", async () => {
    const r = createSecretResolver({
      config: config(),
      env: { METRICS_USERNAME: "u", METRICS_PASSWORD: "p" },
      readFile: async () => {
        throw Object.assign(new Error("permission denied"), { code: "EACCES" });
      },
    });
    const err = await rejection(r.resolve("METRICS", "ws_a"));
    expect(err.code).toBe("source_credentials_missing");
    expect(err.detail).toMatch(/METRICS_(USERNAME|PASSWORD) in SOURCE_SECRETS_DIR \(EACCES\)/);
  });

  test("without SOURCE_SECRETS_DIR only the environment is used", async () => {
    const r = createSecretResolver({
      config: { ...config(), SOURCE_SECRETS_DIR: undefined },
      env: { METRICS_USERNAME: "u", METRICS_PASSWORD: "p" },
    });
    await expect(r.resolve("METRICS", "ws_a")).resolves.toEqual({ username: "u", password: "p" });
  });
});

describe("AWS Secrets Manager backend", () => {
  const sm = mockClient(SecretsManagerClient);
  afterEach(() => sm.reset());

  test("resolves <prefix><ref> to {username,password} after files and env, cached for the configured time", async () => {
    sm.on(GetSecretValueCommand, { SecretId: "pulseboard/AWSREF" }).resolves({
      SecretString: JSON.stringify({ username: "aws_user", password: "aws_pw" }),
    });
    let t = 1_000_000;
    const cfg = config({
      SOURCE_SECRET_REFS: "AWSREF:*",
      SOURCE_SECRETS_AWS_PREFIX: "pulseboard/",
      SOURCE_SECRETS_AWS_CACHE_SECONDS: "60",
    });
    const r = createSecretResolverFromConfig(cfg, { env: {}, now: () => t });
    await expect(r.resolve("AWSREF", "ws")).resolves.toEqual({ username: "aws_user", password: "aws_pw" });
    await r.resolve("AWSREF", "ws");
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    t += 61_000;
    await r.resolve("AWSREF", "ws");
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  test("concurrent lookups share one request", async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ username: "a", password: "b" }) });
    const aws = createAwsSecretSource({ prefix: "p/", cacheSeconds: 0, client: new SecretsManagerClient({}) });
    await Promise.all([aws.get("X"), aws.get("X"), aws.get("X")]);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
  });

  test("env values win over AWS (no request made)", async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ username: "a", password: "b" }) });
    const cfg = config({ SOURCE_SECRETS_AWS_PREFIX: "p/" });
    const r = createSecretResolverFromConfig(cfg, { env: { SHARED_USERNAME: "e", SHARED_PASSWORD: "f" } });
    await expect(r.resolve("SHARED", "w")).resolves.toEqual({ username: "e", password: "f" });
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(0);
  });

  test("a missing secret falls through to the missing-credentials error naming the secret id", async () => {
    sm.on(GetSecretValueCommand).rejects(new ResourceNotFoundException({ message: "nope", $metadata: {} }));
    const cfg = config({ SOURCE_SECRETS_AWS_PREFIX: "p/" });
    const r = createSecretResolverFromConfig(cfg, { env: {} });
    const err = await rejection(r.resolve("SHARED", "w"));
    expect(err.code).toBe("source_credentials_missing");
    expect(err.detail).toContain("p/SHARED");
  });

  test("an AWS failure names only the error class; a malformed secret is refused without echoing it", async () => {
    const denied = Object.assign(new Error("User arn:aws:iam::123456789012:user/x is not authorized"), {
      name: "AccessDeniedException",
    });
    sm.on(GetSecretValueCommand).rejectsOnce(denied).resolves({ SecretString: '{"username":"u","pass":"leak"}' });
    const aws = createAwsSecretSource({ prefix: "p/", cacheSeconds: 60, client: new SecretsManagerClient({}) });
    const first = await rejection(aws.get("X"));
    expect(first.detail).toContain("AccessDeniedException");
    expect(first.detail).not.toContain("123456789012");
    const second = await rejection(aws.get("X"));
    expect(second.detail).toContain("username and password");
    expect(second.detail).not.toContain("leak");
  });
});
