import { afterAll, beforeAll, expect, test } from "vitest";
import { createTestConfigStore } from "../testing/pg.ts";
import { createWorkspace, getWorkspace, getWorkspaceLimits, listWorkspacesForGroups, setWorkspaceLimits } from "./store.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
beforeAll(async () => {
  store = await createTestConfigStore();
});
afterAll(() => store.close());

test("create, get, and list by groups with the highest role per workspace", async () => {
  const a = await createWorkspace(store.pool, { name: "Alpha", viewer_group: "a-v", editor_group: "a-e", admin_group: "a-a" });
  const b = await createWorkspace(store.pool, { id: "ws_fixed", name: "Beta", viewer_group: "b-v", editor_group: "b-e", admin_group: "shared" });
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
  expect(await getWorkspaceLimits(store.pool, ws.id)).toEqual({ workspace_id: ws.id, llm_rate_per_minute: null, llm_daily_token_budget: null });
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
