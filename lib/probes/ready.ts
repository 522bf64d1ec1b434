import type { Hono } from "hono";
import type pg from "pg";
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

/**
 * Readiness of one instance. Only the config store takes it out of rotation; the identity
 * provider and AI configuration are advisory (degraded). The issuer check is cached 60 s on
 * success and 5 s on failure so a probe storm never hammers the identity provider.
 */
export function createReadiness(deps: {
  pool: pg.Pool;
  config: ReadinessConfig;
  drain: DrainState;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
}) {
  const fetchFn = deps.fetch ?? globalThis.fetch;
  const now = deps.now ?? Date.now;
  const timeoutMs = deps.config.READINESS_CHECK_TIMEOUT_MS;
  let idpCache: { result: CheckResult; until: number } | undefined;
  let idpInFlight: Promise<CheckResult> | undefined;
  // While draining, readiness reports the last results it saw instead of touching a store being shut down.
  let lastDatabase: CheckResult = { status: "ok" };

  async function checkDatabase(): Promise<CheckResult> {
    try {
      await withTimeout(() => deps.pool.query("SELECT 1"), timeoutMs);
      lastDatabase = { status: "ok" };
    } catch (err) {
      lastDatabase = { status: "failed", reason: reasonFromError(err) };
    }
    return lastDatabase;
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

  async function checkIdentityProvider(): Promise<CheckResult> {
    const issuer = deps.config.OIDC_ISSUER;
    if (!issuer) return { status: "failed", reason: "OIDC_ISSUER" };
    if (!deps.config.OIDC_CLIENT_ID) return { status: "failed", reason: "OIDC_CLIENT_ID" };
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
        identityProvider: idpCache?.result ?? { status: "ok" },
        aiProvider: checkAiConfig(deps.config),
      },
    };
  }

  return { check, checkDatabase, checkIdentityProvider };
}

export type Readiness = ReturnType<typeof createReadiness>;

/** GET /api/ready: 200 for ready/degraded, 503 for not_ready/draining; never cached. */
export function registerReady(app: Hono<any>, readiness: Readiness): void {
  app.get("/api/ready", async (c) => {
    const { httpStatus, body } = await readiness.check();
    return c.body(JSON.stringify(body), httpStatus, { "content-type": "application/json", "cache-control": "no-store" });
  });
}
