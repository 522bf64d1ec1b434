import type { Env, Hono } from "hono";

/** Build identity: version from the build manifest (package.json, injected at build) unless APP_VERSION. */
export interface BuildInfo {
  version: string;
  commit: string;
}

declare const __PULSEBOARD_VERSION__: string | undefined;

/** The version compiled in by esbuild, else the package.json version read at start-up. */
export function buildVersion(readManifest: () => string): string {
  return typeof __PULSEBOARD_VERSION__ === "string" ? __PULSEBOARD_VERSION__ : readManifest();
}

export function buildInfo(config: { APP_VERSION?: string; GIT_COMMIT?: string }, manifestVersion: string): BuildInfo {
  return { version: config.APP_VERSION ?? manifestVersion, commit: config.GIT_COMMIT ?? "unknown" };
}

/** GET /api/health: liveness. No I/O, no dependency: an outage must never restart healthy instances. */
export function registerHealth<E extends Env>(app: Hono<E>, info: BuildInfo): void {
  const body = JSON.stringify({ status: "ok", version: info.version, commit: info.commit });
  // c.body (not a bare Response) keeps headers set by earlier middleware, such as X-Request-Id.
  app.get("/api/health", (c) => c.body(body, 200, { "content-type": "application/json", "cache-control": "no-store" }));
}
