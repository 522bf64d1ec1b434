// The runner's side of the host policy and of the pool limits. Every connection goes through a recording connector:
// only the loopback test server is really connected; any other address is recorded and refused (or held) without a
// packet, and names resolve through a table, never DNS.
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Config, parseConfig } from "../config/parse.ts";
import { createMetrics } from "../metrics/metrics.ts";
import { type SecretResolver, createSecretResolver } from "../secrets/resolver.ts";
import { hostPolicyFromConfig } from "../sources/host-policy.ts";
import type { Source } from "../sources/store.ts";
import { createDatabase, withDatabase } from "../testing/pg.ts";
import { rejection } from "../testing/rejection.ts";
import { withServername } from "./pools.ts";
import { type RecordingConnector, createRecordingConnector } from "./testing/recording-connector.ts";
import { type QueryRunner, createQueryRunner } from "./runner.ts";
import { type MetricsFixture, createMetricsFixture, createSecretsDir } from "./testing/metrics-db.ts";
import type { Guard } from "../sql-guard/verdict.ts";
import { tableResolver } from "../net/testing/table-resolver.ts";

let fx: MetricsFixture;
let secrets: Awaited<ReturnType<typeof createSecretsDir>>;
const runners: QueryRunner[] = [];

beforeAll(async () => {
  fx = await createMetricsFixture((await createDatabase("metrics")).url);
  secrets = await createSecretsDir();
  await fx.admin("REVOKE ALL ON SCHEMA public FROM PUBLIC");
  const reader = await fx.createRole("pb_hosts", "hosts-pw", ["GRANT USAGE ON SCHEMA public TO %I"]);
  await secrets.set("METRICS_USERNAME", reader);
  await secrets.set("METRICS_PASSWORD", "hosts-pw");
});

afterAll(async () => {
  await Promise.all(runners.map((r) => r.closeAll()));
  await fx.close();
  await secrets.remove();
});

const passGuard: Guard = { check: (sql) => ({ ok: true, sql, params: [] }) };

function setup(opts: { env?: Record<string, string>; dns?: ReturnType<typeof tableResolver>; connector?: RecordingConnector } = {}) {
  const config: Config = parseConfig({
    // The config store is elsewhere (never connected by these tests); the metrics server is allowed exactly.
    DATABASE_URL: "postgres://app@10.0.0.5:5432/pulseboard",
    SOURCE_ALLOWED_HOSTS: `${fx.host}:${fx.port}`,
    SOURCE_SECRET_REFS: "METRICS:ws_a",
    SOURCE_SECRETS_DIR: secrets.dir,
    QUERY_TIMEOUT_SECONDS: "5",
    ...opts.env,
  }).config;
  const dns = opts.dns ?? tableResolver({});
  const connector = opts.connector ?? createRecordingConnector({ passThrough: (a) => a.host === fx.host && a.port === fx.port });
  const real = createSecretResolver({ config, env: {} });
  const lookups: string[] = [];
  // Counts credential lookups: a refused host must never get that far.
  const counted: SecretResolver = {
    checkGrant: real.checkGrant,
    resolve: (ref, ws, host, port) => {
      lookups.push(ref);
      return real.resolve(ref, ws, host, port);
    },
  };
  const registry = new Registry();
  const runner = createQueryRunner({
    config,
    metrics: createMetrics(registry, { defaultCollectors: false }),
    guard: passGuard,
    secrets: counted,
    hostPolicy: hostPolicyFromConfig(config, { lookup: dns.lookup, localAddresses: () => ["127.0.0.1", "::1"] }),
    connector: connector.connector,
  });
  runners.push(runner);
  return { runner, connector, dns, lookups, registry };
}

const src = (overrides: Partial<Source> = {}) => fx.source(overrides);

