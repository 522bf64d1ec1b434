import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { createMetrics } from "../metrics/metrics.ts";
import { type QueryRunner, createQueryRunner } from "../query/runner.ts";
import { type MetricsFixture, createMetricsFixture, createSecretsDir } from "../query/testing/metrics-db.ts";
import { createSecretResolver } from "../secrets/resolver.ts";
import { sourceLimitWarnings } from "../query/source-limits.ts";
import { createSource, getSource, sourceView } from "../sources/store.ts";
import { createDatabase, createTestConfigStore } from "../testing/pg.ts";
import { catalogFromColumns, readCatalog, refreshCatalog, textArrayLiteral } from "./refresh.ts";

let fx: MetricsFixture;
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let secrets: Awaited<ReturnType<typeof createSecretsDir>>;
let runner: QueryRunner;
let role: string;

beforeAll(async () => {
  store = await createTestConfigStore();
  await store.pool.query("INSERT INTO workspaces (id, name, viewer_group, editor_group, admin_group) VALUES ('ws_a', 'A', 'v', 'e', 'a')");
  fx = await createMetricsFixture((await createDatabase("metrics")).url);
  secrets = await createSecretsDir();
  await fx.admin(`
    CREATE SCHEMA metrics;
    CREATE TYPE level AS ENUM ('low', 'high');
    CREATE TABLE public.http_requests (id bigint, service text, ts timestamptz NOT NULL, at timestamp, status int);
    CREATE TABLE public.hosts (host text, tags text[], lvl level);
    CREATE TABLE public.daily (day date, total numeric);
    CREATE TABLE public.hidden (secret text);
    CREATE TABLE metrics.cpu (time timestamp, host text, cpu double precision);
    CREATE TABLE "Odd ""Schema"" Table" (x int);
    CREATE VIEW public.errors AS SELECT ts, service FROM public.http_requests WHERE status >= 500;
    REVOKE ALL ON SCHEMA public FROM PUBLIC;
  `);
  role = await fx.createRole("pb_catalog", "catalog-pw", [
    "GRANT USAGE ON SCHEMA public, metrics TO %I",
    "GRANT SELECT ON public.http_requests, public.hosts, public.daily, public.errors, metrics.cpu TO %I",
  ]);
  await secrets.set("METRICS_USERNAME", role);
  await secrets.set("METRICS_PASSWORD", "catalog-pw");
  const config = parseConfig({
    DATABASE_URL: store.url,
    // The metrics database shares the loopback test server with the config store: allowed explicitly.
    SOURCE_ALLOWED_HOSTS: "127.0.0.1",
    SOURCE_SECRET_REFS: "METRICS:ws_a",
    SOURCE_SECRETS_DIR: secrets.dir,
    MAX_QUERY_ROWS: "2",
  }).config;
  runner = createQueryRunner({
    config,
    metrics: createMetrics(new Registry(), { defaultCollectors: false }),
    guard: { check: () => ({ ok: false, reason: "keyword", message: "unused" }) },
    secrets: createSecretResolver({ config, env: {} }),
  });
});

afterAll(async () => {
  await runner.closeAll();
  await fx.close();
  await store.close();
  await secrets.remove();
});

