// The aligned columns' elements in Chromium (web/charts/aligned-columns.ts): every series column keeps tagged
// elements, whatever it holds. Chromium's V8 keeps an array of numbers and undefined (a partial bucket's cell, an x
// with no sample) as a double array, and reading such a cell as a value boxes its number anew: the line's tracing
// allocated 12 bytes a point drawn that way. Node's V8 moves such an array to tagged elements, so only Chromium can
// tell; its natives syntax (%HasObjectElements, behind --allow-natives-syntax) reads an array's elements kind.
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { bundledPages } from "../e2e/bundled-page.ts";

const ENTRY = `
import { AlignedColumns } from "./aligned-columns.ts";
const STEP = 5000;
const T0 = 1_767_225_600_000;
// Fractional values (not small integers): what a double array would hold unboxed.
const series = (n, gapAt) => Array.from({ length: n }, (_, s) => ({
  key: "host-" + s,
  points: Array.from({ length: 60 }, (_, i) => [T0 + (i >= gapAt ? i + 3 : i) * STEP, 50.25 + s + Math.sin(i) / 3]),
}));
const cols = new AlignedColumns();
window.columnsTest = {
  cols,
  // Numbers only; numbers and the partial bucket's undefined; numbers, undefined and a gap's null; a tick merged
  // incrementally; a series more.
  sync(shape) {
    if (shape === "numbers") cols.sync(series(2, 99), STEP, null);
    else if (shape === "partial") cols.sync(series(2, 99), STEP, T0 + 59 * STEP);
    else if (shape === "gap") cols.sync(series(2, 30), STEP, T0 + 62 * STEP);
    else if (shape === "tick") {
      const next = series(2, 99).map((s) => ({ key: s.key, points: [...s.points.slice(1), [T0 + 60 * STEP, 51.75]] }));
      cols.sync(next, STEP, T0 + 60 * STEP, T0 + 59 * STEP);
    } else cols.sync(series(3, 99), STEP, T0 + 59 * STEP);
  },
};
`;

// The natives syntax on top of the suite's flags.
const pages = bundledPages(ENTRY, fileURLToPath(new URL(".", import.meta.url)), "columnsTest", ["--js-flags=--allow-natives-syntax"]);
const open = () => pages.open();

/** Per series column: [cells that are numbers, cells that are undefined, cells that are null, tagged elements]. */
const KINDS = `columnsTest.cols.ys.map((c) => [
  c.filter((v) => typeof v === "number").length,
  c.filter((v) => v === undefined).length,
  c.filter((v) => v === null).length,
  %HasObjectElements(c),
])`;

test("the natives syntax reads a double array as such (the check below can fail)", async () => {
  const page = await open();
  expect(await page.evaluate("(() => { const a = []; a[0] = 1.5; a[1] = undefined; return %HasObjectElements(a); })()")).toBe(false);
  expect(await page.evaluate("(() => { const a = []; a[0] = 1.5; a[1] = {}; return %HasObjectElements(a); })()")).toBe(true);
  await page.close();
});

test.each(["numbers", "partial", "gap", "tick", "wider"])("every column keeps tagged elements after a sync (%s)", async (shape) => {
  const page = await open();
  // Each shape after a first sync of numbers only: the columns are made once and kept across syncs.
  await page.evaluate(() => (window as unknown as { columnsTest: { sync(s: string): void } }).columnsTest.sync("numbers"));
  if (shape === "tick")
    await page.evaluate(() => (window as unknown as { columnsTest: { sync(s: string): void } }).columnsTest.sync("partial"));
  await page.evaluate((s) => (window as unknown as { columnsTest: { sync(s: string): void } }).columnsTest.sync(s), shape);
  const kinds = (await page.evaluate(KINDS)) as [number, number, number, boolean][];
  expect(kinds.length).toBe(shape === "wider" ? 3 : 2);
  for (const [numbers, undefineds, nulls, tagged] of kinds) {
    expect(numbers).toBeGreaterThan(50);
    if (shape !== "numbers") expect(undefineds).toBeGreaterThan(0);
    if (shape === "gap") expect(nulls).toBeGreaterThan(0);
    expect(tagged).toBe(true);
  }
  await page.close();
});