describe("host policy in the runner", () => {
  test.each([
    ["loopback on another port", { host: "127.0.0.1", port: 8080 }],
    ["IPv6 loopback", { host: "::1" }],
    ["the metadata address", { host: "169.254.169.254", port: 80 }],
    ["the IPv6 metadata address", { host: "fd00:ec2::254", port: 80 }],
    ["a name resolving to the metadata address", { host: "metadata.attacker.example", port: 80 }],
    ["the config store's server", { host: "10.0.0.5", port: 5432 }],
  ])("%s: 422 naming host, before any connection attempt or credential lookup", async (_name, target) => {
    const t = setup({ dns: tableResolver({ "metadata.attacker.example": ["169.254.169.254"] }) });
    for (const attempt of [() => t.runner.testConnection(src(target)), () => t.runner.execute({ source: src(target), sql: "SELECT 1" })]) {
      const err = await rejection(attempt());
      expect(err.code).toBe("source_host_refused");
      expect(err.status).toBe(422);
      expect(err.extra).toMatchObject({ field: "host" });
    }
    expect(t.connector.attempts).toEqual([]);
    expect(t.lookups).toEqual([]);
  });

  test("DNS re-pointed after a check: the connection goes to the checked address, and the next check refuses the new one", async () => {
    const t = setup({
      dns: tableResolver({ "rebind.attacker.example": [["203.0.113.10"], ["169.254.169.254"]] }),
      connector: createRecordingConnector(),
    });
    const source = src({ host: "rebind.attacker.example", port: 80 });
    // First connect: one lookup, checked, and the socket is opened to that address (never to the name).
    const first = await rejection(t.runner.testConnection(source));
    expect(first.extra).toEqual({ cause: "connection_refused" });
    expect(t.connector.attempts).toEqual([{ host: "203.0.113.10", port: 80 }]);
    expect(t.dns.asked).toEqual(["rebind.attacker.example"]);
    // The name now answers the metadata address: refused at the connect-time check, no attempt is made.
    const second = await rejection(t.runner.execute({ source, sql: "SELECT 1" }));
    expect(second.code).toBe("source_host_refused");
    expect(t.connector.attempts).toEqual([{ host: "203.0.113.10", port: 80 }]);
  });

  test("an allowed server is really connected, at the address the name resolved to", async () => {
    const t = setup({ dns: tableResolver({ "metrics.test": [fx.host] }), env: { SOURCE_ALLOWED_HOSTS: "metrics.test" } });
    const r = await t.runner.execute({ source: src({ host: "metrics.test" }), sql: "SELECT current_database()" });
    expect(r.rows).toEqual([[fx.database]]);
    expect(t.connector.attempts).toEqual([{ host: fx.host, port: fx.port }]);
  });

  test("the config database is refused even on an allowed server; its other databases are not", async () => {
    const t = setup({ env: { DATABASE_URL: withDatabase(fx.url, "pulseboard_cfg") } });
    const err = await rejection(t.runner.testConnection(src({ database: "pulseboard_cfg" })));
    expect(err.code).toBe("source_host_refused");
    expect(err.extra).toMatchObject({ field: "host", reason: "service_address" });
    expect(t.connector.attempts).toEqual([]);
    await expect(t.runner.testConnection(src())).resolves.toBeTruthy();
  });

  test("a name keeps being the TLS server name while the socket goes to its address", () => {
    expect(withServername({ rejectUnauthorized: true }, "db.example.com.")).toEqual({
      rejectUnauthorized: true,
      servername: "db.example.com",
    });
    expect(withServername({ rejectUnauthorized: true }, "203.0.113.10")).toEqual({ rejectUnauthorized: true });
    expect(withServername(false, "db.example.com")).toBe(false);
  });
});

describe("credential binding by host and port (SOURCE_SECRET_HOSTS)", () => {
  test("a secret_ref bound to host:port: another port of that host is refused before any connection attempt or credential lookup, with the answer of a wrong host; the bound ports connect", async () => {
    const t = setup({
      env: {
        // The host policy lets every port of loopback through: only the credential binding stands in the way.
        SOURCE_ALLOWED_HOSTS: fx.host,
        SOURCE_SECRET_HOSTS: `METRICS:${fx.host}:${fx.port},10.0.0.7:5432`,
      },
    });
    const refusedAnswers = new Set<string>();
    for (const target of [
      { host: fx.host, port: fx.port + 1 },
      { host: fx.host, port: 22 },
      { host: "10.0.0.7", port: 5433 },
      { host: "10.0.0.8", port: 5432 },
    ]) {
      for (const attempt of [
        () => t.runner.testConnection(src(target)),
        () => t.runner.execute({ source: src(target), sql: "SELECT 1" }),
      ]) {
        const err = await rejection(attempt());
        expect(err.code).toBe("grant_missing");
        expect(err.extra).toEqual({ secretRef: "METRICS", reason: "host_not_allowed" });
        refusedAnswers.add(JSON.stringify([err.status, err.detail, err.extra]));
      }
    }
    // One answer for every refused host and port: nothing tells a closed port from an open one, or a port from a host.
    expect(refusedAnswers.size).toBe(1);
    expect(t.connector.attempts).toEqual([]);
    expect(t.lookups).toEqual([]);

    // The bound port of the test server is really connected.
    const r = await t.runner.execute({ source: src(), sql: "SELECT 1" });
    expect(r.rows).toEqual([[1]]);
    expect(t.connector.attempts).toEqual([{ host: fx.host, port: fx.port }]);
    // The bound port of the other address gets its connection attempt (the recording connector refuses it unsent).
    const err = await rejection(t.runner.execute({ source: src({ host: "10.0.0.7", port: 5432 }), sql: "SELECT 1" }));
    expect(err.code).toBe("source_unavailable");
    expect(t.connector.attempts).toEqual([
      { host: fx.host, port: fx.port },
      { host: "10.0.0.7", port: 5432 },
    ]);
  });
});

