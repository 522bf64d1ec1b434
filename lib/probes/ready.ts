import type { Env, Hono } from "hono";
import pg from "pg";
import type { Config } from "../config/parse.ts";
import type { DrainState } from "../lifecycle/drain-state.ts";
import { reasonFromError, withTimeout } from "./reason.ts";

export type CheckResult = { status: "ok" } | { status: "failed"; reason: string };
export type ReadinessStatus = "ready" | "degraded" | "not_ready" | "draining";
export interface ReadinessRecord {
  status: ReadinessStatus;
  checks: { database: CheckResult; identityProvider: CheckResult; aiProvider: CheckResult };
}

type ReadinessConfig = Pick<
  Config,
  | "OIDC_ISSUER"
  | "OIDC_CLIENT_ID"
  | "AI_PROVIDER"
  | "AI_MODEL"
  | "AI_GATEWAY_API_KEY"
  | "AI_COMPAT_BASE_URL"
  | "AI_COMPAT_API_KEY"
  | "READINESS_CHECK_TIMEOUT_MS"
>;

const IDP_CACHE_OK_MS = 60_000;
const IDP_CACHE_FAILED_MS = 5_000;

/** The AI configuration check: names the first missing variable and never calls a model. */
export function checkAiConfig(config: ReadinessConfig): CheckResult {
  if (!config.AI_PROVIDER) return { status: "failed", reason: "AI_PROVIDER" };
  if (!config.AI_MODEL) return { status: "failed", reason: "AI_MODEL" };
  if (config.AI_PROVIDER === "gateway") {
    if (!config.AI_GATEWAY_API_KEY) return { status: "failed", reason: "AI_GATEWAY_API_KEY" };
  } else {
    if (!config.AI_COMPAT_BASE_URL) return { status: "failed", reason: "AI_COMPAT_BASE_URL" };
    if (!config.AI_COMPAT_API_KEY) return { status: "failed", reason: "AI_COMPAT_API_KEY" };
  }
  return { status: "ok" };
}

/** application_name of readiness's own config-store connection (visible in pg_stat_activity). */
export const READINESS_APPLICATION_NAME = "pulseboard-readiness";

/**
 * Readiness of one instance. Only the config store takes it out of rotation; the identity
 * provider and AI configuration are advisory (degraded). The issuer check is cached 60 s on
 * success and 5 s on failure so a probe storm never hammers the identity provider.
 *
 * The database check is flood-proof: concurrent checks share one in-flight `SELECT 1` (a finished one
 * is never reused), and it runs on readiness's own connection, never on the pool, so a pool saturated
 * by real work cannot make an instance look dead, and a probe flood cannot take the pool's slots.
 * Every check is bounded by READINESS_CHECK_TIMEOUT_MS (`TIMEOUT`); a connection that timed out or
 * failed is dropped and the next check opens a fresh one.
 */
