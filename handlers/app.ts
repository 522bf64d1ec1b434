import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { onError } from "../lib/http/problem.ts";
import { registerHealth } from "../lib/probes/health.ts";
import { registerReady } from "../lib/probes/ready.ts";
import type { ServiceDeps } from "../lib/service/deps.ts";

export type AppDeps = ServiceDeps;

/** The stateless handlers app: probes, JSON API, auth, AI routes and pages. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.use(requestId());
  app.onError(onError((line) => deps.log.error(String(line.msg), line)));

  registerHealth(app, deps.build);
  registerReady(app, deps.readiness);

  return app;
}
