import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "./testing/api-fixture.ts";
import { saveDashboard } from "../lib/dashboards/save.ts";
import { getDashboard } from "../lib/dashboards/store.ts";
import { AppError } from "../lib/http/errors.ts";
import { type RecordingConnector, createRecordingConnector } from "../lib/query/testing/recording-connector.ts";
import { tableResolver } from "../lib/net/testing/table-resolver.ts";
import { refreshCatalog } from "../lib/catalog-refresh/refresh.ts";
import { adminUrl } from "../lib/testing/pg.ts";
import { PROVISIONING_USER, type ProvisionDeps, applyProvisioning } from "../lib/provisioning/apply.ts";
import { type DocumentOptions, loadProvisioningFile, parseProvisioningDocument } from "../lib/provisioning/document.ts";

// The metrics database lives on the run's embedded server; only it is really connected, every other address is
// recorded and refused without a packet, and names resolve through a table (never DNS).
const server = new URL(adminUrl());
const SERVER = { host: server.hostname, port: Number(server.port) };
const DNS: Record<string, string[]> = { "metadata.attacker.example": ["169.254.169.254"], "db.example.com": ["203.0.113.60"] };

let fx: ApiFixture;
let rec: RecordingConnector;
let deps: ProvisionDeps;
let opts: DocumentOptions;

beforeAll(async () => {
  rec = createRecordingConnector({ passThrough: (a) => a.host === SERVER.host && a.port === SERVER.port });
  fx = await createApiFixture({
    env: { SOURCE_ALLOWED_HOSTS: `${SERVER.host}:${SERVER.port}`, PLATFORM_ADMIN_GROUP: "platform" },
    runner: {
      connector: rec.connector,
      lookup: tableResolver(DNS).lookup,
    },
  });
  deps = {
    pool: fx.pool,
    guard: fx.guard,
    runner: fx.runner,
    refreshCatalog: (s, db) => refreshCatalog({ db, runner: fx.runner }, s),
    config: fx.config,
  };
  opts = { minRefreshIntervalMs: fx.config.MIN_REFRESH_INTERVAL_MS, defaultTime: { from: "now-24h", to: "now" } };
});
afterAll(() => fx.close());

const source = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: `Metrics ${id}`,
  host: fx.metrics.host,
  port: fx.metrics.port,
  database: fx.metrics.database,
  sslmode: "disable",
  secretRef: "METRICS",
  ...extra,
});
const groups = (p: string) => ({ viewer: `${p}-viewers`, editor: `${p}-editors`, admin: `${p}-admins` });

function shop(p: string, overrides: { title?: string; name?: string; sql?: string } = {}) {
  const spec = dashboardSpec(`src_${p}`, { title: overrides.title ?? "Shop traffic" }) as ReturnType<typeof dashboardSpec> & {
    panels: { sql: string }[];
  };
  if (overrides.sql) spec.panels[1].sql = overrides.sql;
  return {
    workspaces: [
      {
        id: `ws_${p}`,
        name: overrides.name ?? "Shop",
        groups: groups(p),
        sources: [source(`src_${p}`)],
        dashboards: [{ id: `db_${p}`, spec }],
      },
    ],
  };
}

const apply = (raw: unknown) => applyProvisioning(deps, parseProvisioningDocument(raw, opts));

/** Every row provisioning could have written for workspace `ws`, as stored (versions and updated_at included). */
async function rowsOf(ws: string) {
  const q = async (sql: string) => (await fx.pool.query(sql, [ws])).rows;
  return {
    workspaces: await q("SELECT * FROM workspaces WHERE id = $1"),
    limits: await q("SELECT * FROM workspace_limits WHERE workspace_id = $1"),
    sources: await q("SELECT * FROM sources WHERE workspace_id = $1 ORDER BY id"),
    dashboards: await q("SELECT * FROM dashboards WHERE workspace_id = $1 ORDER BY id"),
  };
}

