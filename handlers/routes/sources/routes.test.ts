import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { saveDashboard } from "../../../lib/dashboards/save.ts";
import { createSource, getSource, saveCatalog } from "../../../lib/sources/index.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec, FIXTURE_CATALOG } from "../../testing/api-fixture.ts";

let fx: ApiFixture;
let admin: string;
let base: string;

beforeAll(async () => {
  fx = await createApiFixture({ env: { SOURCE_SECRET_REFS: "METRICS:*;NOCREDS:*" } });
  admin = fx.roles.cookies.admin!;
  base = `/api/workspaces/${fx.roles.workspace.id}/sources`;
});
afterAll(() => fx.close());

const body = (extra: Record<string, unknown> = {}) => ({
  name: "warehouse",
  host: fx.metrics.host,
  port: fx.metrics.port,
  database: fx.metrics.database,
  sslmode: "disable",
  secretRef: "METRICS",
  ...extra,
});

async function countNamed(name: string): Promise<number> {
  const { rows } = await fx.pool.query("SELECT count(*)::int AS n FROM sources WHERE name = $1", [name]);
  return rows[0].n;
}

describe("creating a source", () => {
  test("tests the connection, stores the source and refreshes its catalog once", async () => {
    const res = await call(fx.app, admin, "POST", base, body({ name: "created ok" }));
    expect(res.status).toBe(201);
    const s = await res.json();
    expect(res.headers.get("location")).toBe(`/api/sources/${s.id}`);
    expect(s).toMatchObject({
      name: "created ok",
      version: 1,
      catalogStatus: "fresh",
      catalogStale: false,
      catalogNeverRefreshed: false,
      secretRef: "METRICS",
      host: fx.metrics.host,
    });
    expect(s.catalogError).toBeUndefined();
    const names = s.catalog.tables.map((t: { name: string }) => t.name).sort();
    expect(names).toEqual(["http_requests", "payloads"]);
    expect(s.catalog.tables.find((t: { name: string }) => t.name === "http_requests").timeColumn).toBe("ts");
    expect((await getSource(fx.pool, s.id))?.catalogRefreshedAt).not.toBeNull();
  });

  test("a secret_ref without a grant is refused and nothing is stored", async () => {
    const res = await call(fx.app, admin, "POST", base, body({ name: "no grant", secretRef: "UNGRANTED" }));
    expect(res.status).toBe(422);
    const p = await res.json();
    expect(p.code).toBe("grant_missing");
    expect(p.detail).toContain("UNGRANTED");
    expect(await countNamed("no grant")).toBe(0);
  });

  test("credentials that are not configured are refused, naming variables, never values", async () => {
    const res = await call(fx.app, admin, "POST", base, body({ name: "no creds", secretRef: "NOCREDS" }));
    expect(res.status).toBe(502);
    const p = await res.json();
    expect(p.code).toBe("source_credentials_missing");
    expect(await countNamed("no creds")).toBe(0);
  });

  test("an unreachable database is a 502 that does not echo the host, and nothing is stored", async () => {
    const res = await call(fx.app, admin, "POST", base, body({ name: "unreachable", host: "127.0.0.1", port: 1 }));
    expect(res.status).toBe(502);
    const p = await res.json();
    expect(p.code).toBe("source_unavailable");
    expect(p.detail).not.toContain("127.0.0.1");
    expect(await countNamed("unreachable")).toBe(0);
  });

  test.each([
    [{ port: 70000 }, "port"],
    [{ host: "" }, "host"],
    [{ host: "evil host; drop" }, "host"],
    [{ secretRef: "../etc/passwd" }, "secretRef"],
    [{ sslmode: "sometimes" }, "sslmode"],
    [{ name: undefined }, "name"],
  ])("%j is a 400 naming %s", async (extra, field) => {
    const res = await call(fx.app, admin, "POST", base, body(extra));
    expect(res.status).toBe(400);
    const p = await res.json();
    expect(p.code).toBe("validation_failed");
    expect(p.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: field })]));
  });
});

