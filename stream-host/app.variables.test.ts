// A stream's variables on a real PostgreSQL through the real guarded runner: `var-NAME` values are checked against
// each variable's options (a query variable's from its guarded SQL, read through the stream host's one options
// cache), refused values are a 400 naming the variable before any stream opens, and panels bind the view's values.
import fc from "fast-check";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseConfig } from "../lib/config/parse.ts";
import type { DashboardSpec } from "../lib/dashboards/spec.ts";
import type { PanelUpdate, SnapshotFrame } from "../lib/live/frames.ts";
import { createMetrics } from "../lib/metrics/metrics.ts";
import { type QueryRunner, createQueryRunner } from "../lib/query/runner.ts";
import { createSecretResolver } from "../lib/secrets/resolver.ts";
import { createSource, saveCatalog } from "../lib/sources/index.ts";
import { createGuard, loadGuardParser } from "../lib/sql-guard/index.ts";
import { newId } from "../lib/store/ids.ts";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";
import { createWorkspace } from "../lib/workspaces/store.ts";
import { createTestHost } from "./testing/fixture.ts";
import { webStreamReader } from "./testing/sse-parse.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let metricsUrl: string;
let runner: QueryRunner;
let env: Record<string, string>;
let workspace: Awaited<ReturnType<typeof createWorkspace>>;
let sourceId: string;

/** The test host's manual clock starts here (createManualTimers' default). */
const T0 = 1_700_000_000_000;
/** Rows ten minutes before T0: checkout 3, search 2, billing 1. */
const ROWS: [string, number][] = [
  ["checkout", 3],
  ["search", 2],
  ["billing", 1],
];
const OPTIONS_SQL = "SELECT DISTINCT service FROM items WHERE $__timeFilter(ts) ORDER BY 1";
const COUNT_SQL = "SELECT count(*)::int AS n FROM items WHERE $__timeFilter(ts) AND service IN ($service)";

beforeAll(async () => {
  await loadGuardParser();
  store = await createTestConfigStore();
  metricsUrl = (await createDatabase("metrics")).url;
  const { default: pg } = await import("pg");
  const admin = new pg.Client({ connectionString: metricsUrl });
  await admin.connect();
  await admin.query("CREATE TABLE items (ts timestamptz NOT NULL, service text NOT NULL)");
  for (const [service, n] of ROWS) {
    await admin.query("INSERT INTO items SELECT to_timestamp($1::float8 / 1000), $2 FROM generate_series(1, $3)", [
      T0 - 600_000,
      service,
      n,
    ]);
  }
  await admin.end();

  const tag = newId("ws").slice(3, 11);
  workspace = await createWorkspace(store.pool, {
    name: `vars ${tag}`,
    viewer_group: `viewers-${tag}`,
    editor_group: `editors-${tag}`,
    admin_group: `admins-${tag}`,
  });
  const u = new URL(metricsUrl);
  const source = await createSource(store.pool, workspace.id, {
    name: "metrics",
    host: u.hostname,
    port: Number(u.port),
    database: u.pathname.slice(1),
    sslmode: "disable",
    secretRef: "METRICS",
  });
  sourceId = source.id;
  await saveCatalog(
    store.pool,
    source.id,
    {
      tables: [
        {
          schema: "public",
          name: "items",
          timeColumn: "ts",
          columns: [
            { name: "ts", type: "timestamp with time zone" },
            { name: "service", type: "text" },
          ],
        },
      ],
    },
    new Date(),
  );
  env = {
    SOURCE_SECRET_REFS: `METRICS:${workspace.id}`,
    // The metrics database shares the loopback test server with the config store: allowed explicitly.
    SOURCE_ALLOWED_HOSTS: u.hostname,
  };
  const { config } = parseConfig({ DATABASE_URL: store.url, NODE_ENV: "test", QUERY_TIMEOUT_SECONDS: "10", ...env });
  runner = createQueryRunner({
    config,
    metrics: createMetrics(new Registry(), { defaultCollectors: false }),
    guard: createGuard(),
    secrets: createSecretResolver({
      config,
      env: { METRICS_USERNAME: decodeURIComponent(u.username), METRICS_PASSWORD: decodeURIComponent(u.password) },
    }),
  });
});

afterAll(async () => {
  await runner?.closeAll();
  await store?.close();
});

async function seedSpec(s: DashboardSpec): Promise<string> {
  const id = newId("db");
  await store.pool.query(
    "INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by) VALUES ($1, $2, $3, 1, 'test', 'test')",
    [id, workspace.id, JSON.stringify(s)],
  );
  return id;
}

