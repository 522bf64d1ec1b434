/**
 * For a browser test that drives one piece of the page alone (a chart, its columns, its axes): the piece's entry
 * module is bundled as the web build bundles it (bundleForPage) and Chromium launched before the file's tests, and
 * closed after them; `open()` gives a blank page with the bundle's stylesheet and script, once the script has
 * defined the test's `global` on `window`.
 */
import type { Browser, BrowserContextOptions, Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { bundleForPage, launchChromium } from "./harness.ts";

export interface BundledPages {
  /** A new page (in a context of its own, with `options`) holding `body`, the bundle's stylesheet and its script. */
  open(options?: BrowserContextOptions, body?: string): Promise<Page>;
}

/** `entry` bundled from `dir`; `launchArgs` go to Chromium after the suite's own flags. */
export function bundledPages(entry: string, dir: string, global: string, launchArgs: readonly string[] = []): BundledPages {
  let bundle = { js: "", css: "" };
  let browser: Browser | undefined;
  beforeAll(async () => {
    bundle = await bundleForPage(entry, dir);
    browser = await launchChromium(launchArgs);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
  return {
    async open(options = {}, body = "") {
      if (!browser) throw new Error("bundledPages: open() before the file's beforeAll ran");
      const page = await browser.newPage(options);
      await page.setContent(
        `<!doctype html><html><head><meta charset="utf-8"><style>${bundle.css}</style></head><body>${body}</body></html>`,
      );
      await page.addScriptTag({ content: bundle.js, type: "module" });
      await page.waitForFunction((g) => g in window, global);
      return page;
    },
  };
}
