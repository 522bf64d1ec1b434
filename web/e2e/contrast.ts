/**
 * WCAG 2.x contrast of the text a page shows, measured in the browser: every visible element that holds text of its
 * own (and every text field and select, whose value is text), its computed colour against the background it is
 * painted on (the backgrounds of it and its ancestors composited, with their opacity), as the relative-luminance
 * ratio of WCAG 2.2 (1.4.3). Large text (24 px, or 18.66 px and bold) needs 3:1, other text 4.5:1. Disabled
 * controls are exempt (WCAG's inactive components), as are elements painted over a gradient or image (no single
 * background colour to measure against; the check reports how many it skipped).
 */
import { readFile } from "node:fs/promises";
import type { Page } from "playwright-core";

let source: string | undefined;
const inPageSource = async () => (source ??= await readFile(new URL("./contrast-in-page.js", import.meta.url), "utf8"));

/** One piece of text below its required contrast. */
export interface ContrastFailure {
  /** Tag, id and classes of the element. */
  element: string;
  text: string;
  color: string;
  background: string;
  ratio: number;
  required: number;
}

export interface ContrastReport {
  checked: number;
  skipped: number;
  failures: ContrastFailure[];
}

/**
 * Measures the page as it is now drawn (in the colour scheme it is emulating); `within`, a CSS selector, limits it to
 * one element's inside (its shadow root when it has one, as the SQL editor does).
 */
export async function measureContrast(page: Page, within?: string): Promise<ContrastReport> {
  return page.evaluate(
    `(${(await inPageSource()).trim().replace(/;$/, "")})(${JSON.stringify(within ?? null)})`,
  ) as Promise<ContrastReport>;
}

/** Measures the page in light and then dark (emulated), and returns the failures of each scheme. */
export async function contrastInBothSchemes(page: Page, within?: string): Promise<{ light: ContrastReport; dark: ContrastReport }> {
  const out: Partial<Record<"light" | "dark", ContrastReport>> = {};
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    out[scheme] = await measureContrast(page, within);
  }
  await page.emulateMedia({ colorScheme: null });
  return out as { light: ContrastReport; dark: ContrastReport };
}
