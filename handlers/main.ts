// Entry point of the handlers: the Lambda container image runs this behind the Lambda Web Adapter,
// which forwards requests to PORT (8080); outside Lambda it is a plain HTTP server.
import { serve } from "@hono/node-server";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { createApp } from "./app.ts";

const config = loadConfigOrExit();
const deps = buildServiceDeps(config);
const app = createApp(deps);
const server = serve({ fetch: app.fetch, port: config.PORT }, (info) => {
  deps.log.info("handlers listening", { port: info.port });
});

// Lambda freezes idle handlers and the adapter stops them with SIGTERM; close the pool so connections do not linger.
process.once("SIGTERM", () => {
  server.close();
  void deps.pool.end().finally(() => process.exit(0));
});
