import { afterAll, beforeAll, expect, test } from "vitest";
import { createTestConfigStore } from "../testing/pg.ts";
import {
  createWorkspace,
  deleteWorkspace,
  getWorkspace,
  getWorkspaceLimits,
  getWorkspaceSummary,
  isAdminOfAnyWorkspace,
  listAllWorkspaces,
  listWorkspacesForGroups,
  setWorkspaceLimits,
  updateWorkspace,
} from "./store.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(() => store.close());

test("create, get, and list by groups with the highest role per workspace", async () => {
  const a = await createWorkspace(store.pool, { name: "Alpha", viewer_group: "a-v", editor_group: "a-e", admin_group: "a-a" });
  const b = await createWorkspace(store.pool, {
    id: "ws_fixed",
    name: "Beta",
    viewer_group: "b-v",
    editor_group: "b-e",
    admin_group: "shared",
  });
  await createWorkspace(store.pool, { name: "Gamma", viewer_group: "g-v", editor_group: "g-e", admin_group: "g-a" });
  expect(a.id).toMatch(/^ws_/);
  expect(b.id).toBe("ws_fixed");
  expect(await getWorkspace(store.pool, "ws_fixed")).toMatchObject({ name: "Beta", admin_group: "shared" });
  expect(await getWorkspace(store.pool, "ws_nope")).toBeNull();

  const mine = await listWorkspacesForGroups(store.pool, ["a-v", "a-e", "shared", "unrelated"]);
  expect(mine.map((w) => [w.name, w.role])).toEqual([
    ["Alpha", "editor"],
    ["Beta", "admin"],
  ]);
  expect(await listWorkspacesForGroups(store.pool, [])).toEqual([]);
});

test("limits: an empty row on creation, overrides set and cleared, null for a missing workspace", async () => {
  const ws = await createWorkspace(store.pool, { name: "Limits", viewer_group: "l-v", editor_group: "l-e", admin_group: "l-a" });
  expect(await getWorkspaceLimits(store.pool, ws.id)).toEqual({
    workspace_id: ws.id,
    llm_rate_per_minute: null,
    llm_daily_token_budget: null,
  });
  expect(await setWorkspaceLimits(store.pool, ws.id, { llm_rate_per_minute: 5, llm_daily_token_budget: 3_000_000_000 })).toEqual({
    workspace_id: ws.id,
    llm_rate_per_minute: 5,
    llm_daily_token_budget: 3_000_000_000,
  });
  await setWorkspaceLimits(store.pool, ws.id, { llm_rate_per_minute: null, llm_daily_token_budget: 10 });
  expect(await getWorkspaceLimits(store.pool, ws.id)).toMatchObject({ llm_rate_per_minute: null, llm_daily_token_budget: 10 });
  expect(await getWorkspaceLimits(store.pool, "ws_nope")).toBeNull();
  expect(await setWorkspaceLimits(store.pool, "ws_nope", { llm_rate_per_minute: 1, llm_daily_token_budget: 1 })).toBeNull();
});

test("listAllWorkspaces and getWorkspaceSummary count what each workspace holds", async () => {
  const ws = await createWorkspace(store.pool, { name: "Counted", viewer_group: "c-v", editor_group: "c-e", admin_group: "c-a" });
  await store.pool.query(
    "INSERT INTO sources (id, workspace_id, name, host, database, secret_ref) VALUES ('src_counted', $1, 'm', 'db.example.com', 'm', 'M')",
    [ws.id],
  );
  await store.pool.query(
    `INSERT INTO dashboards (id, workspace_id, spec, created_by, updated_by) VALUES ('db_counted_1', $1, '{}', 't', 't'), ('db_counted_2', $1, '{}', 't', 't')`,
    [ws.id],
  );
  expect(await getWorkspaceSummary(store.pool, ws.id)).toMatchObject({ id: ws.id, name: "Counted", dashboards: 2, sources: 1 });
  const all = await listAllWorkspaces(store.pool);
  expect(all.find((w) => w.id === ws.id)).toMatchObject({ dashboards: 2, sources: 1 });
  expect(await getWorkspaceSummary(store.pool, "ws_nope")).toBeNull();
});