export function createReadiness(deps: {
  pool: pg.Pool;
  config: ReadinessConfig;
  drain: DrainState;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  /** Opens readiness's own connection; default: the pool's settings under its own application_name. */
  connect?: () => pg.Client;
}) {
  const fetchFn = deps.fetch ?? globalThis.fetch;
  const now = deps.now ?? Date.now;
  const timeoutMs = deps.config.READINESS_CHECK_TIMEOUT_MS;
  const connect =
    deps.connect ??
    (() =>
      new pg.Client({
        ...(deps.pool.options as pg.ClientConfig),
        application_name: READINESS_APPLICATION_NAME,
        connectionTimeoutMillis: timeoutMs,
      }));
  let idpCache: { result: CheckResult; until: number } | undefined;
  let idpInFlight: Promise<CheckResult> | undefined;
  let dbInFlight: Promise<CheckResult> | undefined;
  let connection: { client: pg.Client; connected: Promise<void> } | null = null;
  let closed = false;
  // While draining, readiness reports the last results it saw instead of touching a store being shut down.
  let lastDatabase: CheckResult = { status: "ok" };
  // Likewise for the identity provider: what the last check reported, including a missing variable.
  let lastIdentityProvider: CheckResult | undefined;

  function drop(client: pg.Client): void {
    if (connection?.client === client) connection = null;
    client.end().catch(() => {});
  }

  async function openedClient(): Promise<{ client: pg.Client; reused: boolean }> {
    const reused = connection !== null;
    if (!connection) {
      const client = connect();
      // A connection lost while idle must not crash the process; the next check opens a new one.
      client.on("error", () => drop(client));
      connection = { client, connected: client.connect().then(() => {}) };
    }
    const { client, connected }: { client: pg.Client; connected: Promise<void> } = connection;
    try {
      await connected;
    } catch (err) {
      drop(client);
      throw err;
    }
    return { client, reused };
  }

  async function selectOne(): Promise<void> {
    const { client, reused } = await openedClient();
    try {
      await client.query("SELECT 1");
    } catch (err) {
      drop(client);
      // A kept connection may have died while idle (a frozen Lambda, a failover): one fresh try.
      if (!reused || closed) throw err;
      const fresh = await openedClient();
      try {
        await fresh.client.query("SELECT 1");
      } catch (err2) {
        drop(fresh.client);
        throw err2;
      }
    }
  }

  async function runDatabaseCheck(): Promise<CheckResult> {
    const attempt = selectOne();
    try {
      await withTimeout(() => attempt, timeoutMs);
      lastDatabase = { status: "ok" };
    } catch (err) {
      // A hung connection is given up: the next check must not queue behind it.
      if (connection) drop(connection.client);
      attempt.catch(() => {});
      lastDatabase = { status: "failed", reason: reasonFromError(err) };
    }
    return lastDatabase;
  }

  /** One `SELECT 1` at a time per process; concurrent callers share it. */
  function checkDatabase(): Promise<CheckResult> {
    if (closed) return Promise.resolve(lastDatabase);
    dbInFlight ??= runDatabaseCheck().finally(() => {
      dbInFlight = undefined;
    });
    return dbInFlight;
  }

  /** Closes readiness's own connection (drain step 4); later checks report the last result. */
  async function close(): Promise<void> {
    closed = true;
    await dbInFlight?.catch(() => {});
    const current = connection;
    connection = null;
    await current?.client.end().catch(() => {});
  }

  async function probeIssuer(issuer: string): Promise<CheckResult> {
    try {
      const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
      const res = await withTimeout((signal) => fetchFn(url, { signal, redirect: "error" }), timeoutMs);
      if (!res.ok) {
        await res.body?.cancel().catch(() => {});
        return { status: "failed", reason: `http_${res.status}` };
      }
      const doc = (await withTimeout(() => res.json(), timeoutMs)) as { issuer?: unknown };
      if (typeof doc?.issuer !== "string") return { status: "failed", reason: "invalid_discovery" };
      return { status: "ok" };
    } catch (err) {
      return { status: "failed", reason: err instanceof SyntaxError ? "invalid_discovery" : reasonFromError(err) };
    }
  }

  /** The identity provider check's configuration part: the first missing variable, or null. */
  function identityProviderConfig(): CheckResult | null {
    if (!deps.config.OIDC_ISSUER) return { status: "failed", reason: "OIDC_ISSUER" };
    if (!deps.config.OIDC_CLIENT_ID) return { status: "failed", reason: "OIDC_CLIENT_ID" };
    return null;
  }

  async function checkIdentityProvider(): Promise<CheckResult> {
    lastIdentityProvider = await identityProviderCheck();
    return lastIdentityProvider;
  }

  async function identityProviderCheck(): Promise<CheckResult> {
    const missing = identityProviderConfig();
    if (missing) return missing;
    const issuer = deps.config.OIDC_ISSUER as string;
    if (idpCache && now() < idpCache.until) return idpCache.result;
    // Concurrent probes share one request.
    idpInFlight ??= probeIssuer(issuer).then((result) => {
      idpCache = { result, until: now() + (result.status === "ok" ? IDP_CACHE_OK_MS : IDP_CACHE_FAILED_MS) };
      idpInFlight = undefined;
      return result;
    });
    return idpInFlight;
  }

  async function check(): Promise<{ httpStatus: 200 | 503; body: ReadinessRecord }> {
    if (deps.drain.draining) return { httpStatus: 503, body: await drainingRecord() };
    const [database, identityProvider] = await Promise.all([checkDatabase(), checkIdentityProvider()]);
    const aiProvider = checkAiConfig(deps.config);
    // The drain flag may have been set while the checks ran; it wins from the instant it is set.
    if (deps.drain.draining) return { httpStatus: 503, body: { status: "draining", checks: { database, identityProvider, aiProvider } } };
    const checks = { database, identityProvider, aiProvider };
    if (database.status === "failed") return { httpStatus: 503, body: { status: "not_ready", checks } };
    const degraded = identityProvider.status === "failed" || aiProvider.status === "failed";
    return { httpStatus: 200, body: { status: degraded ? "degraded" : "ready", checks } };
  }

  async function drainingRecord(): Promise<ReadinessRecord> {
    return {
      status: "draining",
      checks: {
        database: lastDatabase,
        // What it reported before the drain; never checked yet: its configuration alone (no request now).
        identityProvider: lastIdentityProvider ?? idpCache?.result ?? identityProviderConfig() ?? { status: "ok" },
        aiProvider: checkAiConfig(deps.config),
      },
    };
  }

  return { check, checkDatabase, checkIdentityProvider, close };
}

export type Readiness = ReturnType<typeof createReadiness>;

/** GET /api/ready: 200 for ready/degraded, 503 for not_ready/draining; never cached. */
export function registerReady<E extends Env>(app: Hono<E>, readiness: Readiness): void {
  app.get("/api/ready", async (c) => {
    const { httpStatus, body } = await readiness.check();
    return c.body(JSON.stringify(body), httpStatus, { "content-type": "application/json", "cache-control": "no-store" });
  });
}