describe("catalog flags", () => {
  test("fresh, stale (older than CATALOG_STALE_AFTER_DAYS) and never refreshed", async () => {
    const stale = await createSource(fx.pool, fx.roles.workspace.id, { ...body({ name: "flag stale" }), sslmode: "disable" });
    await saveCatalog(fx.pool, stale.id, FIXTURE_CATALOG, new Date(fx.now() - 40 * 86_400_000));
    const never = await createSource(fx.pool, fx.roles.workspace.id, { ...body({ name: "flag never" }), sslmode: "disable" });
    const list = (await (await call(fx.app, fx.roles.cookies.viewer, "GET", base)).json()).sources as Record<string, unknown>[];
    const byId = (id: string) => list.find((s) => s.id === id);
    expect(byId(fx.source.id)).toMatchObject({ catalogStatus: "fresh", catalogStale: false, catalogNeverRefreshed: false });
    expect(byId(stale.id)).toMatchObject({ catalogStatus: "stale", catalogStale: true, catalogNeverRefreshed: false });
    expect(byId(never.id)).toMatchObject({
      catalogStatus: "never_refreshed",
      catalogStale: false,
      catalogNeverRefreshed: true,
      catalogRefreshedAt: null,
    });
  });
});

describe("what each role sees", () => {
  const CONNECTION = ["host", "port", "database", "sslmode", "secretRef"];
  test("viewers: name and catalog flags only", async () => {
    const s = await (await call(fx.app, fx.roles.cookies.viewer, "GET", `/api/sources/${fx.source.id}`)).json();
    expect(s).toMatchObject({ id: fx.source.id, name: "metrics", catalogStatus: "fresh", tableCount: 2 });
    for (const k of [...CONNECTION, "catalog", "notes"]) expect(s).not.toHaveProperty(k);
  });

  test("editors: plus the catalog they write SQL against, not the connection", async () => {
    const s = await (await call(fx.app, fx.roles.cookies.editor, "GET", `/api/sources/${fx.source.id}`)).json();
    expect(s.catalog).toEqual(FIXTURE_CATALOG);
    for (const k of CONNECTION) expect(s).not.toHaveProperty(k);
  });

  test("admins: plus the connection and the secret_ref name; never a credential", async () => {
    const res = await call(fx.app, admin, "GET", `/api/sources/${fx.source.id}`);
    const text = await res.text();
    const s = JSON.parse(text);
    expect(s).toMatchObject({ host: fx.metrics.host, port: fx.metrics.port, database: fx.metrics.database, secretRef: "METRICS" });
    expect(text).not.toContain("fixture-reader-pw");
    expect(text).not.toMatch(/password|username/i);
  });

  test("the list carries no catalogs", async () => {
    const list = (await (await call(fx.app, admin, "GET", base)).json()).sources;
    for (const s of list) expect(s).not.toHaveProperty("catalog");
  });
});

