// The guard's parser loads on the first loadGuardParser() call, not when the module is imported; until then
// check() fails closed with `structure` and caches nothing. Its own test file, so nothing has loaded the
// parser in this process before it runs.
import { describe, expect, test } from "vitest";
import type { Catalog } from "../catalog/types.ts";
import { createGuard, loadGuardParser } from "./index.ts";

const CATALOG: Catalog = { tables: [{ schema: "public", name: "requests", timeColumn: null, columns: [{ name: "n", type: "integer" }] }] };

describe("the guard before and after its parser loads", () => {
  test("refuses with structure before the load, accepts the same statement and version after it", async () => {
    const guard = createGuard({});
    const before = guard.check("SELECT n FROM requests", CATALOG, "v1");
    expect(before).toEqual({ ok: false, reason: "structure", message: "the SQL parser is not loaded yet (await loadGuardParser() first)" });

    const load = loadGuardParser();
    expect(loadGuardParser()).toBe(load);
    await load;
    expect(guard.check("SELECT n FROM requests", CATALOG, "v1")).toMatchObject({ ok: true, sql: "SELECT n FROM requests" });
  });
});
