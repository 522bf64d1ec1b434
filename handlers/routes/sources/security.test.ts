// A hostile workspace admin aiming a source at the service's own network: the host policy on create, update and
// test, the pools those requests leave behind, and the metric series they create. The runner's connections go
// through a recording connector: only the loopback test server is really connected, any other address is recorded
// and refused without a packet, and names resolve through a table (never DNS).
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { type RecordingConnector, createRecordingConnector } from "../../../lib/query/testing/recording-connector.ts";
import { tableResolver } from "../../../lib/net/testing/table-resolver.ts";
import { createSource, getSource } from "../../../lib/sources/index.ts";
import { adminUrl } from "../../../lib/testing/pg.ts";
import { type ApiFixture, call, createApiFixture } from "../../testing/api-fixture.ts";

// The metrics databases live on the run's embedded server, which also holds the config store.
const server = new URL(adminUrl());
const SERVER = { host: server.hostname, port: Number(server.port) };

const DNS: Record<string, string[]> = {
  "metadata.attacker.example": ["169.254.169.254"],
  "loopback.attacker.example": ["127.0.0.1"],
  "db.example.com": ["203.0.113.60"],
};

let fx: ApiFixture;
let rec: RecordingConnector;
let admin: string;
let base: string;
let configDatabase: string;

beforeAll(async () => {
  rec = createRecordingConnector({ passThrough: (a) => a.host === SERVER.host && a.port === SERVER.port });
  fx = await createApiFixture({
    // Exactly the test server is allowed: every other loopback port stays refused.
    env: { SOURCE_ALLOWED_HOSTS: `${SERVER.host}:${SERVER.port}`, SOURCE_CONNECT_RATE_PER_MINUTE: "0" },
    runner: {
      connector: rec.connector,
      lookup: tableResolver(DNS).lookup,
    },
  });
  admin = fx.roles.cookies.admin!;
  base = `/api/workspaces/${fx.roles.workspace.id}/sources`;
  configDatabase = new URL(fx.config.DATABASE_URL).pathname.slice(1);
});
afterAll(() => fx.close());

const body = (extra: Record<string, unknown> = {}) => ({
  name: "target",
  host: fx.metrics.host,
  port: fx.metrics.port,
  database: fx.metrics.database,
  sslmode: "disable" as const,
  secretRef: "METRICS",
  ...extra,
});

async function count(): Promise<number> {
  const { rows } = await fx.pool.query("SELECT count(*)::int AS n FROM sources");
  return rows[0].n;
}

/** Attempts the connector saw to anything but the test server. */
const elsewhere = () => rec.attempts.filter((a) => !(a.host === SERVER.host && a.port === SERVER.port));

const HOSTILE = [
  ["loopback, another port", { host: "127.0.0.1", port: 5433 }],
  ["the handlers' own listener (PORT)", { host: "127.0.0.1", port: 8080 }],
  ["IPv6 loopback", { host: "::1" }],
  ["IPv4-mapped loopback", { host: "::ffff:127.0.0.1", port: 5433 }],
  ["the metadata address", { host: "169.254.169.254", port: 80 }],
  ["the IPv6 metadata address", { host: "fd00:ec2::254", port: 80 }],
  ["a name resolving to the metadata address", { host: "metadata.attacker.example", port: 80 }],
  ["a name resolving to loopback", { host: "loopback.attacker.example", port: 5433 }],
  ["the unspecified address", { host: "0.0.0.0" }],
] as const;

