import { describe, expect, test } from "vitest";
import type { Catalog } from "../catalog/types.ts";
import { ProposalSplitter, summarizePanelResults } from "./chat.ts";
import { selectCatalog } from "./prompt.ts";

function bigCatalog(n: number): Catalog {
  return {
    tables: Array.from({ length: n }, (_, i) => ({
      schema: "public",
      name: i === 137 ? "checkout_latency" : `table_${i}`,
      timeColumn: "ts",
      columns: Array.from({ length: 30 }, (_, c) => ({ name: c === 0 ? "ts" : `col_${c}`, type: "double precision" })),
    })),
  };
}

describe("selectCatalog", () => {
  test("a small catalog is shown whole", () => {
    const s = selectCatalog(bigCatalog(3), { question: "x", notes: "", maxChars: 10_000 });
    expect(s).toMatchObject({ tablesTotal: 3, tablesIncluded: 3, omittedTables: [] });
  });

  test("a large catalog is bounded, keeps the tables the question names, and reports what was left out", () => {
    const s = selectCatalog(bigCatalog(500), { question: "p95 of checkout latency", notes: "", maxChars: 8_000 });
    expect(s.text.length).toBeLessThanOrEqual(8_000 + 200);
    expect(s.text).toContain("public.checkout_latency");
    expect(s.tablesIncluded).toBeLessThan(500);
    expect(s.tablesTotal).toBe(500);
    expect(s.omittedTables).toHaveLength(50);
    expect(s.text).toContain("less relevant tables were left out");
  });

  test("long notes are cut to their share of the budget", () => {
    const s = selectCatalog(bigCatalog(2), { question: "", notes: "n".repeat(50_000), maxChars: 8_000 });
    expect(s.notesTruncated).toBe(true);
    expect(s.text.length).toBeLessThan(8_000);
  });
});

describe("ProposalSplitter", () => {
  const feed = (chunks: string[]) => {
    const s = new ProposalSplitter();
    const shown = chunks.map((c) => s.push(c)).join("") + s.flush();
    return { shown, block: s.block };
  };

  test.each([
    [['Done.\n```proposal\n{"a":1}\n```']],
    [["Done.\n``", "`prop", 'osal\n{"a"', ":1}\n```"]],
    ['Done.\n```proposal\n{"a":1}\n```'.split("")],
  ])("the fence is never shown, however it is split: %j", (chunks) => {
    const { shown, block } = feed(chunks);
    expect(shown).toBe("Done.\n");
    expect(block?.trim()).toBe('{"a":1}\n```');
  });

  test("text with backticks that never become the fence is shown in full", () => {
    const { shown, block } = feed(["use `count(*)` and ``", "`sql\nSELECT 1\n```"]);
    expect(shown).toBe("use `count(*)` and ```sql\nSELECT 1\n```");
    expect(block).toBeNull();
  });
});

test("summarizePanelResults is bounded and only covers the dashboard's panels", () => {
  const spec = {
    title: "t",
    time: { from: "now-1h", to: "now" },
    panels: Array.from({ length: 50 }, (_, i) => ({ id: `p${i}`, title: `P${i}`, type: "table" as const, sourceId: "s", sql: "SELECT 1" })),
  };
  const rows = Array.from({ length: 2000 }, (_, i) => [i, "x".repeat(500)]);
  const text = summarizePanelResults(spec, [
    { panelId: "unknown", rows },
    ...spec.panels.map((p) => ({ panelId: p.id, columns: [{ name: "a" }, { name: "b" }], rows })),
  ]);
  expect(text.length).toBeLessThanOrEqual(8_100);
  expect(text).not.toContain("unknown");
  expect(text).toContain("panel p0");
  expect(text).toContain("more panel results were left out");
});
