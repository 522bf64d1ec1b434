import type { Context, Env, Hono } from "hono";
import type { Registry } from "prom-client";
import { AppError } from "../http/errors.ts";
import { renderMetrics } from "../metrics/text.ts";
import type { GateRequest, MetricsGate } from "./gate.ts";

/** The TCP peer of a request served by @hono/node-server (`c.env.incoming`); undefined elsewhere. */
export function socketAddressOf(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

/** The gate's view of a Hono request. */
export function gateRequestOf(c: Context): GateRequest {
  return {
    authorization: c.req.header("authorization"),
    xForwardedFor: c.req.header("x-forwarded-for"),
    xRealIp: c.req.header("x-real-ip"),
    socketAddress: socketAddressOf(c),
  };
}

/**
 * GET /api/metrics behind the gate. A scrape reads in-memory state only: no query, no dependency.
 * Answers with prom-client's own content type for the text format it writes.
 */
export function registerMetrics<E extends Env>(app: Hono<E>, deps: { gate: MetricsGate; registry: Registry }): void {
  app.get("/api/metrics", async (c) => {
    const verdict = deps.gate.check(gateRequestOf(c));
    if (!verdict.ok) {
      if (verdict.status === 404) throw new AppError("not_found", "Not found.");
      if (verdict.status === 401) {
        throw new AppError("unauthenticated", "A valid bearer token is required.", {}, { "WWW-Authenticate": "Bearer" });
      }
      throw new AppError("forbidden", "This address may not read metrics.");
    }
    const body = await renderMetrics(deps.registry);
    return new Response(body, {
      status: 200,
      headers: { "content-type": deps.registry.contentType, "cache-control": "no-store" },
    });
  });
}
