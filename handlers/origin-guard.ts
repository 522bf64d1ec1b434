import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { problem } from "../lib/http/problem.ts";

/** The header CloudFront adds to every request it sends to the handlers' origin (infra/cdk/edge.ts). */
export const ORIGIN_VERIFY_HEADER = "x-origin-verify";

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/**
 * Refuses every request (probes included) that does not carry the CDN's origin secret, so the function URL
 * cannot be used around CloudFront (its WAF, its X-Forwarded-For hop, its flood absorption). `accepted`
 * returns the values valid right now: the current secret, and the previous one while a rotation is under
 * way. Compared in constant time over digests, so neither the value nor its length leaks. The Lambda Web
 * Adapter's own readiness check reaches /api/health on a loopback port of its own (HEALTH_CHECK_PORT),
 * outside this app, so it never needs the header.
 */
export function requireOriginSecret(accepted: () => readonly string[]): MiddlewareHandler {
  return async (c, next) => {
    const given = c.req.header(ORIGIN_VERIFY_HEADER);
    if (given !== undefined) {
      const g = digest(given);
      let ok = false;
      // Every candidate is compared, so the time taken does not say which one matched.
      for (const value of accepted()) if (value && timingSafeEqual(g, digest(value))) ok = true;
      if (ok) return next();
    }
    return problem(c, "forbidden", "Requests reach this service through its CDN only.");
  };
}