/** A host on the real runner that counts the statements it is handed, by SQL. */
async function hostFor(s: DashboardSpec) {
  const dashboardId = await seedSpec(s);
  const runs = new Map<string, number>();
  const counting: QueryRunner = {
    ...runner,
    run: (req) => {
      runs.set(req.sql, (runs.get(req.sql) ?? 0) + 1);
      return runner.run(req);
    },
  };
  const t = createTestHost({ url: store.url, pool: store.pool, env, host: { runPanel: undefined, queryRunner: counting } });
  const cookie = await t.cookieFor([workspace.viewer_group]);
  const open = async (q: string) => {
    const res = await t.app.request(`/api/dashboards/${dashboardId}/stream${q ? `?${q}` : ""}`, { headers: { cookie } });
    return { res, reader: res.status === 200 && res.body ? webStreamReader(res.body) : null };
  };
  return { t, dashboardId, open, runs: (sql: string) => runs.get(sql) ?? 0 };
}

type Reader = ReturnType<typeof webStreamReader>;

/** Reads frames until a panel frame of each of `ids` has arrived; the latest of each. */
async function panelFrames(reader: Reader, ...ids: string[]): Promise<Record<string, PanelUpdate>> {
  const got: Record<string, PanelUpdate> = {};
  while (!ids.every((id) => Object.hasOwn(got, id))) {
    const f = await reader.next();
    if (f === null) throw new Error("the stream ended");
    if (f.event !== "panel") continue;
    const u = JSON.parse(f.data ?? "null") as PanelUpdate;
    got[u.panelId] = u;
  }
  return got;
}

const rows = (u: PanelUpdate) => ("result" in u ? u.result.rows : undefined);
const errorOf = (u: PanelUpdate) => ("error" in u ? u.error : undefined);

/** The rows of the next frame of panel `id`. */
async function rowsOf(reader: Reader, id: string) {
  return rows((await panelFrames(reader, id))[id]);
}

const serviceSpec = (): DashboardSpec => ({
  title: "Variables",
  refreshIntervalMs: 5000,
  time: { from: "now-1h", to: "now" },
  variables: [
    { name: "service", type: "query", sourceId, sql: OPTIONS_SQL, multi: true, includeAll: true },
    { name: "env", type: "custom", values: ["prod", "staging"], default: "staging" },
  ],
  panels: [
    { id: "n", title: "Requests", type: "stat", sourceId, sql: COUNT_SQL },
    { id: "env", title: "Env", type: "stat", sourceId, sql: "SELECT $env::text AS env" },
  ],
});

