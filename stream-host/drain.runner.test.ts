// The drain against the real guarded runner and a real metrics database whose views count every query
// that reaches them (stream-host/testing/seed.ts): where a panel query handed to the runner before
// SIGTERM is still waiting for its connection, the stopped poller must not send it afterwards.
import { afterAll, beforeAll, expect, test } from "vitest";
import { parseConfig } from "../lib/config/parse.ts";
import { createQueryRunner } from "../lib/query/runner.ts";
import type { SecretResolver } from "../lib/secrets/resolver.ts";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";
import { runPanelWith } from "./run-panel.ts";
import { createTestHost, flush } from "./testing/fixture.ts";
import { prepareCountingMetricsDb, seedStreamFixture } from "./testing/seed.ts";
import { webStreamReader } from "./testing/sse-parse.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let metricsUrl: string;
let metricsDb: Awaited<ReturnType<typeof prepareCountingMetricsDb>>;

beforeAll(async () => {
  store = await createTestConfigStore();
  metricsUrl = (await createDatabase("metrics")).url;
  metricsDb = await prepareCountingMetricsDb(metricsUrl);
});
afterAll(async () => {
  await metricsDb.close();
  await store.close();
});

/** Passes every statement as is: the guard is not what this test is about. */
const passGuard = { check: (sql: string) => ({ ok: true as const, sql, params: [] }) };

test("a panel query still waiting for its source connection when the drain begins is never sent", async () => {
  const fixture = await seedStreamFixture(store.pool, {
    metricsUrl,
    panels: [{ id: "fast", view: "fast_v" }],
    refreshIntervalMs: 60_000,
  });
  // Credentials are resolved on every new source connection; holding them holds the checkout.
  let askedFor!: () => void;
  const asked = new Promise<void>((r) => {
    askedFor = r;
  });
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const secrets: SecretResolver = {
    checkGrant() {},
    async resolve() {
      askedFor();
      await gate;
      return { username: fixture.env.METRICS_USERNAME, password: fixture.env.METRICS_PASSWORD };
    },
  };
  // The metrics database shares the loopback test server with the config store: allowed explicitly.
  const { config } = parseConfig({ DATABASE_URL: store.url, NODE_ENV: "test", SOURCE_ALLOWED_HOSTS: "127.0.0.1" });
  const runner = createQueryRunner({
    config,
    metrics: { observeQuery() {}, countGuardRejection() {}, dropSource() {} },
    guard: passGuard,
    secrets,
  });
  const t = createTestHost({
    url: store.url,
    pool: store.pool,
    env: { DEFAULT_REFRESH_INTERVAL_MS: "60000" },
    runPanel: runPanelWith(runner, { pool: store.pool }),
    host: { closeQueries: () => runner.closeAll() },
  });
  const res = await t.app.request(`/api/dashboards/${fixture.dashboardIds[0]}/stream`, {
    headers: { cookie: await t.cookieFor([fixture.workspace.viewer_group]) },
  });
  const reader = webStreamReader(res.body!);
  expect((await reader.next())?.event).toBe("snapshot");

  t.clock.runNext(); // the first tick: the panel reads its source, then the runner opens a connection
  await asked;
  t.deps.drain.start();
  const flushed = t.host.beginDrain();
  release();
  await flushed;
  await t.host.settle();
  await flush();

  expect(await metricsDb.count("fast")).toBe(0);
  expect(runner.inFlight()).toBe(0);
});
