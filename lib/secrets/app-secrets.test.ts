import { GetSecretValueCommand, ResourceNotFoundException, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, describe, expect, test } from "vitest";
import { createSessionTokens, sessionKeysOf } from "../auth/session.ts";
import { parseConfig } from "../config/parse.ts";
import { createManualTimers } from "../lifecycle/manual-timers.ts";
import { createLogger } from "../log/logger.ts";
import { AppSecretError, parseAppSecretRefs } from "./app-secrets.ts";
import { resolveAppSecrets } from "./boot.ts";

const sm = mockClient(SecretsManagerClient);
afterEach(() => sm.reset());

const SESSION_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:Pulseboard/session-AbCdEf";
const DB_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:Pulseboard/db-AbCdEf";
const KEY_A = "a".repeat(40);
/** What the SDK throws when the role may not read a secret (the class is not exported; its name is what counts). */
const accessDenied = (message: string) => Object.assign(new Error(message), { name: "AccessDeniedException" });
const KEY_B = "b".repeat(40);

/** Secrets Manager as the test sets it: values by secret id and stage. */
function serve(values: Record<string, { AWSCURRENT: string; AWSPREVIOUS?: string }>) {
  sm.on(GetSecretValueCommand).callsFake((input: { SecretId: string; VersionStage: "AWSCURRENT" | "AWSPREVIOUS" }) => {
    const secret = values[input.SecretId];
    const value = secret?.[input.VersionStage];
    if (value === undefined) {
      throw new ResourceNotFoundException({ message: `Secrets Manager can't find ${input.SecretId}`, $metadata: {} });
    }
    return { SecretString: value };
  });
}

function logs() {
  const lines: Record<string, unknown>[] = [];
  return { lines, log: createLogger({ write: (l) => lines.push(JSON.parse(l)) }) };
}

const BASE_ENV = {
  NODE_ENV: "production",
  DATABASE_URL: "postgres://pulseboard_app@db.internal:5432/pulseboard?sslmode=verify-full",
  SOURCE_SECRET_REFS: "METRICS_RO:*",
  SOURCE_SECRET_HOSTS: "METRICS_RO:*.metrics.internal",
  APP_SECRETS_AWS: `SESSION_SECRET=${SESSION_ARN};PGPASSWORD=${DB_ARN}#password`,
  APP_SECRETS_REFRESH_SECONDS: "60",
};

describe("APP_SECRETS_AWS entries", () => {
  test("variables, ARNs (with = in the name) and JSON fields", () => {
    expect(parseAppSecretRefs(` SESSION_SECRET=${SESSION_ARN} ; PGPASSWORD=${DB_ARN}#password;;X=name=with=eq`)).toEqual([
      { variable: "SESSION_SECRET", secretId: SESSION_ARN, field: undefined },
      { variable: "PGPASSWORD", secretId: DB_ARN, field: "password" },
      { variable: "X", secretId: "name=with=eq", field: undefined },
    ]);
  });

  test.each([["lower=arn"], ["SESSION_SECRET"], ["SESSION_SECRET="], ["PGPASSWORD=arn#"], ["A=x;A=y"]])(
    "%s is refused naming the entry",
    (text) => {
      expect(() => parseAppSecretRefs(text)).toThrow(/APP_SECRETS_AWS/);
    },
  );
});

