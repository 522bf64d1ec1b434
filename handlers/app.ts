import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { createTokenAuthenticator } from "../lib/api-tokens/authenticate.ts";
import { createAuth } from "../lib/auth/create-auth.ts";
import type { RevocationSet } from "../lib/auth/revocations.ts";
import type { SessionTokens } from "../lib/auth/session.ts";
import { rejectRefusedInput } from "../lib/http/input.ts";
import { accessLog } from "../lib/log/access.ts";
import { onError, problem } from "../lib/http/problem.ts";
import { createMetricsGate } from "../lib/metrics-gate/gate.ts";
import { registerMetrics } from "../lib/metrics-gate/route.ts";
import { registerHealth } from "../lib/probes/health.ts";
import { registerReady } from "../lib/probes/ready.ts";
import type { AppServices, ServiceDeps } from "../lib/service/deps.ts";
import { configStoreFault } from "../lib/store/faults.ts";
import { type OidcLogin, oidcLoginFromConfig } from "../lib/oidc/login.ts";
import { getWorkspace, isAdminOfAnyWorkspace } from "../lib/workspaces/store.ts";
import { requireOriginSecret } from "./origin-guard.ts";
import { registerPages } from "./pages/index.ts";
import { type RouteDeps, registerRoutes } from "./routes/index.ts";

/**
 * What createApp is given: the process's service deps and the services built once from them
 * (lib/service/query-services.ts buildAppServices; tests through handlers/testing/app-deps.ts).
 */
export type AppDeps = ServiceDeps &
  AppServices & {
    /** Session tokens; built from SESSION_SECRET / SESSION_TTL_SECONDS when omitted. */
    sessions?: SessionTokens;
    /**
     * Revoked sessions, kept fresh by the process's config-store listener (handlers/main.ts builds it with
     * listenForRevocations). When omitted the app sees only its own revocations (tests).
     */
    revocations?: RevocationSet;
    /** The OIDC relying party; built from the OIDC_* config when omitted; null disables sign-in. */
    oidc?: OidcLogin | null;
    /** Folder of the built browser bundle (web/build.ts buildWebAssets' outdir), served at /assets/*. */
    webAssetsDir?: string;
  } & Pick<RouteDeps, "refreshCatalog" | "variableOptions">;

/** The stateless handlers app: probes, JSON API, auth, AI routes and pages. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.use(requestId());
  // One access line per request (lib/log/access.ts): the route's pattern, status, duration, request id, caller kind.
  app.use(accessLog({ log: deps.log }));
  app.onError(onError((line) => deps.log.error(String(line.msg), line), configStoreFault));
  // Before everything, probes included: only the CDN knows the origin secret (docs/infra.md).
  // Read on every request: a rotation (lib/secrets/boot.ts) replaces the values in the config.
  const { config } = deps;
  const originSecrets = () => [config.ORIGIN_VERIFY_SECRET, config.ORIGIN_VERIFY_SECRET_PREVIOUS].filter((v): v is string => Boolean(v));
  if (config.ORIGIN_VERIFY_SECRET) app.use(requireOriginSecret(originSecrets));
  // Before every route: NUL, unpaired surrogates and runaway nesting are a 400 naming the field, never a
  // database error (docs/api.md, "Input rules").
  app.use(rejectRefusedInput());
  // An unknown API path is a problem+json 404 with the request id, like every other API error.
  app.notFound((c) => (c.req.path.startsWith("/api/") ? problem(c, "not_found", "No such route.") : c.text("404 Not Found", 404)));

  registerHealth(app, deps.build);
  registerReady(app, deps.readiness);
  // The handlers' own counters (model requests and tokens, guard refusals of saves, preview queries) behind the
  // same gate as the stream host's, for deployments that run this image as a scrapeable container.
  registerMetrics(app, {
    gate: createMetricsGate({ token: () => deps.config.METRICS_TOKEN, cidrs: deps.config.metricsAllowedCidrs }),
    registry: deps.metrics.registry,
  });

  // The SQL parser loads while the listener opens (lib/service/query-services.ts): every request after the
  // probes and the scrape waits for it, so no save, preview or generation reaches the guard before it can answer.
  let parserLoaded = false;
  deps.guardReady.then(
    () => {
      parserLoaded = true;
    },
    () => {},
  );
  app.use((_c, next) => (parserLoaded ? next() : deps.guardReady.then(next)));

  // auth.requireSession / auth.requireRole(role, resolver) / auth.rejectCrossSite guard every API route below.
  const auth = createAuth({
    ...deps,
    findWorkspace: (id) => getWorkspace(deps.pool, id),
    // API tokens (Authorization: Bearer) on every route that takes a session: lib/api-tokens.
    tokens: (isRevoked) =>
      createTokenAuthenticator({ pool: deps.pool, ratePerMinute: () => config.API_TOKEN_RATE_PER_MINUTE, isRevoked, now: deps.now }),
  });
  const oidc = deps.oidc !== undefined ? deps.oidc : oidcLoginFromConfig(deps.config, { fetch: deps.fetch, now: deps.now });
  // Pages first: their CSP middleware then covers every HTML response registered after it.
  registerPages(app, {
    config: deps.config,
    auth,
    webAssetsDir: deps.webAssetsDir,
    // Only decides whether the Tokens and Audit entries show: a config store that does not answer hides them
    // rather than failing every page (the pages' data calls report the outage themselves).
    isWorkspaceAdmin: (user) => isAdminOfAnyWorkspace(deps.pool, user).catch(() => false),
  });
  // Every /api route (one folder per resource under routes/) and /api/openapi.json, generated from their zod schemas.
  registerRoutes(app, deps, auth, oidc);

  return app;
}
