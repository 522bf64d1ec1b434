import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hono } from "hono";
import type pg from "pg";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Config, parseConfig } from "../../../lib/config/parse.ts";
import { type DevIdentityProvider, devIdpEnv, startDevIdentityProvider } from "../../../lib/dev-idp/index.ts";
import { type CookieJar, signInThroughDevIdp } from "../../../lib/dev-idp/testing/sign-in.ts";
import { createManualTimers } from "../../../lib/lifecycle/manual-timers.ts";
import { createLogger } from "../../../lib/log/logger.ts";
import { createMetrics } from "../../../lib/metrics/metrics.ts";
import { type QueryRunner, createQueryRunner } from "../../../lib/query/runner.ts";
import { type MetricsFixture, createMetricsFixture } from "../../../lib/query/testing/metrics-db.ts";
import { createSecretResolverFromConfig } from "../../../lib/secrets/index.ts";
import { buildServiceDeps } from "../../../lib/service/build-deps.ts";
import { testAppDeps } from "../../testing/app-deps.ts";
import { createGuard, intervalFor, loadGuardParser } from "../../../lib/sql-guard/index.ts";
import { createConfigStorePool } from "../../../lib/store/pool.ts";
import { createDatabase } from "../../../lib/testing/pg.ts";
import { createStreamHost } from "../../../stream-host/app.ts";
import { webStreamReader } from "../../../stream-host/testing/sse-parse.ts";
import { createApp } from "../../app.ts";
import { processTestTimeout, runCli } from "../../../scripts/testing/processes.ts";

// A first real deployment, end to end: an empty database, `npm run migrate` and `npm run provision -- FILE` as real
// processes, sign-in through the development identity provider as a platform admin and as a workspace editor, the
// provisioned dashboard streaming real query results from the stream host, and a re-apply that changes nothing.
const APP = "http://pulseboard.test";
const PLATFORM_ADMINS = "pulseboard-platform-admins";

let metrics: MetricsFixture;
let pool: pg.Pool;
let idp: DevIdentityProvider;
let config: Config;
let env: Record<string, string>;
let file: string;
let app: Hono;
const runners: QueryRunner[] = [];
const reader = { user: "", password: `reader-${randomBytes(6).toString("hex")}` };