test("updateWorkspace changes only what the patch names, and a patch that changes nothing writes nothing", async () => {
  const ws = await createWorkspace(store.pool, { name: "Patch", viewer_group: "p-v", editor_group: "p-e", admin_group: "p-a" });
  const xmin = async () => (await store.pool.query("SELECT xmin::text AS x FROM workspaces WHERE id = $1", [ws.id])).rows[0].x as string;
  const before = await xmin();
  expect(await updateWorkspace(store.pool, ws.id, { name: "Patch", editor_group: "p-e" })).toMatchObject({ name: "Patch" });
  // xmin is the id of the transaction that last wrote the row: unchanged means not rewritten.
  expect(await xmin()).toBe(before);
  expect(await updateWorkspace(store.pool, ws.id, { admin_group: "p-admins" })).toMatchObject({
    name: "Patch",
    viewer_group: "p-v",
    editor_group: "p-e",
    admin_group: "p-admins",
  });
  expect(await xmin()).not.toBe(before);
  expect(await updateWorkspace(store.pool, "ws_nope", { name: "x" })).toBeNull();
});

test("createWorkspace with an id in use is a conflict, not a database error", async () => {
  await createWorkspace(store.pool, { id: "ws_taken", name: "A", viewer_group: "", editor_group: "", admin_group: "" });
  await expect(
    createWorkspace(store.pool, { id: "ws_taken", name: "B", viewer_group: "", editor_group: "", admin_group: "" }),
  ).rejects.toMatchObject({
    code: "conflict",
  });
});

test("deleteWorkspace: refused while it holds anything unless forced; forced, it takes everything with it", async () => {
  const ws = await createWorkspace(store.pool, { name: "Doomed", viewer_group: "d-v", editor_group: "d-e", admin_group: "d-a" });
  await store.pool.query(
    "INSERT INTO sources (id, workspace_id, name, host, database, secret_ref) VALUES ('src_doomed', $1, 'm', 'db.example.com', 'm', 'M')",
    [ws.id],
  );
  await store.pool.query(
    "INSERT INTO dashboards (id, workspace_id, spec, created_by, updated_by) VALUES ('db_doomed', $1, '{}', 't', 't')",
    [ws.id],
  );
  await store.pool.query(
    "INSERT INTO chat_messages (workspace_id, dashboard_id, user_sub, role, content) VALUES ($1, 'db_doomed', 'u', 'user', 'hi')",
    [ws.id],
  );
  await expect(deleteWorkspace(store.pool, ws.id)).rejects.toMatchObject({ code: "conflict", extra: { dashboards: 1, sources: 1 } });
  expect(await getWorkspace(store.pool, ws.id)).not.toBeNull();

  expect(await deleteWorkspace(store.pool, ws.id, { force: true })).toEqual({ dashboards: ["db_doomed"], sources: ["src_doomed"] });
  const left = await store.pool.query(
    `SELECT (SELECT count(*) FROM workspaces WHERE id = $1) + (SELECT count(*) FROM workspace_limits WHERE workspace_id = $1)
          + (SELECT count(*) FROM chat_messages WHERE workspace_id = $1) AS n`,
    [ws.id],
  );
  expect(Number(left.rows[0].n)).toBe(0);
  await expect(deleteWorkspace(store.pool, ws.id)).rejects.toMatchObject({ code: "not_found" });
  const empty = await createWorkspace(store.pool, { name: "Empty", viewer_group: "", editor_group: "", admin_group: "" });
  expect(await deleteWorkspace(store.pool, empty.id)).toEqual({ dashboards: [], sources: [] });
});

test("isAdminOfAnyWorkspace: a group naming some workspace's admins, not a revoked workspace; a token by its own role", async () => {
  const ws = await createWorkspace(store.pool, { name: "Admins", viewer_group: "adm-v", editor_group: "adm-e", admin_group: "adm-a" });
  await createWorkspace(store.pool, { name: "No admins", viewer_group: "none-v", editor_group: "none-e", admin_group: "" });
  expect(await isAdminOfAnyWorkspace(store.pool, { groups: ["adm-a"] })).toBe(true);
  expect(await isAdminOfAnyWorkspace(store.pool, { groups: ["adm-v", "adm-e", "none-v"] })).toBe(false);
  // An empty admin group grants the role to nobody, even to a caller holding an empty group name.
  expect(await isAdminOfAnyWorkspace(store.pool, { groups: [""] })).toBe(false);
  expect(await isAdminOfAnyWorkspace(store.pool, { groups: [] })).toBe(false);
  expect(await isAdminOfAnyWorkspace(store.pool, { groups: ["adm-a"], revokedWorkspaces: [ws.id] })).toBe(false);
  const token = (role: "viewer" | "admin") => ({ groups: [], token: { id: "tok_x", workspaceId: ws.id, role } });
  expect(await isAdminOfAnyWorkspace(store.pool, token("admin"))).toBe(true);
  expect(await isAdminOfAnyWorkspace(store.pool, token("viewer"))).toBe(false);
});
