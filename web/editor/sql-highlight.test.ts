import { describe, expect, test } from "vitest";
import { SQL_PALETTES } from "./sql-highlight.ts";

/** WCAG 2.x relative luminance of a #rrggbb colour. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16) / 255);
  const lin = (v: number) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}
function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

describe("the SQL editor's palettes", () => {
  test("the ratio is WCAG's (a control: #777 on white is 4.48:1, black on white 21:1)", () => {
    expect(contrast("#777777", "#ffffff")).toBeCloseTo(4.48, 2);
    expect(contrast("#000000", "#ffffff")).toBeCloseTo(21, 5);
  });

  const cases = Object.entries(SQL_PALETTES).flatMap(([scheme, p]) =>
    Object.entries({ text: p.text, ...p.tokens }).map(([kind, color]) => [scheme, kind, color, p.background] as const),
  );
  test.each(cases)("%s: %s (%s) is at least 4.5:1 against the editor background %s", (_scheme, _kind, color, background) => {
    expect(contrast(color, background)).toBeGreaterThanOrEqual(4.5);
  });

  test("the dark palette's background is dark and the light one's light (the scheme is not swapped)", () => {
    expect(luminance(SQL_PALETTES.dark.background)).toBeLessThan(0.05);
    expect(luminance(SQL_PALETTES.light.background)).toBeGreaterThan(0.9);
  });
});