describe("a stream's variables against their options", () => {
  test.each([
    ["a value outside a query variable's options", "var-service=shipping", "var-service"],
    ["one bad value among good ones", "var-service=checkout&var-service=nope", "var-service"],
    ["a value holding SQL", `var-service=${encodeURIComponent("checkout' OR '1'='1")}`, "var-service"],
    ["a value outside a custom variable's values", "var-env=dev", "var-env"],
    ["All where not offered", "var-env=%24__all", "var-env"],
    ["several values where one is taken", "var-env=prod&var-env=staging", "var-env"],
  ])("%s is a 400 naming the variable, and no stream opens", async (_name, q, path) => {
    const { t, open } = await hostFor(serviceSpec());
    const { res } = await open(q);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = (await res.json()) as { code: string; detail: string; issues?: { path: string }[] };
    expect(body.code).toBe("validation_failed");
    expect(body.detail).toContain(path);
    expect(body.detail).not.toContain("OR '1'");
    expect(t.host.hub.subscribers).toBe(0);
  });

  test("chosen values, All and the defaults bind on PostgreSQL; the options query runs once for every view and viewer", async () => {
    const { t, open, runs } = await hostFor(serviceSpec());
    const two = await open("var-service=search&var-service=checkout&var-env=prod");
    const all = await open("var-service=%24__all");
    const saved = await open("");
    const more = await Promise.all(
      Array.from({ length: 20 }, (_, i) => open(i % 2 ? "var-env=prod&var-service=checkout&var-service=search" : "var-service=%24__all")),
    );
    expect([two, all, saved, ...more].map((s) => s.res.status).every((s) => s === 200)).toBe(true);
    expect(t.host.hub.viewsOf(t.host.hub.activeIds()[0])).toBe(3);
    const snap = JSON.parse((await two.reader!.next())?.data ?? "null") as SnapshotFrame;
    // Values in one order, so equal selections share a view; those equal to the defaults left out.
    expect(snap.view.vars).toEqual({ env: ["prod"], service: ["checkout", "search"] });

    t.clock.advance(0); // every view's first tick
    expect(await rowsOf(two.reader!, "n")).toEqual([[5]]);
    expect(await rowsOf(all.reader!, "n")).toEqual([[6]]);
    // The saved view: no default, so the first option (billing); env at its default.
    const first = await panelFrames(saved.reader!, "n", "env");
    expect([rows(first.n), rows(first.env)]).toEqual([[[1]], [["staging"]]]);
    expect(runs(COUNT_SQL)).toBe(3);
    // The options: read once (checking the first request), reused for every later request and every tick.
    expect(runs(OPTIONS_SQL)).toBe(1);
    expect(t.host.variableOptions.size).toBe(1);

    // After one cadence the next tick reads them once more, whatever the number of views.
    t.clock.advance(5000);
    expect(await rowsOf(all.reader!, "n")).toEqual([[6]]);
    expect(await rowsOf(saved.reader!, "n")).toEqual([[1]]);
    expect(await rowsOf(two.reader!, "n")).toEqual([[5]]);
    expect(runs(OPTIONS_SQL)).toBe(2);
    for (const s of [two, all, saved, ...more]) await s.reader!.cancel();
  });

  test("property: any value set is admitted exactly when every value is an option; a refusal names the variable and opens nothing", async () => {
    const { t, open, runs } = await hostFor(serviceSpec());
    const options = ROWS.map(([service]) => service);
    const value = fc.oneof(
      fc.constantFrom(...options, "$__all", "checkout ", "CHECKOUT", "search'--", "$1", "${service}", ""),
      fc.string({ maxLength: 12 }).filter((v) => !v.includes("\u0000")),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(value, { minLength: 1, maxLength: 4 }), async (values) => {
        const q = values.map((v) => `var-service=${encodeURIComponent(v)}`).join("&");
        const { res, reader } = await open(q);
        // An empty value is a value like any other: not an option.
        const asked = [...new Set(values)];
        const ok = asked.includes("$__all") ? asked.length === 1 : asked.every((v) => options.includes(v));
        if (ok) {
          expect(res.status).toBe(200);
          await reader!.cancel();
        } else {
          expect(res.status).toBe(400);
          const body = (await res.json()) as { code: string; detail: string };
          expect(body.code).toBe("validation_failed");
          expect(body.detail).toContain("var-service");
        }
      }),
      { numRuns: 80 },
    );
    expect(t.host.hub.subscribers).toBe(0);
    // However many requests, the options were read once (one cadence: the manual clock did not move).
    expect(runs(OPTIONS_SQL)).toBe(1);
  });

  test("values equal to the defaults open the saved view", async () => {
    const { t, open } = await hostFor(serviceSpec());
    const a = await open("var-service=billing&var-env=staging");
    const b = await open("");
    const snap = JSON.parse((await a.reader!.next())?.data ?? "null") as SnapshotFrame;
    expect(snap.view).toMatchObject({ vars: {}, saved: true });
    expect(t.host.hub.viewsOf(t.host.hub.activeIds()[0])).toBe(1);
    for (const s of [a, b]) await s.reader!.cancel();
  });

  test("a query variable whose options fail: a view naming it is refused with the cause, only the panels using it fail", async () => {
    const broken: DashboardSpec = {
      title: "Broken variable",
      refreshIntervalMs: 5000,
      time: { from: "now-1h", to: "now" },
      variables: [{ name: "svc", type: "query", sourceId, sql: "SELECT DISTINCT service FROM items" }],
      panels: [
        {
          id: "uses",
          title: "Uses",
          type: "stat",
          sourceId,
          sql: "SELECT count(*)::int FROM items WHERE $__timeFilter(ts) AND service = $svc",
        },
        { id: "plain", title: "Plain", type: "stat", sourceId, sql: "SELECT count(*)::int FROM items WHERE $__timeFilter(ts)" },
      ],
    };
    const { t, open } = await hostFor(broken);
    const refused = await open("var-svc=checkout");
    // The guard refuses the variable's SQL (no time filter): the stream says so, naming the variable.
    expect(refused.res.status).toBe(422);
    expect(((await refused.res.json()) as { detail: string }).detail).toMatch(/^Variable svc: /);

    const saved = await open("");
    t.clock.advance(0);
    const { uses, plain } = await panelFrames(saved.reader!, "uses", "plain");
    expect(errorOf(uses)?.message).toMatch(/^Variable svc: /);
    expect(errorOf(uses)?.code).toBe("time");
    expect(rows(plain)).toEqual([[6]]);
    await saved.reader!.cancel();
  });
});
