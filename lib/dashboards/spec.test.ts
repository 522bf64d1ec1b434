import { describe, expect, test } from "vitest";
import { MAX_REFRESH_INTERVAL_MS, dashboardSpecSchema, effectiveRefreshMs } from "./spec.ts";

describe("refresh cadence ceiling", () => {
  test("a stored refresh interval past a day is read as a day, so the poller's timer never overflows", () => {
    const cfg = { DEFAULT_REFRESH_INTERVAL_MS: 15_000, MIN_REFRESH_INTERVAL_MS: 2_000 };
    expect(effectiveRefreshMs({ refreshIntervalMs: 2 ** 53 }, cfg)).toBe(MAX_REFRESH_INTERVAL_MS);
    expect(effectiveRefreshMs({ refreshIntervalMs: 60_000 }, cfg)).toBe(60_000);
    expect(effectiveRefreshMs({}, { ...cfg, DEFAULT_REFRESH_INTERVAL_MS: 10 ** 12 })).toBe(MAX_REFRESH_INTERVAL_MS);
  });
});

describe("variables and range in the spec", () => {
  const schema = dashboardSpecSchema(2_000);
  const base = { title: "t", time: { from: "now-1h", to: "now" }, panels: [] };
  const issues = (extra: Record<string, unknown>) => {
    const r = schema.safeParse({ ...base, ...extra });
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };

  test("a well-formed custom and query variable pass", () => {
    expect(
      issues({
        variables: [
          { name: "service", type: "custom", values: ["api", "web"], default: "web", includeAll: true },
          { name: "route", type: "query", sourceId: "src_1", sql: "SELECT 1", multi: true, default: ["a", "b"] },
          { name: "env", type: "custom", values: ["prod"], includeAll: true, default: "$__all" },
        ],
      }),
    ).toEqual([]);
  });

  test.each([
    [
      "duplicate names",
      [
        { name: "a", type: "custom", values: ["x"] },
        { name: "a", type: "custom", values: ["y"] },
      ],
      "variables.1.name",
    ],
    ["custom without values", [{ name: "a", type: "custom" }], "variables.0.values"],
    ["custom with sql", [{ name: "a", type: "custom", values: ["x"], sql: "SELECT 1" }], "variables.0.sql"],
    ["query without sourceId", [{ name: "a", type: "query", sql: "SELECT 1" }], "variables.0.sourceId"],
    ["query without sql", [{ name: "a", type: "query", sourceId: "s" }], "variables.0.sql"],
    ["query with values", [{ name: "a", type: "query", sourceId: "s", sql: "SELECT 1", values: ["x"] }], "variables.0.values"],
    ["a default outside the values", [{ name: "a", type: "custom", values: ["x"], default: "y" }], "variables.0.default"],
    ["several defaults without multi", [{ name: "a", type: "custom", values: ["x", "y"], default: ["x", "y"] }], "variables.0.default"],
    ["$__all default without includeAll", [{ name: "a", type: "custom", values: ["x"], default: "$__all" }], "variables.0.default"],
    ["$__all as a value", [{ name: "a", type: "custom", values: ["$__all"], includeAll: true }], "variables.0.values"],
    ["a value listed twice", [{ name: "a", type: "custom", values: ["x", "x"] }], "variables.0.values"],
    ["an empty values list", [{ name: "a", type: "custom", values: [] }], "variables.0.values"],
    ["a NUL in a value", [{ name: "a", type: "custom", values: ["x\u0000"] }], "variables.0.values.0"],
    ["a reserved name", [{ name: "__interval", type: "custom", values: ["x"] }], "variables.0.name"],
    ["a name that is not an identifier", [{ name: "a-b", type: "custom", values: ["x"] }], "variables.0.name"],
  ])("%s is refused at its path", (_n, variables, path) => {
    expect(issues({ variables }).some((i) => i.startsWith(`${path}:`))).toBe(true);
  });

  test.each([
    ["two instants in the wrong order", { from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z" }, false],
    ["two offsets in the wrong order", { from: "now", to: "now-1h" }, false],
    ["two instants in order", { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" }, true],
    ["an instant and now", { from: "2026-01-01T00:00:00Z", to: "now" }, true],
    ["the same instant", { from: "2026-01-01T00:00:00Z", to: "2026-01-01T00:00:00Z" }, true],
  ])("a range of %s: accepted %s", (_n, time, ok) => {
    expect(issues({ time }).some((i) => i.startsWith("time.from:"))).toBe(!ok);
  });
});
