import { createHash } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { EARLY_STREAM_SCRIPT } from "../live/early-stream.ts";

/** The one inline script pages may carry, by its hash: the live page's early stream (lib/live/early-stream.ts). */
export const EARLY_STREAM_HASH = `'sha256-${createHash("sha256").update(EARLY_STREAM_SCRIPT).digest("base64")}'`;

/**
 * The page policy. Pages load only same-origin scripts and stylesheets (the esbuild bundle under
 * /assets/) and one inline script named by its hash (the live page's early stream, a constant text); the
 * policy never allows inline script in general, nor inline style.
 */
export const CSP_POLICY = [
  "default-src 'self'",
  `script-src 'self' ${EARLY_STREAM_HASH}`,
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

/** The header that carries the policy: enforcing, or report-only when CSP_REPORT_ONLY is true. */
export function cspHeaderName(reportOnly: boolean): "Content-Security-Policy" | "Content-Security-Policy-Report-Only" {
  return reportOnly ? "Content-Security-Policy-Report-Only" : "Content-Security-Policy";
}

/**
 * Adds the CSP (and two companion headers) to every HTML response that passes through, whoever
 * rendered it, so an error page another route returns is covered too. JSON and assets are left alone.
 */
export function csp(opts: { reportOnly: boolean }): MiddlewareHandler {
  const name = cspHeaderName(opts.reportOnly);
  return async (c, next) => {
    await next();
    const type = c.res.headers.get("content-type") ?? "";
    if (!type.toLowerCase().startsWith("text/html")) return;
    // Responses built with `new Response()` may have immutable headers; copy them into a fresh one.
    let res = c.res;
    try {
      res.headers.set(name, CSP_POLICY);
    } catch {
      res = new Response(res.body, res);
      res.headers.set(name, CSP_POLICY);
      c.res = res;
    }
    res.headers.set("X-Content-Type-Options", "nosniff");
    res.headers.set("Referrer-Policy", "same-origin");
    if (!res.headers.has("X-Frame-Options")) res.headers.set("X-Frame-Options", "DENY");
  };
}
