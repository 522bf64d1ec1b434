// Entry point of the handlers: the Lambda container image runs this behind the Lambda Web Adapter,
// which forwards requests to PORT (8080); outside Lambda it is a plain HTTP server.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import { buildServiceDeps } from "../lib/service/build-deps.ts";
import { loadConfigOrExit } from "../lib/service/load-config.ts";
import { buildQueryServices } from "../lib/service/query-services.ts";
import { createApp } from "./app.ts";

const config = loadConfigOrExit();
const deps = buildServiceDeps(config);
const { guard, queryRunner } = await buildQueryServices(config, deps.metrics);
// The browser bundle sits beside the server bundle (dist/web next to dist/handlers), or in dist/web when
// running from source after `npm run build -- --only web` (what `npm run start:handlers` does).
const webAssetsDir = [new URL("../web/", import.meta.url), new URL("../dist/web/", import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((dir) => existsSync(`${dir}manifest.json`));
const app = createApp({ ...deps, guard, queryRunner, webAssetsDir });
const server = serve({ fetch: app.fetch, port: config.PORT }, (info) => {
  deps.log.info("handlers listening", { port: info.port });
});

// The adapter (or any orchestrator) stops the process with SIGTERM: stop accepting, let source and
// config-store clients finish, then exit.
process.once("SIGTERM", () => {
  server.close();
  void Promise.allSettled([queryRunner.closeAll(), deps.pool.end()]).finally(() => process.exit(0));
});
