import type pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTestConfigStore } from "../testing/pg.ts";
import { rejection } from "../testing/rejection.ts";
import {
  catalogStatus,
  catalogVersion,
  countSources,
  createSource,
  deleteSource,
  getSource,
  getSourceInWorkspace,
  getSourceWorkspaceId,
  listSources,
  saveCatalog,
  sourceView,
  updateSource,
} from "./store.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let db: pg.Pool;

beforeAll(async () => {
  store = await createTestConfigStore();
  db = store.pool;
  await db.query(
    `INSERT INTO workspaces (id, name, viewer_group, editor_group, admin_group)
     VALUES ('ws_a', 'A', 'a-v', 'a-e', 'a-a'), ('ws_b', 'B', 'b-v', 'b-e', 'b-a')`,
  );
});
afterAll(() => store.close());

const input = { name: "Metrics", host: "db.internal", database: "metrics", secretRef: "METRICS" };

describe("sources store", () => {
  test("create applies defaults and starts without a catalog", async () => {
    const s = await createSource(db, "ws_a", input);
    expect(s).toMatchObject({
      workspaceId: "ws_a",
      port: 5432,
      sslmode: "prefer",
      schemas: ["public"],
      catalog: null,
      catalogRefreshedAt: null,
      timeColumnOverrides: [],
      version: 1,
    });
    expect(s.id).toMatch(/^src_/);
    expect(await getSource(db, s.id)).toEqual(s);
  });

  test("invalid input names every bad field", async () => {
    const err = await rejection(createSource(db, "ws_a", { ...input, host: "evil host;", secretRef: "../x", port: 70000 } as never));
    expect(err.code).toBe("validation_failed");
    const paths = (err.extra.issues as { path: string }[]).map((i) => i.path).sort();
    expect(paths).toEqual(["host", "port", "secretRef"]);
  });

  test("a source's workspace is read alone; a missing source has none", async () => {
    const s = await createSource(db, "ws_b", { ...input, name: "Owned by B" });
    expect(await getSourceWorkspaceId(db, s.id)).toBe("ws_b");
    expect(await getSourceWorkspaceId(db, "src_missing")).toBeNull();
    expect(await getSourceWorkspaceId(db, "")).toBeNull();
  });

  test("another workspace's source is invisible", async () => {
    const s = await createSource(db, "ws_a", { ...input, name: "Only A" });
    expect(await getSourceInWorkspace(db, "ws_b", s.id)).toBeNull();
    expect((await listSources(db, "ws_b")).map((x) => x.id)).not.toContain(s.id);
    expect(await deleteSource(db, "ws_b", s.id)).toBeNull();
    expect((await rejection(updateSource(db, "ws_b", s.id, 1, { name: "x" }))).code).toBe("not_found");
  });

  test("update changes only given fields, bumps the version, and refuses a stale base version", async () => {
    const s = await createSource(db, "ws_a", { ...input, schemas: ["metrics", "public"], port: 6543 });
    const u = await updateSource(db, "ws_a", s.id, 1, { name: "Renamed" });
    expect(u).toMatchObject({ name: "Renamed", port: 6543, schemas: ["metrics", "public"], version: 2 });
    const o = await updateSource(db, "ws_a", s.id, 2, {
      timeColumnOverrides: [{ schema: "public", table: "t", column: null }],
    });
    expect(o).toMatchObject({ name: "Renamed", version: 3, timeColumnOverrides: [{ schema: "public", table: "t", column: null }] });
    expect((await updateSource(db, "ws_a", s.id, 3, { notes: "n" })).timeColumnOverrides).toHaveLength(1);
    const err = await rejection(updateSource(db, "ws_a", s.id, 1, { name: "Lost update" }));
    expect(err.code).toBe("version_conflict");
    expect(err.extra).toEqual({ currentVersion: 4 });
  });

  test("saveCatalog stores the catalog without bumping the version; catalogVersion changes", async () => {
    const s = await createSource(db, "ws_a", input);
    const catalog = {
      tables: [{ schema: "public", name: "t", timeColumn: "ts", columns: [{ name: "ts", type: "date" }] }],
    };
    const saved = await saveCatalog(db, s.id, catalog, new Date("2026-01-01T00:00:00Z"));
    expect(saved).toMatchObject({ catalog, version: 1 });
    expect(catalogVersion(saved as never)).not.toBe(catalogVersion(s));
    expect(await saveCatalog(db, "src_missing", catalog, new Date())).toBeNull();
  });

  test("list is ordered by name and delete removes", async () => {
    await db.query("DELETE FROM sources");
    const b = await createSource(db, "ws_b", { ...input, name: "beta" });
    const a = await createSource(db, "ws_b", { ...input, name: "Alpha" });
    expect((await listSources(db, "ws_b")).map((s) => s.id)).toEqual([a.id, b.id]);
    expect(await deleteSource(db, "ws_b", a.id)).toBe(a.version);
    expect(await getSource(db, a.id)).toBeNull();
  });
});

describe("catalog status", () => {
  const day = 86_400_000;
  const refreshed = new Date(100 * day);
  const catalog = { tables: [] };

  test.each([
    ["no catalog", { catalog: null, catalogRefreshedAt: null }, 30, 100 * day, "never_refreshed"],
    ["fresh", { catalog, catalogRefreshedAt: refreshed }, 30, 130 * day, "fresh"],
    ["stale after the limit", { catalog, catalogRefreshedAt: refreshed }, 30, 130 * day + 1, "stale"],
    ["0 disables the age check", { catalog, catalogRefreshedAt: refreshed }, 0, 10_000 * day, "fresh"],
  ] as const)("%s", (_name, source, days, now, expected) => {
    expect(catalogStatus(source, days, now)).toBe(expected);
  });

  test("sourceView carries the flag", () => {
    const v = sourceView({ catalog, catalogRefreshedAt: refreshed } as never, 1, 200 * day);
    expect(v).toMatchObject({ catalogStatus: "stale", catalogStale: true });
  });
});

describe("sources per workspace", () => {
  test("concurrent creates cannot pass maxPerWorkspace together: the count and the insert share a per-workspace lock", async () => {
    await db.query(
      "INSERT INTO workspaces (id, name, viewer_group, editor_group, admin_group) VALUES ('ws_cap', 'Cap', 'c-v', 'c-e', 'c-a')",
    );
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => createSource(db, "ws_cap", { ...input, name: `capped ${i}` }, { maxPerWorkspace: 3 })),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(3);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => r.reason);
    expect(refused.map((e) => [e.code, e.status])).toEqual(Array(3).fill(["source_limit_reached", 409]));
    expect(await countSources(db, "ws_cap")).toBe(3);
    // Another workspace has its own count.
    await expect(createSource(db, "ws_b", { ...input, name: "elsewhere" }, { maxPerWorkspace: 3 })).resolves.toBeTruthy();
  });
});
