import { serve } from "@hono/node-server";
import type { QueryRunner } from "../lib/query/runner.ts";
import type { ServiceDeps } from "../lib/service/deps.ts";
import type { Guard } from "../lib/sql-guard/index.ts";
import { createApp } from "../handlers/app.ts";
import { createStreamHost } from "../stream-host/app.ts";

/** Paths the stream host owns (DESIGN section 1); everything else is the handlers'. */
export function isStreamHostPath(path: string): boolean {
  return path === "/api/metrics" || /^\/api\/dashboards\/[^/]+\/stream$/.test(path);
}

/** Serves the handlers and the stream host on one port, as CloudFront/ALB path rules do in the cloud. */
export async function runAllInOne(opts: {
  deps: ServiceDeps;
  guard: Guard;
  queryRunner: QueryRunner;
  demo?: { workspaceId: string; sourceId: string; dashboardId: string };
  say: (line: string) => void;
  cleanups: (() => Promise<void>)[];
  notes?: string[];
}): Promise<void> {
  const { deps, say, cleanups } = opts;
  const { config } = deps;
  const app = createApp({ ...deps, guard: opts.guard, queryRunner: opts.queryRunner });
  const host = createStreamHost(deps);

  const server = serve(
    {
      fetch: (req, env) => (isStreamHostPath(new URL(req.url).pathname) ? host.app.fetch(req, env) : app.fetch(req, env)),
      port: config.PORT,
    },
    (info) => {
      say(`Pulseboard is running: http://localhost:${info.port}`);
      if (opts.demo) say(`  demo dashboard: http://localhost:${info.port}/dashboards/${opts.demo.dashboardId}`);
      for (const note of opts.notes ?? []) say(note);
      say("  Ctrl-C drains and stops (embedded PostgreSQL included).");
    },
  );

  let stopping = false;
  const stop = async () => {
    if (stopping) process.exit(0);
    stopping = true;
    deps.drain.start();
    server.close();
    await deps.pool.end().catch(() => {});
    for (const c of cleanups) await c().catch(() => {});
    process.exit(0);
  };
  process.on("SIGINT", () => void stop());
  process.on("SIGTERM", () => void stop());
}