describe("updating and deleting", () => {
  test("an update changes only the fields sent and bumps the version; a stale version is 409", async () => {
    const s = await fx.newSource("to update");
    const res = await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 1, name: "updated", notes: "p95 in ms" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      version: 2,
      name: "updated",
      notes: "p95 in ms",
      host: fx.metrics.host,
      sslmode: "disable",
      catalogStatus: "fresh",
    });
    const stale = await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 1, name: "lost" });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toMatchObject({ code: "version_conflict", currentVersion: 2 });
    expect((await getSource(fx.pool, s.id))?.name).toBe("updated");
  });

  test("new connection settings are tested first: a bad one is refused and nothing changes", async () => {
    const s = await fx.newSource("reconnect");
    const res = await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 1, port: 1, notes: "moved" });
    expect(res.status).toBe(502);
    expect((await res.json()).code).toBe("source_unavailable");
    expect(await getSource(fx.pool, s.id)).toMatchObject({ port: fx.metrics.port, notes: "", version: 1 });
  });

  test("changed time-column overrides re-read the catalog, so the guard's time check follows them at once", async () => {
    const s = await fx.newSource("overrides");
    const catalogOf = (body: { catalog: { tables: { name: string; timeColumn: string | null }[] } }) =>
      body.catalog.tables.find((t) => t.name === "http_requests")?.timeColumn;
    const res = await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, {
      version: 1,
      timeColumnOverrides: [{ schema: "public", table: "http_requests", column: null }],
    });
    expect(res.status).toBe(200);
    expect(catalogOf(await res.json())).toBeNull();
    expect((await getSource(fx.pool, s.id))!.catalog!.tables.find((t) => t.name === "http_requests")?.timeColumn).toBeNull();
  });

  test("a changed schema list re-reads the catalog; a rename does not", async () => {
    await fx.metrics.admin(`
      CREATE SCHEMA IF NOT EXISTS extra;
      CREATE TABLE IF NOT EXISTS extra.jobs (finished_at timestamptz NOT NULL, name text NOT NULL);
      GRANT USAGE ON SCHEMA extra TO PUBLIC;
      GRANT SELECT ON extra.jobs TO PUBLIC;
    `);
    const s = await fx.newSource("schemas");
    const before = (await getSource(fx.pool, s.id))!.catalogRefreshedAt!.getTime();
    const renamed = await (await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 1, name: "schemas 2" })).json();
    expect(new Date(renamed.catalogRefreshedAt).getTime()).toBe(before);
    const res = await call(fx.app, admin, "PUT", `/api/sources/${s.id}`, { version: 2, schemas: ["public", "extra"] });
    expect(res.status).toBe(200);
    const got = await res.json();
    expect(got.catalogError).toBeUndefined();
    expect(got.catalog.tables).toContainEqual(expect.objectContaining({ schema: "extra", name: "jobs", timeColumn: "finished_at" }));
  });

  test("an update without a version is a 400 naming it", async () => {
    const res = await call(fx.app, admin, "PUT", `/api/sources/${fx.source.id}`, { name: "x" });
    expect(res.status).toBe(400);
    expect((await res.json()).issues).toEqual([expect.objectContaining({ path: "version" })]);
  });

  test("a source a dashboard reads cannot be deleted; an unused one can", async () => {
    const s = await fx.newSource("in use");
    const d = await saveDashboard(
      { pool: fx.pool, guard: fx.guard },
      { workspaceId: fx.roles.workspace.id, userSub: "u", spec: dashboardSpec(s.id) },
    );
    const refused = await call(fx.app, admin, "DELETE", `/api/sources/${s.id}`);
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ code: "conflict", dashboards: [d.id] });
    expect(await getSource(fx.pool, s.id)).not.toBeNull();

    const unused = await fx.newSource("unused");
    expect((await call(fx.app, admin, "DELETE", `/api/sources/${unused.id}`)).status).toBe(204);
    expect((await call(fx.app, admin, "GET", `/api/sources/${unused.id}`)).status).toBe(404);
  });
});

describe("connection test and catalog refresh", () => {
  test("test connects with the source's credentials", async () => {
    const res = await call(fx.app, admin, "POST", `/api/sources/${fx.source.id}/test`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      ok: true,
      elapsedMs: expect.any(Number),
      limits: { statementTimeout: expect.any(String), tempFileLimit: "-1", workMem: "4MB" },
      warnings: [expect.stringContaining("no temp_file_limit")],
    });
  });

  test("test of a source whose credentials are gone names the problem", async () => {
    const s = await createSource(fx.pool, fx.roles.workspace.id, {
      ...body({ name: "creds gone", secretRef: "NOCREDS" }),
      sslmode: "disable",
    });
    const res = await call(fx.app, admin, "POST", `/api/sources/${s.id}/test`);
    expect(res.status).toBe(502);
    expect((await res.json()).code).toBe("source_credentials_missing");
  });

  test("refresh re-reads tables: a new table appears and the refresh time moves", async () => {
    const s = await fx.newSource("refreshing");
    await saveCatalog(fx.pool, s.id, FIXTURE_CATALOG, new Date(fx.now() - 40 * 86_400_000));
    await fx.metrics.admin(`CREATE TABLE IF NOT EXISTS deploys (at date NOT NULL, service text NOT NULL)`);
    await fx.metrics.admin(`GRANT SELECT ON deploys TO PUBLIC`);
    const res = await call(fx.app, admin, "POST", `/api/sources/${s.id}/catalog/refresh`);
    expect(res.status).toBe(200);
    const got = await res.json();
    expect(got.catalogStatus).toBe("fresh");
    const deploys = got.catalog.tables.find((t: { name: string }) => t.name === "deploys");
    expect(deploys).toMatchObject({ schema: "public", timeColumn: "at" });
    // The role's limits are recorded with the catalog and the admin's view carries the same warning as the test.
    expect(got.limits).toMatchObject({ tempFileLimit: "-1", workMem: "4MB" });
    expect(got.warnings).toEqual([expect.stringContaining("no temp_file_limit")]);
    const listed = await call(fx.app, admin, "GET", `/api/sources/${s.id}`);
    expect((await listed.json()).warnings).toEqual(got.warnings);
  });
});