describe("secrets from Secrets Manager", () => {
  test("read before the config is parsed: current values, the previous session key, a JSON field into PGPASSWORD", async () => {
    serve({
      [SESSION_ARN]: { AWSCURRENT: KEY_B, AWSPREVIOUS: KEY_A },
      [DB_ARN]: { AWSCURRENT: JSON.stringify({ username: "pulseboard_app", password: "pw-1" }) },
    });
    const processEnv: Record<string, string | undefined> = {};
    const timers = createManualTimers();
    const boot = await resolveAppSecrets(BASE_ENV, { timers: timers.timers, log: logs().log, processEnv });
    const { config } = parseConfig(boot.env);
    expect(config.SESSION_SECRET).toBe(KEY_B);
    expect(config.SESSION_SECRET_PREVIOUS).toBe(KEY_A);
    expect(processEnv.PGPASSWORD).toBe("pw-1");
    // Each read asks for the stage it means; only the variables with a rotation window ask for AWSPREVIOUS.
    const asked = sm.commandCalls(GetSecretValueCommand).map((c) => `${c.args[0].input.SecretId} ${c.args[0].input.VersionStage}`);
    expect(asked.sort()).toEqual([`${DB_ARN} AWSCURRENT`, `${SESSION_ARN} AWSCURRENT`, `${SESSION_ARN} AWSPREVIOUS`].sort());
  });

  test("a rotation reaches the running process on the next refresh; sessions of the old key verify until it is dropped", async () => {
    const store = {
      [SESSION_ARN]: { AWSCURRENT: KEY_A } as { AWSCURRENT: string; AWSPREVIOUS?: string },
      [DB_ARN]: { AWSCURRENT: JSON.stringify({ password: "pw-1" }) },
    };
    serve(store);
    const processEnv: Record<string, string | undefined> = {};
    const timers = createManualTimers();
    const { lines, log } = logs();
    const boot = await resolveAppSecrets(BASE_ENV, { timers: timers.timers, log, processEnv });
    const { config } = parseConfig(boot.env);
    const refresher = boot.keepFresh(config)!;
    const sessions = createSessionTokens({ keys: sessionKeysOf(config), ttlSeconds: 3600 });
    const oldToken = await sessions.mint({ sub: "u1", groups: [] });
    expect(config.SESSION_SECRET_PREVIOUS).toBeUndefined();

    // Secrets Manager rotates: B is current, A previous; the password changes too.
    store[SESSION_ARN] = { AWSCURRENT: KEY_B, AWSPREVIOUS: KEY_A };
    store[DB_ARN] = { AWSCURRENT: JSON.stringify({ password: "pw-2" }) };
    timers.advance(60_000);
    await refresher.refresh();
    expect(config.SESSION_SECRET).toBe(KEY_B);
    expect(processEnv.PGPASSWORD).toBe("pw-2");
    expect(lines.find((l) => l.msg === "secrets refreshed")).toMatchObject({
      changed: expect.arrayContaining(["SESSION_SECRET", "SESSION_SECRET_PREVIOUS", "PGPASSWORD"]),
    });
    expect(JSON.stringify(lines)).not.toContain("pw-2");
    expect(JSON.stringify(lines)).not.toContain(KEY_B);

    // Old sessions still verify; new ones are signed with the current key only.
    expect((await sessions.verify(oldToken))?.sub).toBe("u1");
    const newToken = await sessions.mint({ sub: "u2", groups: [] });
    expect((await createSessionTokens({ secret: KEY_B, ttlSeconds: 3600 }).verify(newToken))?.sub).toBe("u2");
    expect(await createSessionTokens({ secret: KEY_A, ttlSeconds: 3600 }).verify(newToken)).toBeNull();

    // The rotation ends (AWSPREVIOUS now names another key): the old key's sessions stop verifying.
    store[SESSION_ARN] = { AWSCURRENT: KEY_B };
    await refresher.refresh();
    expect(config.SESSION_SECRET_PREVIOUS).toBeUndefined();
    expect(await sessions.verify(oldToken)).toBeNull();
    expect((await sessions.verify(newToken))?.sub).toBe("u2");
    refresher.stop();
  });

  test("the refresh runs on the schedule and keeps the last values when Secrets Manager fails", async () => {
    let fail = false;
    sm.on(GetSecretValueCommand).callsFake((input: { SecretId: string; VersionStage: string }) => {
      if (fail) throw accessDenied(`User is not authorized to access ${input.SecretId}`);
      if (input.VersionStage === "AWSPREVIOUS") throw new ResourceNotFoundException({ message: "none", $metadata: {} });
      return { SecretString: input.SecretId === DB_ARN ? JSON.stringify({ password: "pw-1" }) : KEY_A };
    });
    const timers = createManualTimers();
    const { lines, log } = logs();
    const boot = await resolveAppSecrets(BASE_ENV, { timers: timers.timers, log, processEnv: {} });
    const { config } = parseConfig(boot.env);
    boot.keepFresh(config);
    const calls = () => sm.commandCalls(GetSecretValueCommand).length;
    const before = calls();
    // A read sends its requests once the SDK's chunk has loaded (lib/secrets/sdk.ts), a few microtasks later.
    const settle = () => new Promise((r) => setImmediate(r));
    timers.advance(59_999);
    await settle();
    expect(calls()).toBe(before);
    fail = true;
    timers.advance(1);
    await settle();
    expect(calls()).toBeGreaterThan(before);
    expect(config.SESSION_SECRET).toBe(KEY_A);
    const warn = lines.find((l) => l.msg === "secrets refresh failed");
    expect(warn).toMatchObject({ reason: "AccessDeniedException" });
    expect(JSON.stringify(lines)).not.toContain("arn:aws");
  });

  test("a secret that cannot be read at start is an error naming the variable, never the ARN or the SDK's message", async () => {
    sm.on(GetSecretValueCommand).rejects(accessDenied(`User arn:aws:iam::123456789012:role/x is not authorized on ${SESSION_ARN}`));
    const err = await resolveAppSecrets(BASE_ENV, { timers: createManualTimers().timers, log: logs().log, processEnv: {} }).catch((e) => e);
    expect(err).toBeInstanceOf(AppSecretError);
    expect(err.variable).toMatch(/^(SESSION_SECRET|PGPASSWORD)$/);
    expect(err.reason).toBe("AccessDeniedException");
    expect(err.message).not.toContain("arn:");
  });

  test.each([
    ["not JSON", "plain-text", "not_json"],
    ["no such field", JSON.stringify({ username: "u" }), "field_missing"],
  ])("a JSON field secret that is %s is refused", async (_name, value, reason) => {
    serve({ [SESSION_ARN]: { AWSCURRENT: KEY_A }, [DB_ARN]: { AWSCURRENT: value } });
    const err = await resolveAppSecrets(BASE_ENV, { timers: createManualTimers().timers, log: logs().log, processEnv: {} }).catch((e) => e);
    expect(err).toMatchObject({ variable: "PGPASSWORD", reason });
  });

  test("a variable both listed and set in the environment is refused: no secret as plain env in the cloud", async () => {
    serve({ [SESSION_ARN]: { AWSCURRENT: KEY_A }, [DB_ARN]: { AWSCURRENT: JSON.stringify({ password: "p" }) } });
    await expect(
      resolveAppSecrets({ ...BASE_ENV, SESSION_SECRET: KEY_B }, { timers: createManualTimers().timers, log: logs().log }),
    ).rejects.toThrow(/SESSION_SECRET, which the environment also sets/);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(0);
  });

  test("without APP_SECRETS_AWS nothing is read and the environment is used as it is", async () => {
    const env = { DATABASE_URL: "postgres://x@h/db", SESSION_SECRET: KEY_A };
    const boot = await resolveAppSecrets(env, { timers: createManualTimers().timers, log: logs().log });
    expect(boot.env).toBe(env);
    expect(boot.keepFresh(parseConfig(env).config)).toBeNull();
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(0);
  });
});