describe("pool eviction", () => {
  test("a failed connection test ends the source's pool; a failed statement leaves it", async () => {
    const t = setup({ connector: createRecordingConnector() });
    const source = src({ host: "203.0.113.20" });
    expect((await rejection(t.runner.execute({ source, sql: "SELECT 1" }))).code).toBe("source_unavailable");
    expect(t.runner.poolStats(source.id)).not.toBeNull();
    expect((await rejection(t.runner.testConnection(source))).code).toBe("source_unavailable");
    expect(t.runner.poolStats(source.id)).toBeNull();
  });

  test("a source that is not stored yet leaves neither a pool nor a metric series after its test", async () => {
    const t = setup();
    const draft = src();
    await expect(t.runner.testConnection(draft, { stored: false })).resolves.toMatchObject({ elapsedMs: expect.any(Number) });
    expect(t.runner.poolStats(draft.id)).toBeNull();
    const failed = src({ port: 8080, host: "203.0.113.21" });
    await rejection(t.runner.testConnection(failed, { stored: false }));
    const text = await t.registry.metrics();
    expect(text).not.toContain(draft.id);
    expect(text).not.toContain(failed.id);
    // A stored source's test is a query like any other.
    const stored = src();
    await t.runner.testConnection(stored);
    expect(await t.registry.metrics()).toContain(`source="${stored.id}"`);
    expect(t.runner.poolStats(stored.id)).not.toBeNull();
  });

  test("evict ends a pool; the next statement builds a new one", async () => {
    const t = setup();
    const source = src();
    const pid = (await t.runner.execute({ source, sql: "SELECT pg_backend_pid()" })).rows[0]?.[0];
    expect(t.runner.poolStats(source.id)).toMatchObject({ totalCount: 1, idleCount: 1 });
    t.runner.evict(source.id);
    expect(t.runner.poolStats(source.id)).toBeNull();
    const again = (await t.runner.execute({ source, sql: "SELECT pg_backend_pid()" })).rows[0]?.[0];
    expect(again).not.toBe(pid);
  });
});

describe("limits", () => {
  test("SOURCE_POOLS_MAX: a new source closes the least recently used idle pool", async () => {
    const t = setup({ env: { SOURCE_POOLS_MAX: "2" } });
    const [a, b, c] = [src(), src(), src()];
    await t.runner.execute({ source: a, sql: "SELECT 1" });
    await t.runner.execute({ source: b, sql: "SELECT 1" });
    await t.runner.execute({ source: a, sql: "SELECT 1" });
    await t.runner.execute({ source: c, sql: "SELECT 1" });
    expect(t.runner.poolStats(b.id)).toBeNull();
    expect(t.runner.poolStats(a.id)).not.toBeNull();
    expect(t.runner.poolStats(c.id)).not.toBeNull();
  });

  test("SOURCE_POOLS_MAX: while every pool is busy a new source is refused without connecting", async () => {
    const connector = createRecordingConnector({ hold: true });
    const t = setup({ env: { SOURCE_POOLS_MAX: "2" }, connector });
    const pending = [src({ host: "203.0.113.30" }), src({ host: "203.0.113.31" })].map((s) => rejection(t.runner.testConnection(s)));
    await connector.attempted(2);
    const err = await rejection(t.runner.execute({ source: src({ host: "203.0.113.32" }), sql: "SELECT 1" }));
    expect(err.code).toBe("source_unavailable");
    expect(err.extra).toEqual({ cause: "pool_limit" });
    expect(connector.attempts.map((a) => a.host).sort()).toEqual(["203.0.113.30", "203.0.113.31"]);
    connector.releaseHeld();
    for (const e of await Promise.all(pending)) expect(e.code).toBe("source_unavailable");
  });

  test("SOURCE_HOST_CONNECTIONS_MAX: connections to one server are capped across sources and names; a closed one frees its slot", async () => {
    const connector = createRecordingConnector({ hold: true });
    const t = setup({
      // Three workspaces, so the server's cap is reached before any workspace's share of it (1 of 2).
      env: { SOURCE_HOST_CONNECTIONS_MAX: "2", SOURCE_SECRET_REFS: "METRICS:ws_a,ws_b,ws_c" },
      connector,
      dns: tableResolver({ "db.example.com": ["203.0.113.40"], "alias.example.com": ["203.0.113.40"] }),
    });
    const pending = [src({ host: "203.0.113.40" }), src({ host: "db.example.com", workspaceId: "ws_b" })].map((s) =>
      rejection(t.runner.testConnection(s)),
    );
    await connector.attempted(2);
    const err = await rejection(t.runner.testConnection(src({ host: "alias.example.com", workspaceId: "ws_c" })));
    expect(err.extra).toEqual({ cause: "host_connection_limit" });
    expect(err.detail).not.toContain("203.0.113.40");
    expect(connector.attempts).toHaveLength(2);
    // Another server is not affected.
    const other = rejection(t.runner.testConnection(src({ host: "203.0.113.41" })));
    await connector.attempted(3);
    connector.releaseHeld();
    await Promise.all([...pending, other]);
    // The closed connections gave their slots back (pg reports the close one tick after the failure).
    await new Promise((r) => setImmediate(r));
    const later = rejection(t.runner.testConnection(src({ host: "alias.example.com", workspaceId: "ws_c" })));
    await connector.attempted(4);
    expect(connector.attempts[3]).toEqual({ host: "203.0.113.40", port: fx.port });
    connector.releaseHeld();
    expect((await later).code).toBe("source_unavailable");
  });
});
