import { describe, expect, test } from "vitest";
import { MAX_PANEL_SQL_LENGTH } from "../../lib/dashboards/limits.ts";
import { PanelSchema } from "../../lib/dashboards/spec.ts";
import { oversizedSql } from "./save-checks.ts";

const panel = (id: string, sql: string) => ({ id, title: `Panel ${id}`, type: "timeseries", sourceId: "src_1", sql });

describe("oversizedSql: what the editor refuses before a save", () => {
  test("a statement at the limit passes, one character more is named with both lengths", () => {
    expect(oversizedSql({ panels: [panel("a", "x".repeat(MAX_PANEL_SQL_LENGTH))] })).toEqual([]);
    expect(oversizedSql({ panels: [panel("a", "x".repeat(MAX_PANEL_SQL_LENGTH + 1))] })).toEqual([
      'Panel "Panel a": its SQL is 20,001 characters; at most 20,000.',
    ]);
  });

  test("a 2 MB paste is named by panel, and a query variable's SQL by variable", () => {
    const big = "SELECT 1 ".repeat(233_017);
    const messages = oversizedSql({
      panels: [panel("a", "SELECT 1"), panel("b", big)],
      variables: [{ name: "host", sql: big }, { name: "env" }],
    });
    expect(messages).toEqual([
      `Panel "Panel b": its SQL is ${big.length.toLocaleString("en-US")} characters; at most 20,000.`,
      `Variable host: its SQL is ${big.length.toLocaleString("en-US")} characters; at most 20,000.`,
    ]);
  });

  test("the browser's limit is the spec's: what it lets through the schema accepts, and the next character it refuses", () => {
    expect(PanelSchema.safeParse(panel("a", "x".repeat(MAX_PANEL_SQL_LENGTH))).success).toBe(true);
    expect(PanelSchema.safeParse(panel("a", "x".repeat(MAX_PANEL_SQL_LENGTH + 1))).success).toBe(false);
  });
});