beforeAll(async () => {
  const { url } = await createDatabase("first");
  pool = createConfigStorePool({ connectionString: url, max: 4 });
  metrics = await createMetricsFixture((await createDatabase("shopmetrics")).url);
  await metrics.admin(`
    CREATE TABLE http_requests (ts timestamptz NOT NULL, status integer NOT NULL);
    INSERT INTO http_requests SELECT now() - make_interval(mins => g), CASE WHEN g % 10 = 0 THEN 500 ELSE 200 END
      FROM generate_series(1, 30) g;
    REVOKE ALL ON SCHEMA public FROM PUBLIC;
  `);
  reader.user = await metrics.createRole("pb_first_reader", reader.password, [
    "GRANT USAGE ON SCHEMA public TO %I",
    "GRANT SELECT ON ALL TABLES IN SCHEMA public TO %I",
  ]);
  idp = await startDevIdentityProvider({
    clientId: "pulseboard-first",
    clientSecret: randomBytes(24).toString("base64url"),
    redirectUri: `${APP}/api/auth/callback`,
    users: [
      { id: "pat", name: "Pat Platform", email: "pat@example.test", groups: [PLATFORM_ADMINS] },
      { id: "erin", name: "Erin Editor", email: "erin@example.test", groups: ["shop-editors"] },
    ],
  });
  // What an operator sets: the config store, the grant of the metrics credentials to the provisioned workspace, and
  // (only because the test's metrics database is on loopback) that host allowed.
  env = {
    PATH: process.env.PATH ?? "",
    DATABASE_URL: url,
    SESSION_SECRET: randomBytes(32).toString("base64url"),
    SOURCE_SECRET_REFS: "SHOP_METRICS:ws_shop",
    SHOP_METRICS_USERNAME: reader.user,
    SHOP_METRICS_PASSWORD: reader.password,
    SOURCE_ALLOWED_HOSTS: `${metrics.host}:${metrics.port}`,
  };
  ({ config } = parseConfig({
    ...env,
    PLATFORM_ADMIN_GROUP: PLATFORM_ADMINS,
    ...devIdpEnv(idp),
  }));

  const dir = await mkdtemp(join(tmpdir(), "pb-first-deployment-"));
  file = join(dir, "pulseboard.yaml");
  await writeFile(
    join(dir, "traffic.json"),
    JSON.stringify({
      title: "Shop traffic",
      refreshIntervalMs: 10000,
      time: { from: "now-1h", to: "now" },
      panels: [
        {
          id: "requests",
          title: "Requests",
          type: "stat",
          sourceId: "src_shop",
          sql: "SELECT count(*) AS requests FROM http_requests WHERE $__timeFilter(ts)",
        },
        {
          id: "errors",
          title: "Server errors",
          type: "stat",
          sourceId: "src_shop",
          sql: "SELECT count(*) AS errors FROM http_requests WHERE $__timeFilter(ts) AND status >= 500",
        },
      ],
    }),
  );
  await writeFile(
    file,
    `# The shop team's workspace, its metrics store and its dashboards.
workspaces:
  - id: ws_shop
    name: Shop
    groups:
      viewer: shop-viewers
      editor: shop-editors
      admin: shop-admins
    sources:
      - id: src_shop
        name: Shop metrics
        host: ${metrics.host}
        port: ${metrics.port}
        database: ${metrics.database}
        sslmode: disable
        secretRef: SHOP_METRICS
    dashboards:
      - id: db_shop_traffic
        specFile: traffic.json
`,
  );
  await loadGuardParser();
});

afterAll(async () => {
  for (const r of runners) await r.closeAll();
  await idp?.stop();
  await pool?.end();
  await metrics?.close();
});

/** `node --import tsx <script>` as the operator runs it (npm run migrate / provision), with the environment above. */
const cli = (script: string, args: string[]) => runCli(script, args, env);

/** A runner reading the metrics credentials from the operator's environment above, as the processes would. */
function runner(): QueryRunner {
  const r = createQueryRunner({
    config,
    metrics: createMetrics(new Registry(), { defaultCollectors: false }),
    guard: createGuard({}),
    intervalFor,
    secrets: createSecretResolverFromConfig(config, { env, aws: null }),
  });
  runners.push(r);
  return r;
}

async function everyRow() {
  const q = async (sql: string) => (await pool.query(sql)).rows;
  return {
    workspaces: await q("SELECT * FROM workspaces ORDER BY id"),
    limits: await q("SELECT * FROM workspace_limits ORDER BY workspace_id"),
    sources: await q("SELECT * FROM sources ORDER BY id"),
    dashboards: await q("SELECT * FROM dashboards ORDER BY id"),
  };
}

