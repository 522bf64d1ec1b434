import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { COLUMNS, clampPos, place, step, withPositions } from "./layout.ts";

const overlap = (a: { x: number; y: number; w: number; h: number }, b: typeof a) =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

describe("editor layout", () => {
  test("a panel dragged out of the grid is kept inside it", () => {
    expect(clampPos({ x: 30, y: -4, w: 40, h: 0 })).toEqual({ x: 0, y: 0, w: 24, h: 1 });
    expect(clampPos({ x: 20, y: 3, w: 8, h: 500 })).toEqual({ x: 16, y: 3, w: 8, h: 100 });
  });

  test("panels without a position flow two per row below the placed ones", () => {
    const out = withPositions([{ id: "a", gridPos: { x: 0, y: 0, w: 24, h: 4 } }, { id: "b" }, { id: "c" }, { id: "d" }]);
    expect(out.map((p) => p.gridPos)).toEqual([
      { x: 0, y: 0, w: 24, h: 4 },
      { x: 0, y: 4, w: 12, h: 8 },
      { x: 12, y: 4, w: 12, h: 8 },
      { x: 0, y: 12, w: 12, h: 8 },
    ]);
  });

  test("moving onto another panel pushes it down", () => {
    const out = place(
      [
        { id: "a", gridPos: { x: 0, y: 0, w: 12, h: 8 } },
        { id: "b", gridPos: { x: 12, y: 0, w: 12, h: 8 } },
      ],
      "a",
      { x: 6, y: 0, w: 12, h: 8 },
    );
    expect(out.find((p) => p.id === "a")?.gridPos).toEqual({ x: 6, y: 0, w: 12, h: 8 });
    expect(out.find((p) => p.id === "b")?.gridPos).toEqual({ x: 12, y: 8, w: 12, h: 8 });
  });

  test("keyboard steps move and resize within the grid", () => {
    expect(step({ x: 0, y: 0, w: 12, h: 8 }, "ArrowLeft", false)).toEqual({ x: 0, y: 0, w: 12, h: 8 });
    expect(step({ x: 0, y: 0, w: 12, h: 8 }, "ArrowRight", true)).toEqual({ x: 0, y: 0, w: 13, h: 8 });
    expect(step({ x: 0, y: 0, w: 12, h: 8 }, "Enter", false)).toBeNull();
  });

  const pos = fc.record({
    x: fc.integer({ min: -5, max: 30 }),
    y: fc.integer({ min: -5, max: 40 }),
    w: fc.integer({ min: -2, max: 30 }),
    h: fc.integer({ min: -2, max: 20 }),
  });
  test("property: after any move nothing overlaps and everything is inside the grid", () => {
    fc.assert(
      fc.property(fc.array(fc.option(pos, { nil: undefined }), { minLength: 1, maxLength: 8 }), pos, fc.nat(), (list, to, k) => {
        const panels = list.map((g, i) => ({ id: `p${i}`, gridPos: g ? clampPos(g) : undefined }));
        const out = place(panels, `p${k % panels.length}`, to);
        for (const p of out) {
          expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(COLUMNS);
          expect(p.gridPos.x).toBeGreaterThanOrEqual(0);
        }
        for (let i = 0; i < out.length; i++)
          for (let j = i + 1; j < out.length; j++) expect(overlap(out[i].gridPos, out[j].gridPos)).toBe(false);
      }),
    );
  });
});