async function failure(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe("apply and re-apply", () => {
  test("creates the workspace, its source (catalog read) and dashboard; the second apply changes nothing at all", async () => {
    const first = await apply(shop("idem"));
    expect(first.changes).toEqual([
      { kind: "workspace", id: "ws_idem", action: "created" },
      { kind: "source", id: "src_idem", action: "created" },
      { kind: "dashboard", id: "db_idem", action: "created" },
    ]);
    const stored = await rowsOf("ws_idem");
    expect(stored.sources[0].catalog_refreshed_at).toBeInstanceOf(Date);
    expect(stored.dashboards[0]).toMatchObject({ id: "db_idem", version: 1, created_by: PROVISIONING_USER });

    const second = await apply(shop("idem"));
    expect(second).toEqual({ changes: [], unchanged: 3 });
    expect(await rowsOf("ws_idem")).toEqual(stored);
  });

  test("a dashboard's variables are provisioned with it, and its query variable's SQL is guarded like a panel's", async () => {
    const doc = shop("vars");
    const spec = doc.workspaces[0].dashboards[0].spec;
    spec.panels[0].sql = "SELECT count(*) AS n FROM http_requests WHERE $__timeFilter(ts) AND service IN ($svc)";
    const variables = [
      {
        name: "svc",
        type: "query",
        sourceId: "src_vars",
        sql: "SELECT DISTINCT service FROM http_requests WHERE $__timeFilter(ts)",
        multi: true,
      },
    ];
    doc.workspaces[0].dashboards[0].spec = { ...spec, variables } as never;
    await apply(doc);
    expect((await getDashboard(fx.pool, "db_vars"))?.spec.variables).toEqual(variables);
    variables[0].sql = "SELECT usename FROM pg_catalog.pg_user";
    const err = (await apply(doc).catch((e: unknown) => e)) as AppError;
    expect(err).toMatchObject({ code: "guard_rejected", extra: { variables: [{ variable: "svc", reason: "catalog" }] } });
  });

  test("a member of the file's editor group sees the provisioned dashboard through the API", async () => {
    await apply(shop("members"));
    const editor = await fx.roles.mintCookie({ sub: "shop-editor", groups: ["members-editors"] });
    const list = await (await call(fx.app, editor, "GET", "/api/workspaces")).json();
    expect(list.workspaces).toEqual([{ id: "ws_members", name: "Shop", role: "editor" }]);
    const d = await (await call(fx.app, editor, "GET", "/api/dashboards/db_members")).json();
    expect(d).toMatchObject({ id: "db_members", workspaceId: "ws_members", version: 1, spec: { title: "Shop traffic" } });
  });

  test("a changed name, group and dashboard are updated in place (same ids, next version), and only they", async () => {
    await apply(shop("upd"));
    const before = await rowsOf("ws_upd");
    const changed = shop("upd", { name: "Shop (EU)", title: "Shop traffic, EU" });
    changed.workspaces[0].groups.admin = "shop-eu-admins";
    const report = await apply(changed);
    expect(report.changes).toEqual([
      { kind: "workspace", id: "ws_upd", action: "updated", fields: ["name", "admin_group"] },
      { kind: "dashboard", id: "db_upd", action: "updated", fields: ["spec"] },
    ]);
    expect(report.unchanged).toBe(1);
    const after = await rowsOf("ws_upd");
    expect(after.sources).toEqual(before.sources);
    expect(after.dashboards[0]).toMatchObject({ version: 2, updated_by: PROVISIONING_USER, spec: { title: "Shop traffic, EU" } });
    expect(after.workspaces[0]).toMatchObject({
      name: "Shop (EU)",
      admin_group: "shop-eu-admins",
      created_at: before.workspaces[0].created_at,
    });
  });

  test("an edit made in the UI is put back to the file's spec on the next apply (the file is the source of truth)", async () => {
    await apply(shop("ui"));
    await saveDashboard(
      { pool: fx.pool, guard: fx.guard },
      {
        workspaceId: "ws_ui",
        userSub: "someone",
        dashboardId: "db_ui",
        baseVersion: 1,
        spec: dashboardSpec("src_ui", { title: "edited" }),
      },
    );
    const report = await apply(shop("ui"));
    expect(report.changes).toEqual([{ kind: "dashboard", id: "db_ui", action: "updated", fields: ["spec"] }]);
    expect((await rowsOf("ws_ui")).dashboards[0]).toMatchObject({ version: 3, spec: { title: "Shop traffic" } });
  });

  test("notes the file leaves out stay as an admin wrote them; notes it names are the file's", async () => {
    await apply(shop("notes"));
    await fx.pool.query("UPDATE sources SET notes = 'written in the UI' WHERE id = 'src_notes'");
    expect((await apply(shop("notes"))).changes).toEqual([]);
    const withNotes = shop("notes");
    Object.assign(withNotes.workspaces[0].sources[0], { notes: "from the file" });
    expect((await apply(withNotes)).changes).toEqual([{ kind: "source", id: "src_notes", action: "updated", fields: ["notes"] }]);
  });

  test("two runs at once are serialized: one creates, the other finds everything in place", async () => {
    const [a, b] = await Promise.all([apply(shop("race")), apply(shop("race"))]);
    expect([a.changes.length, b.changes.length].sort()).toEqual([0, 3]);
    expect((await rowsOf("ws_race")).dashboards).toHaveLength(1);
  });
});

describe("removal is explicit", () => {
  test("an entry left out of the file stays; one listed under delete goes, and deleting it again is no change", async () => {
    await apply(shop("del"));
    expect(await apply({ workspaces: [] })).toEqual({ changes: [], unchanged: 0 });
    expect((await rowsOf("ws_del")).dashboards).toHaveLength(1);

    const report = await apply({ delete: { dashboards: ["db_del"], sources: ["src_del"], workspaces: ["ws_del"] } });
    expect(report.changes).toEqual([
      { kind: "dashboard", id: "db_del", action: "deleted" },
      { kind: "source", id: "src_del", action: "deleted" },
      { kind: "workspace", id: "ws_del", action: "deleted" },
    ]);
    expect((await rowsOf("ws_del")).workspaces).toEqual([]);
    expect(await apply({ delete: { dashboards: ["db_del"], sources: ["src_del"], workspaces: ["ws_del"] } })).toEqual({
      changes: [],
      unchanged: 0,
    });
  });

  test("a workspace that still holds dashboards or sources needs force; a source a panel reads is refused", async () => {
    await apply(shop("force"));
    const refused = await failure(apply({ delete: { workspaces: ["ws_force"] } }));
    expect(refused.code).toBe("conflict");
    expect(refused.detail).toBe(
      "workspace ws_force: it still has 1 dashboard(s) and 1 source(s): list them under delete too, or write {id: ws_force, force: true} to delete them with it.",
    );
    const inUse = await failure(apply({ delete: { sources: ["src_force"] } }));
    expect(inUse.detail).toBe("source src_force: dashboard(s) db_force still read it; change or delete them too.");
    expect((await apply({ delete: { workspaces: [{ id: "ws_force", force: true }] } })).changes).toEqual([
      { kind: "workspace", id: "ws_force", action: "deleted" },
    ]);
    expect(await rowsOf("ws_force")).toMatchObject({ workspaces: [], sources: [], dashboards: [] });
  });
});

describe("sources go through the API's host policy and connection test", () => {
  test("a host the policy refuses is an error naming the source; nothing is stored and nothing is connected", async () => {
    const attempts = rec.attempts.length;
    const doc = shop("refused");
    Object.assign(doc.workspaces[0].sources[0], { host: "metadata.attacker.example", port: 80 });
    doc.workspaces[0].dashboards = [];
    const err = await failure(apply(doc));
    expect(err.code).toBe("source_host_refused");
    expect(err.detail).toMatch(/^source src_refused: /);
    expect(err.extra.entity).toEqual({ kind: "source", id: "src_refused" });
    expect((await rowsOf("ws_refused")).sources).toEqual([]);
    expect(rec.attempts.length).toBe(attempts);
  });

  test("an unreachable source is source_unavailable naming the source, and the run stops before its dashboards", async () => {
    const doc = shop("down");
    Object.assign(doc.workspaces[0].sources[0], { host: "db.example.com" });
    const err = await failure(apply(doc));
    expect(err.code).toBe("source_unavailable");
    expect(err.detail).toMatch(/^source src_down: /);
    expect(err.detail).not.toContain("203.0.113.60");
    // One transaction: the workspace created before the failing source is not there either.
    expect(await rowsOf("ws_down")).toEqual({ workspaces: [], limits: [], sources: [], dashboards: [] });
    // Fixed and applied again: everything is created.
    expect((await apply(shop("down"))).changes.map((c) => `${c.action} ${c.id}`)).toEqual([
      "created ws_down",
      "created src_down",
      "created db_down",
    ]);
  });

  test("a secret_ref the workspace holds no grant for is grant_missing naming the source", async () => {
    const doc = shop("grant");
    Object.assign(doc.workspaces[0].sources[0], { secretRef: "BILLING" });
    const err = await failure(apply(doc));
    expect(err.code).toBe("grant_missing");
    expect(err.detail).toMatch(/^source src_grant: .*BILLING/);
  });

  test("a panel the guard refuses is guard_rejected naming the dashboard and panel, through the API's save path", async () => {
    const err = await failure(apply(shop("guarded", { sql: "SELECT pg_sleep(10) FROM http_requests WHERE $__timeFilter(ts)" })));
    expect(err.code).toBe("guard_rejected");
    expect(err.detail).toMatch(/^dashboard db_guarded: A panel was refused: errors \(function\)/);
    expect((await rowsOf("ws_guarded")).dashboards).toEqual([]);
  });

  test("a panel reading a source that is not in its workspace is refused like on the API", async () => {
    const doc = shop("nosrc");
    doc.workspaces[0].dashboards[0].spec.panels[0].sourceId = "src_elsewhere";
    const err = await failure(apply(doc));
    expect(err.detail).toMatch(/^dashboard db_nosrc: .*requests \(source\)/);
  });

  test("an id that belongs to another workspace is a conflict, not a move", async () => {
    await apply(shop("owner"));
    const doc = shop("thief");
    doc.workspaces[0].sources = [source("src_owner")];
    doc.workspaces[0].dashboards = [];
    const err = await failure(apply(doc));
    expect(err.code).toBe("conflict");
    expect(err.detail).toBe(
      "source src_owner: it belongs to workspace ws_owner; a source cannot move between workspaces (delete it there first).",
    );
  });
});

describe("the document", () => {
  const invalid = (raw: unknown) => {
    try {
      parseProvisioningDocument(raw, opts);
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      return (err as AppError).detail;
    }
    throw new Error("expected the document to be refused");
  };

  test.each([
    [
      "a workspace id without ws_",
      () => ({ workspaces: [{ ...shop("x").workspaces[0], id: "shop" }] }),
      "workspaces[shop].id: must be ws_",
    ],
    [
      "secret_ref spelled like the database column",
      () => {
        const d = shop("x");
        const { secretRef, ...rest } = d.workspaces[0].sources[0];
        d.workspaces[0].sources[0] = { ...rest, secret_ref: secretRef } as never;
        return d;
      },
      'workspaces[ws_x].sources[src_x]: Unrecognized key: "secret_ref"',
    ],
    [
      "an id declared twice",
      () => ({ workspaces: [shop("x").workspaces[0], { ...shop("x").workspaces[0], sources: [], dashboards: [] }] }),
      "ws_x is declared twice",
    ],
    [
      "an id both declared and deleted",
      () => ({ ...shop("x"), delete: { dashboards: ["db_x"] } }),
      "db_x is both declared and listed under delete",
    ],
    ["an unknown top-level key", () => ({ ...shop("x"), datasources: [] }), 'Unrecognized key: "datasources"'],
    [
      "a panel reading another workspace's source",
      () => ({
        workspaces: [shop("a").workspaces[0], { ...shop("b").workspaces[0], dashboards: [{ id: "db_b", spec: dashboardSpec("src_a") }] }],
      }),
      "workspaces[ws_b].dashboards[db_b].spec.panels[requests].sourceId: src_a is a source of another workspace",
    ],
    [
      "a query variable reading another workspace's source",
      () => {
        const d = shop("b");
        const variables = [{ name: "svc", type: "query", sourceId: "src_a", sql: "SELECT DISTINCT service FROM http_requests" }];
        d.workspaces[0].dashboards[0].spec = { ...d.workspaces[0].dashboards[0].spec, variables } as never;
        return { workspaces: [shop("a").workspaces[0], d.workspaces[0]] };
      },
      "workspaces[ws_b].dashboards[db_b].spec.variables[0].sourceId: src_a is a source of another workspace",
    ],
    [
      "a variable whose default is not one of its values",
      () => {
        const d = shop("x");
        const variables = [{ name: "env", type: "custom", values: ["prod"], default: "dev" }];
        d.workspaces[0].dashboards[0].spec = { ...d.workspaces[0].dashboards[0].spec, variables } as never;
        return d;
      },
      'workspaces[ws_x].dashboards[db_x].spec.variables[0].default: "dev" is not one of the values',
    ],
  ])("%s is refused, naming where", (_label, raw, expected) => {
    expect(invalid(raw())).toContain(expected);
  });

  test("an empty document is refused as such (an empty file is a mistake, not a no-op)", () => {
    expect(invalid(null)).toBe("The provisioning document is empty.");
  });

  test("a dashboard is validated by the API's spec schema (here: a refresh below MIN_REFRESH_INTERVAL_MS)", () => {
    const d = shop("x");
    (d.workspaces[0].dashboards[0].spec as { refreshIntervalMs: number }).refreshIntervalMs = 10;
    expect(invalid(d)).toContain("workspaces[ws_x].dashboards[db_x].spec.refreshIntervalMs: must not be below MIN_REFRESH_INTERVAL_MS");
  });

  test("YAML with dashboards in their own files (a bare spec, or a saved GET /api/dashboards/:id response)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pb-provision-"));
    await writeFile(join(dir, "traffic.json"), JSON.stringify(dashboardSpec("src_files")));
    await writeFile(
      join(dir, "saved.json"),
      JSON.stringify({ id: "db_whatever", version: 7, spec: dashboardSpec("src_files", { title: "Saved" }) }),
    );
    await writeFile(
      join(dir, "pulseboard.yaml"),
      `# comments are fine
workspaces:
  - id: ws_files
    name: Files
    groups: { viewer: files-viewers, editor: files-editors, admin: files-admins }
    sources:
      - id: src_files
        name: Metrics
        host: ${fx.metrics.host}
        port: ${fx.metrics.port}
        database: ${fx.metrics.database}
        sslmode: disable
        secretRef: METRICS
    dashboards:
      - id: db_files_traffic
        specFile: traffic.json
      - id: db_files_saved
        specFile: ./saved.json
`,
    );
    const doc = await loadProvisioningFile(join(dir, "pulseboard.yaml"), opts);
    expect(doc.workspaces[0].dashboards.map((d) => d.spec.title)).toEqual(["HTTP traffic", "Saved"]);
    const report = await applyProvisioning(deps, doc);
    expect(report.changes.map((c) => c.id)).toEqual(["ws_files", "src_files", "db_files_traffic", "db_files_saved"]);

    await writeFile(join(dir, "broken.yaml"), "workspaces:\n  - id: ws_b\n    name: [unclosed\n");
    const yamlErr = await failure(loadProvisioningFile(join(dir, "broken.yaml"), opts));
    expect(yamlErr.detail).toMatch(/broken\.yaml line \d+, column \d+: /);
    await writeFile(
      join(dir, "missing.yaml"),
      "workspaces:\n  - id: ws_m\n    name: M\n    groups: {viewer: a, editor: b, admin: c}\n    dashboards:\n      - id: db_m\n        specFile: nope.json\n",
    );
    expect((await failure(loadProvisioningFile(join(dir, "missing.yaml"), opts))).detail).toBe(
      "dashboard db_m: specFile nope.json: no such file",
    );
  });
});