const as = (jar: CookieJar, method: string, path: string, body?: unknown) =>
  app.request(`${APP}${path}`, {
    method,
    headers: { cookie: jar.header(), accept: "application/json", ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });

describe("from an empty database to a live dashboard", () => {
  test(
    "npm run migrate, then npm run provision -- FILE",
    async () => {
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
      expect(rows[0].n).toBe(0);

      const migrated = await cli("scripts/migrate.ts", []);
      expect(migrated.code, migrated.stderr).toBe(0);

      const provisioned = await cli("scripts/provision.ts", [file]);
      expect(provisioned.stderr).toBe("");
      expect(provisioned.stdout).toBe(
        "created workspace ws_shop\ncreated source src_shop\ncreated dashboard db_shop_traffic\nprovisioned: 3 changes, 0 unchanged\n",
      );
      expect(provisioned.code).toBe(0);
    },
    processTestTimeout(2),
  );

  test("the platform admin signs in, sees the provisioned workspace and creates another", async () => {
    app = createApp(testAppDeps(config, { pool, log: createLogger({ silent: true }), queryRunner: runner() }));
    const { appJar: pat } = await signInThroughDevIdp({ app, appOrigin: APP, userId: "pat" });
    const all = await (await as(pat, "GET", "/api/admin/workspaces")).json();
    expect(all.workspaces).toEqual([
      {
        id: "ws_shop",
        name: "Shop",
        groups: { viewer: "shop-viewers", editor: "shop-editors", admin: "shop-admins" },
        dashboards: 1,
        sources: 1,
        createdAt: expect.any(String),
      },
    ]);
    const page = await app.request(`${APP}/admin/workspaces`, { headers: { cookie: pat.header(), accept: "text/html" } });
    expect(page.status).toBe(200);
    const created = await as(pat, "POST", "/api/admin/workspaces", {
      id: "ws_search",
      name: "Search",
      groups: { viewer: "search-viewers", editor: "search-editors", admin: "search-admins" },
    });
    expect(created.status).toBe(201);
    // A platform admin manages workspaces; the groups decide who works in them.
    expect((await (await as(pat, "GET", "/api/workspaces")).json()).workspaces).toEqual([]);
  });

  test("the workspace editor signs in and sees the provisioned dashboard stream real results", async () => {
    const { appJar: erin } = await signInThroughDevIdp({ app, appOrigin: APP, userId: "erin" });
    expect((await (await as(erin, "GET", "/api/workspaces")).json()).workspaces).toEqual([{ id: "ws_shop", name: "Shop", role: "editor" }]);
    const list = await (await as(erin, "GET", "/api/workspaces/ws_shop/dashboards")).json();
    expect(list.dashboards.map((d: { id: string; title: string }) => [d.id, d.title])).toEqual([["db_shop_traffic", "Shop traffic"]]);

    const clock = createManualTimers();
    const host = createStreamHost(buildServiceDeps(config, { pool, log: createLogger({ silent: true }) }), {
      queryRunner: runner(),
      timers: clock.timers,
      monotonic: clock.now,
      listen: false,
    });
    // The same session cookie the handlers set at sign-in (one SESSION_SECRET for both processes).
    const res = await host.app.request("/api/dashboards/db_shop_traffic/stream", { headers: { cookie: erin.header() } });
    expect(res.status).toBe(200);
    const reader = webStreamReader(res.body!);
    const snapshot = await reader.next();
    expect(snapshot?.event).toBe("snapshot");
    expect(JSON.parse(snapshot?.data ?? "null").dashboard).toMatchObject({ id: "db_shop_traffic", title: "Shop traffic", version: 1 });

    clock.runNext();
    const frames = [await reader.next(), await reader.next()].map((f) => ({ event: f?.event, ...JSON.parse(f?.data ?? "null") }));
    const byPanel = Object.fromEntries(frames.map((f) => [f.panelId, f]));
    expect(frames.every((f) => f.event === "panel")).toBe(true);
    expect(byPanel.requests.result.rows).toEqual([[30]]);
    expect(byPanel.errors.result.rows).toEqual([[3]]);
    await reader.cancel();
    await host.beginDrain();
    await host.settle();
  });

  test(
    "applying the file again changes nothing: 0 changes, every row (versions, updated_at) as it was",
    async () => {
      const before = await everyRow();
      const again = await cli("scripts/provision.ts", [file]);
      expect(again).toEqual({ code: 0, stdout: "provisioned: 0 changes, 3 unchanged\n", stderr: "" });
      expect(await everyRow()).toEqual(before);
      // The workspace the platform admin made through the API is not in the file, and is left alone.
      expect(before.workspaces.map((w) => w.id)).toEqual(["ws_search", "ws_shop"]);
    },
    processTestTimeout(1),
  );
});
