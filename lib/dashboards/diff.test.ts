import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { diffSpecs, jsonEqual } from "./diff.ts";

const panel = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  title: id,
  type: "timeseries",
  sourceId: "s",
  sql: "SELECT 1",
  ...extra,
});
const spec = (panels: unknown[], extra: Record<string, unknown> = {}) => ({
  title: "T",
  time: { from: "now-1h", to: "now" },
  panels,
  ...extra,
});

describe("diffSpecs", () => {
  test("equal specs have no changes, whatever the key order", () => {
    expect(diffSpecs(spec([panel("a")]), { panels: [panel("a")], time: { to: "now", from: "now-1h" }, title: "T" })).toEqual([]);
  });

  test("panels are matched by id: an edit is one change at its field, an add or remove is one change", () => {
    const before = spec([panel("a"), panel("b")]);
    const after = spec([panel("a", { sql: "SELECT 2" }), panel("c")]);
    expect(diffSpecs(before, after)).toEqual([
      { path: ["panels[a]", "sql"], kind: "changed", before: "SELECT 1", after: "SELECT 2" },
      { path: ["panels[b]"], kind: "removed", before: panel("b") },
      { path: ["panels[c]"], kind: "added", after: panel("c") },
    ]);
  });

  test("a reorder is one change of the panel order, not a change of every panel", () => {
    expect(diffSpecs(spec([panel("a"), panel("b")]), spec([panel("b"), panel("a")]))).toEqual([
      { path: ["panels"], kind: "changed", before: ["a", "b"], after: ["b", "a"] },
    ]);
  });

  test("variables by name; options and layout by field", () => {
    const before = spec([panel("a", { gridPos: { x: 0, y: 0, w: 12, h: 8 } })], {
      variables: [{ name: "env", type: "custom", values: ["a"] }],
    });
    const after = spec([panel("a", { gridPos: { x: 0, y: 0, w: 24, h: 8 } })], {
      variables: [{ name: "env", type: "custom", values: ["a", "b"] }],
    });
    expect(diffSpecs(before, after)).toEqual([
      { path: ["panels[a]", "gridPos", "w"], kind: "changed", before: 12, after: 24 },
      { path: ["variables[env]", "values"], kind: "changed", before: ["a"], after: ["a", "b"] },
    ]);
  });

  const json = fc.jsonValue({ maxDepth: 3 });
  test("property: no changes exactly when the values are equal", () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        expect(diffSpecs(a, b).length === 0).toBe(jsonEqual(a, b));
        expect(diffSpecs(a, a)).toEqual([]);
      }),
    );
  });
});