describe("session key rotation", () => {
  test("verification tries the previous key only for a signature made with another key; signing uses the current", async () => {
    const keys = { current: KEY_B, previous: [KEY_A] };
    const rotating = createSessionTokens({ keys: () => keys, ttlSeconds: 3600 });
    const byA = await createSessionTokens({ secret: KEY_A, ttlSeconds: 3600 }).mint({ sub: "a", groups: [] });
    const byC = await createSessionTokens({ secret: "c".repeat(40), ttlSeconds: 3600 }).mint({ sub: "c", groups: [] });
    expect((await rotating.verify(byA))?.sub).toBe("a");
    expect(await rotating.verify(byC)).toBeNull();
    // An expired token signed with the previous key stays refused.
    let t = Date.now();
    const clocked = createSessionTokens({ keys: () => keys, ttlSeconds: 60, now: () => t });
    const old = await createSessionTokens({ secret: KEY_A, ttlSeconds: 60, now: () => t }).mint({ sub: "a", groups: [] });
    t += 61_000;
    expect(await clocked.verify(old)).toBeNull();
  });
});

describe("fields of one secret", () => {
  test("a rotating user name and password come from one read of the same version", async () => {
    const APP_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:Pulseboard/app-AbCdEf";
    let version = 1;
    sm.on(GetSecretValueCommand).callsFake((input: { SecretId: string; VersionStage: string }) => {
      if (input.VersionStage === "AWSPREVIOUS") throw new ResourceNotFoundException({ message: "none", $metadata: {} });
      if (input.SecretId !== APP_ARN) return { SecretString: KEY_A };
      // Every read moves the rotation on: two reads would pair one version's user with another's password.
      const v = version++;
      return { SecretString: JSON.stringify({ username: v % 2 ? "app" : "app_clone", password: `pw-${v}` }) };
    });
    const processEnv: Record<string, string | undefined> = {};
    await resolveAppSecrets(
      { ...BASE_ENV, APP_SECRETS_AWS: `SESSION_SECRET=${SESSION_ARN};PGUSER=${APP_ARN}#username;PGPASSWORD=${APP_ARN}#password` },
      { timers: createManualTimers().timers, log: logs().log, processEnv },
    );
    expect(processEnv).toEqual({ PGUSER: "app", PGPASSWORD: "pw-1" });
    expect(sm.commandCalls(GetSecretValueCommand, { SecretId: APP_ARN })).toHaveLength(1);
  });
});
