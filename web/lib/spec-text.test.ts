import { describe, expect, test } from "vitest";
import { formatSpec, freshPanelId, parseSpecText, specProblems } from "./spec-text.ts";

const good = {
  title: "T",
  time: { from: "now-1h", to: "now" },
  panels: [{ id: "a", title: "A", type: "stat", sourceId: "src_1", sql: "SELECT 1" }],
};

describe("spec editing helpers", () => {
  test("invalid JSON is reported with line and column", () => {
    const r = parseSpecText('{\n  "title": "x"\n  "panels": []\n}');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/^Invalid JSON at line 3, column \d+: /);
    const other = parseSpecText('{"panels": [,]}');
    expect(other.ok).toBe(false);
    if (!other.ok) expect(other.message).toMatch(/^Invalid JSON: Unexpected token/);
  });

  test("a valid spec has no problems", () => {
    expect(specProblems(good)).toEqual([]);
  });

  test.each([
    [[], "The spec must be a JSON object."],
    [{ ...good, title: "" }, "title"],
    [{ ...good, time: { from: "now-1h" } }, "time"],
    [{ ...good, panels: {} }, "panels"],
    [{ ...good, panels: [{ ...good.panels[0], type: "pie" }] }, "panels[0].type"],
    [{ ...good, panels: [good.panels[0], good.panels[0]] }, "duplicate id a"],
    [{ ...good, panels: [{ ...good.panels[0], id: "has space" }] }, "panels[0].id"],
    [{ ...good, panels: [{ ...good.panels[0], sql: " " }] }, "panels[0].sql"],
  ])("problem in %j mentions %s", (spec, needle) => {
    expect(specProblems(spec).join(" ")).toContain(needle);
  });

  test("fresh panel ids skip used ones", () => {
    expect(freshPanelId([])).toBe("panel_1");
    expect(freshPanelId(["panel_1", "panel_2"])).toBe("panel_3");
  });
});

describe("formatSpec", () => {
  test("reading order: title, refresh, time, panels; within panels id … sql last; unknown keys kept", () => {
    const stored = {
      time: { to: "now", from: "now-1h" },
      title: "T",
      panels: [{ id: "a", sql: "SELECT 1", type: "stat", extra: 1, title: "A", sourceId: "s" }],
      refreshIntervalMs: 5000,
    };
    const text = formatSpec(stored);
    expect(JSON.parse(text)).toEqual(stored);
    expect(Object.keys(JSON.parse(text))).toEqual(["title", "refreshIntervalMs", "time", "panels"]);
    expect(Object.keys(JSON.parse(text).time)).toEqual(["from", "to"]);
    expect(Object.keys(JSON.parse(text).panels[0])).toEqual(["id", "title", "type", "sourceId", "sql", "extra"]);
  });
});
