import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { refreshCatalog } from "../lib/catalog-refresh/refresh.ts";
import { type ProvisionDeps, applyProvisioning } from "../lib/provisioning/apply.ts";
import { runProvisionCli } from "../lib/provisioning/cli.ts";
import { parseProvisioningDocument, parseProvisioningText } from "../lib/provisioning/document.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "./testing/api-fixture.ts";

// `npm run provision -- --export ws_…`: a workspace built through the API comes out as a provisioning file that
// applies with 0 changes to the same store and recreates the workspace in an empty one.

let fx: ApiFixture;
let empty: Awaited<ReturnType<typeof createTestConfigStore>>;
const depsOn = (pool: ApiFixture["pool"]): ProvisionDeps => ({
  pool,
  guard: fx.guard,
  runner: fx.runner,
  refreshCatalog: (s, db) => refreshCatalog({ db, runner: fx.runner }, s),
  config: fx.config,
});
const opts = () => ({ minRefreshIntervalMs: fx.config.MIN_REFRESH_INTERVAL_MS, defaultTime: { from: "now-24h", to: "now" } });

beforeAll(async () => {
  fx = await createApiFixture();
  empty = await createTestConfigStore();
});
afterAll(async () => {
  await empty.close();
  await fx.close();
});

/** Runs the CLI's --export against `pool` and returns its stdout, stderr and exit code. */
async function exportCli(args: string[], pool = fx.pool) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runProvisionCli(args, { config: fx.config, pool }, { stdout: (l) => out.push(l), stderr: (l) => err.push(l) });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** The rows that make up a workspace, without what a store sets by itself (timestamps, authors, catalogs, versions). */
async function shape(pool: ApiFixture["pool"], ws: string) {
  const q = async (sql: string) => (await pool.query(sql, [ws])).rows;
  return {
    workspace: await q("SELECT id, name, viewer_group, editor_group, admin_group FROM workspaces WHERE id = $1"),
    sources: await q(
      "SELECT id, name, host, port, database, sslmode, secret_ref, schemas, notes, time_column_overrides FROM sources WHERE workspace_id = $1 ORDER BY id",
    ),
    dashboards: await q("SELECT id, spec FROM dashboards WHERE workspace_id = $1 ORDER BY id"),
  };
}

describe("export", () => {
  test("a workspace built through the API exports, applies to the same store with 0 changes, and recreates it in an empty store", async () => {
    const ws = fx.roles.workspace.id;
    const admin = fx.roles.cookies.admin;
    await call(fx.app, admin, "PUT", `/api/sources/${fx.source.id}`, { version: 1, notes: "Requests table: one row per request" });
    for (const title of ["Traffic", "Errors"]) {
      const spec = dashboardSpec(fx.source.id, { title });
      const res = await call(fx.app, admin, "POST", `/api/workspaces/${ws}/dashboards`, { spec });
      expect(res.status).toBe(201);
    }

    const exported = await exportCli(["--export", ws]);
    expect(exported.stderr).toBe("");
    expect(exported.code).toBe(0);
    expect(exported.stdout).toMatch(/^# Pulseboard provisioning file: workspace /);
    expect(exported.stdout).not.toMatch(/password|METRICS_PASSWORD/i);
    const doc = parseProvisioningDocument(parseProvisioningText(exported.stdout, "export"), opts());
    expect(doc.workspaces[0]!.dashboards).toHaveLength(2);

    const same = await applyProvisioning(depsOn(fx.pool), doc);
    expect(same.changes).toEqual([]);
    // The workspace, its one source and two dashboards.
    expect(same.unchanged).toBe(1 + 1 + 2);

    const created = await applyProvisioning(depsOn(empty.pool), doc);
    expect(created.changes.map((c) => c.action)).toEqual(["created", "created", "created", "created"]);
    expect(await shape(empty.pool, ws)).toEqual(await shape(fx.pool, ws));
    // And the recreated workspace exports to the same file (but for the time in its header).
    const again = await exportCli(["--export", ws], empty.pool);
    const body = (t: string) => t.split("\n").slice(2).join("\n");
    expect(body(again.stdout)).toBe(body(exported.stdout));
  });

  test("a workspace with 1,000 dashboards exports in one read and applies back with 0 changes", async () => {
    const ws = fx.roles.otherWorkspace.id;
    const spec = JSON.stringify(dashboardSpec(fx.otherSource.id));
    await fx.pool.query(
      `INSERT INTO dashboards (id, workspace_id, spec, created_by, updated_by)
       SELECT 'db_bulk_' || g, $1, $2::jsonb, 'seed', 'seed' FROM generate_series(1, 1000) g`,
      [ws, spec],
    );
    const exported = await exportCli(["--export", ws]);
    expect(exported.code).toBe(0);
    const doc = parseProvisioningDocument(parseProvisioningText(exported.stdout, "export"), opts());
    expect(doc.workspaces[0]!.dashboards).toHaveLength(1000);
    const report = await applyProvisioning(depsOn(fx.pool), doc);
    expect(report.changes).toEqual([]);
  });

  test.each([
    [["--export", "ws_missing"], 1, /^provision failed: There is no workspace ws_missing in this config store\.$/],
    [["--export", "not a workspace"], 2, /^provision: --export needs a workspace id/],
    [["--export", "ws_x", "file.yaml"], 2, /^provision: --export takes a workspace id and nothing else/],
  ])("%j: exit %d with one clear line", async (args, code, message) => {
    const r = await exportCli(args);
    expect(r.code).toBe(code);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe("");
  });
});