describe("create", () => {
  test.each(HOSTILE)("%s: 422 source_host_refused naming host; nothing stored, nothing connected", async (_name, target) => {
    const before = await count();
    const attempts = rec.attempts.length;
    const res = await call(fx.app, admin, "POST", base, body(target));
    expect(res.status).toBe(422);
    const p = await res.json();
    expect(p).toMatchObject({ code: "source_host_refused", field: "host" });
    expect(p.detail).not.toContain(target.host);
    expect(await count()).toBe(before);
    expect(rec.attempts.length).toBe(attempts);
  });

  test("the config store's own database is refused although its server is allowed", async () => {
    const before = await count();
    const res = await call(fx.app, admin, "POST", base, body({ database: configDatabase }));
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ code: "source_host_refused", field: "host", reason: "service_address" });
    expect(await count()).toBe(before);
  });

  test("the allowed server's other databases are fine", async () => {
    const res = await call(fx.app, admin, "POST", base, body({ name: "allowed" }));
    expect(res.status).toBe(201);
  });

  test("a failed create leaves neither a pool nor a metric series for the id it never stored", async () => {
    const before = rec.attempts.length;
    const res = await call(fx.app, admin, "POST", base, body({ name: "never stored", host: "db.example.com", port: 5432 }));
    expect(res.status).toBe(502);
    // The runner connected to the address it checked, not to the name.
    expect(rec.attempts.slice(before)).toEqual([{ host: "203.0.113.60", port: 5432 }]);
    const { rows } = await fx.pool.query<{ id: string }>("SELECT id FROM sources");
    const stored = new Set(rows.map((r) => r.id));
    const labelled = [...(await fx.registry.metrics()).matchAll(/source="([^"]+)"/g)].map((m) => m[1]);
    expect(labelled.filter((id) => !stored.has(id) && id !== "other")).toEqual([]);
  });
});

describe("update", () => {
  test.each(HOSTILE)("%s: 422 and the source keeps its connection", async (_name, target) => {
    const s = await fx.newSource("moved");
    const attempts = elsewhere().length;
    const res = await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 1, ...target });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ code: "source_host_refused", field: "host" });
    expect(await getSource(fx.pool, s.id)).toMatchObject({ host: fx.metrics.host, port: fx.metrics.port, version: 1 });
    expect(elsewhere().length).toBe(attempts);
  });

  test("a changed connection closes the connections made with the old one", async () => {
    const s = await fx.newSource("reconnected");
    const pid = (await fx.runner.execute({ source: s, sql: "SELECT pg_backend_pid()" })).rows[0]?.[0];
    const res = await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 1, sslmode: "prefer" });
    expect(res.status).toBe(200);
    expect((await getSource(fx.pool, s.id))?.sslmode).toBe("prefer");
    // The old backend goes away once its pool's close reaches the server.
    await vi.waitFor(
      async () => {
        const { rows } = await fx.metrics.admin("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1", [pid]);
        expect(rows[0].n).toBe(0);
      },
      { timeout: 10_000 },
    );
  });
});

describe("connection test and delete", () => {
  test.each(HOSTILE)("%s stored behind the API's back: the test is refused without a connection", async (_name, target) => {
    const s = await createSource(fx.pool, fx.roles.workspace.id, { ...body({ name: "planted" }), ...target });
    const attempts = rec.attempts.length;
    const res = await call(fx.app, admin, "POST", `/api/sources/${s.id}/test`);
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ code: "source_host_refused", field: "host" });
    expect(rec.attempts.length).toBe(attempts);
    expect(fx.runner.poolStats(s.id)).toBeNull();
  });

  test("a failed connection test ends the source's pool", async () => {
    const s = await createSource(fx.pool, fx.roles.workspace.id, { ...body({ name: "unreachable" }), host: "db.example.com", port: 5432 });
    // A panel's statement failing leaves the pool (it may be a passing outage)...
    await expect(fx.runner.execute({ source: s, sql: "SELECT 1" })).rejects.toMatchObject({ code: "source_unavailable" });
    expect(fx.runner.poolStats(s.id)).not.toBeNull();
    // ...an admin's failed test ends it.
    const res = await call(fx.app, admin, "POST", `/api/sources/${s.id}/test`);
    expect(res.status).toBe(502);
    expect(fx.runner.poolStats(s.id)).toBeNull();
  });

  test("deleting a source ends its pool", async () => {
    const s = await fx.newSource("deleted");
    await fx.runner.execute({ source: s, sql: "SELECT 1" });
    expect(fx.runner.poolStats(s.id)).not.toBeNull();
    expect((await call(fx.app, admin, "DELETE", `/api/sources/${s.id}`)).status).toBe(204);
    expect(fx.runner.poolStats(s.id)).toBeNull();
  });
});
