import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "../../testing/api-fixture.ts";

// The history API as the editor page drives it: list, read, diff, restore; roles and workspaces are
// pinned for every persona by the role table (handlers/testing/api.security.cases.ts).

let fx: ApiFixture;
let editor: string;
let viewer: string;
let outsider: string;

beforeAll(async () => {
  fx = await createApiFixture({ env: { DASHBOARD_VERSION_RETENTION: "3" } });
  editor = fx.roles.cookies.editor!;
  viewer = fx.roles.cookies.viewer!;
  outsider = fx.roles.cookies.outsider!;
});
afterAll(() => fx.close());

async function create(spec: unknown = dashboardSpec(fx.source.id), message?: string) {
  const res = await call(fx.app, editor, "POST", `/api/workspaces/${fx.roles.workspace.id}/dashboards`, { spec, message });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; version: number };
}

async function update(id: string, version: number, spec: unknown, message?: string) {
  const res = await call(fx.app, editor, "PUT", `/api/dashboards/${id}`, { version, spec, message });
  expect(res.status).toBe(200);
  return (await res.json()) as { id: string; version: number };
}

describe("dashboard history", () => {
  test("every save is a version with who, when and its message; a viewer lists, reads and diffs", async () => {
    const d = await create(dashboardSpec(fx.source.id), "first cut");
    await update(d.id, 1, dashboardSpec(fx.source.id, { title: "Renamed" }), "better title");

    const list = await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}/versions`);
    expect(list.status).toBe(200);
    const body = await list.json();
    expect(body.retention).toBe(3);
    expect(body.versions).toEqual([
      expect.objectContaining({ version: 2, title: "Renamed", message: "better title", savedBy: fx.roles.users.editor.sub, panelCount: 2 }),
      expect.objectContaining({ version: 1, title: "HTTP traffic", message: "first cut", savedBy: fx.roles.users.editor.sub }),
    ]);
    expect(Date.parse(body.versions[0].savedAt)).not.toBeNaN();

    const one = await (await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}/versions/1`)).json();
    expect(one.spec.title).toBe("HTTP traffic");

    const diff = await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}/diff?from=1&to=2`);
    expect(diff.status).toBe(200);
    expect((await diff.json()).changes).toEqual([{ path: ["title"], kind: "changed", before: "HTTP traffic", after: "Renamed" }]);
  });

  test("restore saves the old spec as a new version; a viewer may not restore", async () => {
    const d = await create();
    const spec2 = dashboardSpec(fx.source.id);
    spec2.panels = spec2.panels.slice(0, 1);
    await update(d.id, 1, spec2);

    const denied = await call(fx.app, viewer, "POST", `/api/dashboards/${d.id}/versions/1/restore`, { version: 2 });
    expect(denied.status).toBe(403);

    const res = await call(fx.app, editor, "POST", `/api/dashboards/${d.id}/versions/1/restore`, { version: 2 });
    expect(res.status).toBe(200);
    const restored = await res.json();
    expect(restored.version).toBe(3);
    expect(restored.spec.panels).toHaveLength(2);
    const list = (await (await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}/versions`)).json()).versions;
    expect(list[0]).toMatchObject({ version: 3, message: "Restored version 1" });

    // Based on a stale version: 409, nothing restored.
    const stale = await call(fx.app, editor, "POST", `/api/dashboards/${d.id}/versions/2/restore`, { version: 2 });
    expect(stale.status).toBe(409);
    expect((await stale.json()).code).toBe("version_conflict");
  });

  test("a version that does not exist, or is past the retention, is 404", async () => {
    const d = await create();
    let v = 1;
    for (const title of ["b", "c", "d"]) v = (await update(d.id, v, dashboardSpec(fx.source.id, { title }))).version;
    const versions = (await (await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}/versions`)).json()).versions;
    expect(versions.map((x: { version: number }) => x.version)).toEqual([4, 3, 2]);
    const { rows } = await fx.pool.query("SELECT version FROM dashboard_versions WHERE dashboard_id = $1 ORDER BY version", [d.id]);
    expect(rows.map((r) => r.version)).toEqual([2, 3, 4]);

    for (const path of [`versions/1`, `versions/99`, `diff?from=1&to=4`, `diff?from=4&to=99`]) {
      const res = await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}/${path}`);
      expect(res.status, path).toBe(404);
      expect((await res.json()).detail).toMatch(/does not exist/);
    }
    const restore = await call(fx.app, editor, "POST", `/api/dashboards/${d.id}/versions/1/restore`, { version: 4 });
    expect(restore.status).toBe(404);
  });

  test.each([
    ["versions/0", 400],
    ["versions/abc", 400],
    ["versions/99999999999", 400],
    ["diff?from=1", 400],
    ["diff?from=-1&to=2", 400],
  ])("bad input %s is %i", async (path, status) => {
    const d = await create();
    expect((await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}/${path}`)).status).toBe(status);
  });

  test("another workspace's history is 404 to everyone but its own members", async () => {
    const d = await create();
    for (const [method, path, body] of [
      ["GET", `/api/dashboards/${d.id}/versions`, undefined],
      ["GET", `/api/dashboards/${d.id}/versions/1`, undefined],
      ["GET", `/api/dashboards/${d.id}/diff?from=1&to=1`, undefined],
      ["POST", `/api/dashboards/${d.id}/versions/1/restore`, { version: 1 }],
    ] as const) {
      expect((await call(fx.app, outsider, method, path, body)).status, path).toBe(404);
    }
  });

  test("restoring a version whose source has since been deleted is a 422 naming the panel and the source", async () => {
    const gone = await fx.newSource("to be deleted");
    const d = await create(dashboardSpec(gone.id));
    await update(d.id, 1, dashboardSpec(fx.source.id));
    const del = await call(fx.app, fx.roles.cookies.admin!, "DELETE", `/api/sources/${gone.id}`);
    expect(del.status).toBe(204);

    const res = await call(fx.app, editor, "POST", `/api/dashboards/${d.id}/versions/1/restore`, { version: 2 });
    expect(res.status).toBe(422);
    const problem = await res.json();
    expect(problem.code).toBe("guard_rejected");
    expect(problem.detail).toMatch(/^Version 1 cannot be restored as it is\..*requests \(source\)/);
    expect(problem.panels).toContainEqual(expect.objectContaining({ panelId: "requests", reason: "source" }));
    // Nothing was saved.
    expect((await (await call(fx.app, viewer, "GET", `/api/dashboards/${d.id}`)).json()).version).toBe(2);
  });

  test("deleting a dashboard deletes its history", async () => {
    const d = await create();
    expect((await call(fx.app, editor, "DELETE", `/api/dashboards/${d.id}`)).status).toBe(204);
    const { rows } = await fx.pool.query("SELECT 1 FROM dashboard_versions WHERE dashboard_id = $1", [d.id]);
    expect(rows).toHaveLength(0);
  });
});