describe("catalog refresh", () => {
  test("reads the role's visible tables of the source's schemas, with time columns, past MAX_QUERY_ROWS", async () => {
    const source = fx.source({ schemas: ["public", "metrics"] });
    const catalog = await readCatalog(runner, source);
    expect(catalog.tables.map((t) => `${t.schema}.${t.name}`)).toEqual([
      "metrics.cpu",
      "public.daily",
      "public.errors",
      "public.hosts",
      "public.http_requests",
    ]);
    const byName = Object.fromEntries(catalog.tables.map((t) => [t.name, t]));
    expect(byName.http_requests).toEqual({
      schema: "public",
      name: "http_requests",
      timeColumn: "ts",
      columns: [
        { name: "id", type: "bigint" },
        { name: "service", type: "text" },
        { name: "ts", type: "timestamp with time zone" },
        { name: "at", type: "timestamp without time zone" },
        { name: "status", type: "integer" },
      ],
    });
    expect(byName.cpu?.timeColumn).toBe("time");
    expect(byName.daily?.timeColumn).toBe("day");
    expect(byName.errors?.timeColumn).toBe("ts");
    expect(byName.hosts).toMatchObject({
      timeColumn: null,
      columns: [
        { name: "host", type: "text" },
        { name: "tags", type: "text[]" },
        { name: "lvl", type: "level" },
      ],
    });
  });

  test("records the role's limits as a panel statement sees them; an unlimited temp_file_limit is warned about", async () => {
    const source = fx.source({ schemas: ["public"] });
    const before = await readCatalog(runner, source);
    // work_mem as the runner sets it per statement, temp_file_limit as the role has it (unset: -1).
    expect(before.limits).toEqual({ statementTimeout: expect.stringMatching(/^\d+s$/), tempFileLimit: "-1", workMem: "4MB" });
    expect(sourceLimitWarnings(before.limits)).toEqual([expect.stringContaining("temp_file_limit")]);

    await fx.admin(`ALTER ROLE ${role} SET temp_file_limit = '1GB'`);
    try {
      // Role settings apply from a connection's start: the pooled connections predate the change.
      runner.evict(source.id);
      const after = await readCatalog(runner, source);
      expect(after.limits).toMatchObject({ tempFileLimit: "1GB", workMem: "4MB" });
      expect(sourceLimitWarnings(after.limits)).toEqual([]);
    } finally {
      await fx.admin(`ALTER ROLE ${role} RESET temp_file_limit`);
      runner.evict(source.id);
    }
  });

  test("refreshCatalog stores the catalog and its time; the status flag follows CATALOG_STALE_AFTER_DAYS", async () => {
    const created = await createSource(store.pool, "ws_a", {
      name: "m",
      host: fx.host,
      port: fx.port,
      database: fx.database,
      sslmode: "disable",
      secretRef: "METRICS",
    });
    expect(sourceView(created, 30, 0).catalogStatus).toBe("never_refreshed");
    const at = Date.UTC(2026, 5, 1);
    const refreshed = await refreshCatalog({ db: store.pool, runner, now: () => at }, created);
    expect(refreshed.catalogRefreshedAt?.getTime()).toBe(at);
    expect(refreshed.catalog?.tables.map((t) => t.name)).toEqual(["daily", "errors", "hosts", "http_requests"]);
    expect(refreshed.catalog?.limits).toMatchObject({ tempFileLimit: "-1", workMem: "4MB" });
    expect(await getSource(store.pool, created.id)).toEqual(refreshed);
    const day = 86_400_000;
    expect(sourceView(refreshed, 30, at + 10 * day).catalogStatus).toBe("fresh");
    expect(sourceView(refreshed, 30, at + 31 * day)).toMatchObject({ catalogStatus: "stale", catalogStale: true });
    expect(sourceView(refreshed, 0, at + 3650 * day).catalogStatus).toBe("fresh");
  });

  test("a user's time column choice survives every refresh; a vanished column falls back to detection", async () => {
    const source = fx.source({
      schemas: ["public"],
      timeColumnOverrides: [
        { schema: "public", table: "http_requests", column: "at" },
        { schema: "public", table: "daily", column: null },
        { schema: "public", table: "errors", column: "no_such_column" },
      ],
    });
    const byName = Object.fromEntries((await readCatalog(runner, source)).tables.map((t) => [t.name, t.timeColumn]));
    expect(byName).toEqual({ daily: null, errors: "ts", hosts: null, http_requests: "at" });
  });

  test("overrides are stored with the source and applied by refreshCatalog", async () => {
    const created = await createSource(store.pool, "ws_a", {
      name: "with override",
      host: fx.host,
      port: fx.port,
      database: fx.database,
      sslmode: "disable",
      secretRef: "METRICS",
      timeColumnOverrides: [{ schema: "public", table: "http_requests", column: "at" }],
    });
    expect(created.timeColumnOverrides).toEqual([{ schema: "public", table: "http_requests", column: "at" }]);
    const refreshed = await refreshCatalog({ db: store.pool, runner }, created);
    expect(refreshed.catalog?.tables.find((t) => t.name === "http_requests")?.timeColumn).toBe("at");
  });

  test("a schema name with quotes and commas is bound safely", async () => {
    const catalog = await readCatalog(runner, fx.source({ schemas: ['x", "public', "metrics"] }));
    expect(catalog.tables.map((t) => t.name)).toEqual(["cpu"]);
  });

  test("an unreachable source fails with the runner's coded error and stores nothing", async () => {
    const created = await createSource(store.pool, "ws_a", {
      name: "down",
      host: fx.host,
      port: 1,
      database: fx.database,
      sslmode: "disable",
      secretRef: "METRICS",
    });
    await expect(refreshCatalog({ db: store.pool, runner }, created)).rejects.toBeInstanceOf(AppError);
    expect((await getSource(store.pool, created.id))?.catalog).toBeNull();
  });
});

describe("catalog building", () => {
  test("the first time-typed column wins; tables without one get null", () => {
    const catalog = catalogFromColumns([
      ["s", "t", "a", "text", "text"],
      ["s", "t", "d", "date", "date"],
      ["s", "t", "ts", "timestamp with time zone", "timestamptz"],
      ["s", "u", "n", "integer", "int4"],
    ]);
    expect(catalog.tables.map((t) => [t.name, t.timeColumn])).toEqual([
      ["t", "d"],
      ["u", null],
    ]);
  });

  test("text[] literals escape quotes and backslashes", () => {
    expect(textArrayLiteral(["public", 'a"b', "c\\d"])).toBe('{"public","a\\"b","c\\\\d"}');
  });
});
