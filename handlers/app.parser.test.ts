// The handlers open their listener while the SQL parser loads (lib/service/query-services.ts): the probes and
// the scrape answer at once, every other request waits until the parser has loaded, and fails with the app's
// generic 500 if it cannot load (the entry point then exits; infra/build.test.ts).
import { describe, expect, test } from "vitest";
import { parseConfig } from "../lib/config/parse.ts";
import { createLogger } from "../lib/log/logger.ts";
import { createGuard } from "../lib/sql-guard/index.ts";
import { createApp } from "./app.ts";
import { testAppDeps } from "./testing/app-deps.ts";

function gate() {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Lets every pending promise reaction and I/O callback run a few times over. */
async function ticks(n = 5) {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

function appWith(guardReady: Promise<void>) {
  // Nothing here reaches the config store: a closed port stands in for it.
  const { config } = parseConfig({
    DATABASE_URL: "postgres://pulseboard@127.0.0.1:1/none",
    SESSION_SECRET: "parser-load-secret-0123456789abcdef",
  });
  const deps = testAppDeps(config, { log: createLogger({ write: () => {} }), guard: createGuard({}), guardReady });
  return { app: createApp({ ...deps, oidc: null }), pool: deps.pool };
}

describe("requests while the SQL parser loads", () => {
  test("the liveness probe answers at once; an API request waits for the parser, then answers", async () => {
    const parser = gate();
    const { app, pool } = appWith(parser.promise);
    expect((await app.request("/api/health")).status).toBe(200);

    let answered: Response | undefined;
    const me = Promise.resolve(app.request("/api/me")).then((res) => {
      answered = res;
    });
    await ticks();
    expect(answered).toBeUndefined();

    parser.open();
    await me;
    expect(answered?.status).toBe(401);
    // Once loaded, requests no longer wait.
    expect((await app.request("/api/me")).status).toBe(401);
    await pool.end();
  });

  test("a parser that cannot load gives API requests the generic 500, never a guard verdict", async () => {
    const parser = gate();
    const { app, pool } = appWith(parser.promise);
    parser.promise.catch(() => {});
    const me = app.request("/api/me");
    parser.fail(new Error("libpg-query.wasm: ENOENT"));
    const res = await me;
    expect(res.status).toBe(500);
    const body = await res.text();
    expect(body).toContain("internal");
    expect(body).not.toContain("ENOENT");
    expect((await app.request("/api/health")).status).toBe(200);
    await pool.end();
  });
});