describe("one transaction", () => {
  test("a failure halfway leaves nothing of the run applied: earlier updates are rolled back, and the audit trail has none of them", async () => {
    await apply(shop("atomic"));
    const before = await rowsOf("ws_atomic");
    const audited = (await fx.pool.query("SELECT count(*)::int AS n FROM audit_log WHERE workspace_id = 'ws_atomic'")).rows[0].n;
    const doc = shop("atomic", { name: "Renamed", title: "Changed title" });
    // A second dashboard after the changed one, whose panel the guard refuses: the run fails on it.
    const bad = shop("atomic", { sql: "SELECT pg_sleep(10) FROM http_requests WHERE $__timeFilter(ts)" }).workspaces[0].dashboards[0];
    doc.workspaces[0].dashboards.push({ ...bad, id: "db_atomic_bad" });
    const err = await failure(apply(doc));
    expect(err.detail).toMatch(/^dashboard db_atomic_bad: /);
    expect(await rowsOf("ws_atomic")).toEqual(before);
    expect((await fx.pool.query("SELECT count(*)::int AS n FROM audit_log WHERE workspace_id = 'ws_atomic'")).rows[0].n).toBe(audited);
  });

  test("each change is in the audit trail as system:provisioning, with the versions", async () => {
    await apply(shop("trail"));
    await apply(shop("trail", { title: "Second" }));
    const { rows } = await fx.pool.query(
      "SELECT actor_kind, actor_id, action, target_id, before_version, after_version FROM audit_log WHERE workspace_id = 'ws_trail' ORDER BY id",
    );
    expect(rows).toEqual([
      {
        actor_kind: "system",
        actor_id: "provisioning",
        action: "workspace.create",
        target_id: "ws_trail",
        before_version: null,
        after_version: null,
      },
      {
        actor_kind: "system",
        actor_id: "provisioning",
        action: "source.create",
        target_id: "src_trail",
        before_version: null,
        after_version: 1,
      },
      {
        actor_kind: "system",
        actor_id: "provisioning",
        action: "dashboard.create",
        target_id: "db_trail",
        before_version: null,
        after_version: 1,
      },
      {
        actor_kind: "system",
        actor_id: "provisioning",
        action: "dashboard.update",
        target_id: "db_trail",
        before_version: 1,
        after_version: 2,
      },
    ]);
  });
});
