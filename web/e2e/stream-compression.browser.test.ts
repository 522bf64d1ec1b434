// The live page over a deflated stream in Chromium: the demo with STREAM_COMPRESSION=deflate, the browser's own
// Accept-Encoding, its own decoding (the page's fetch reads the stream as text), the snapshot and ticks arriving.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type DemoApp, launchChromium, signIn, startDemoApp } from "./harness.ts";

let app: DemoApp;
let browser: Browser;

beforeAll(async () => {
  [app, browser] = await Promise.all([startDemoApp({ env: { STREAM_COMPRESSION: "deflate" } }), launchChromium()]);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
}, 60_000);

/** A panel card's update stamp (the `at` of its last frame) once it differs from `previous`. */
async function nextStamp(page: Page, previous: string | null): Promise<string> {
  const handle = await page.waitForFunction(
    (prev) => {
      const at = document.querySelector("article.panel[data-updated-at]")?.getAttribute("data-updated-at");
      return at && at !== prev ? at : null;
    },
    previous,
    { timeout: 30_000 },
  );
  return (await handle.jsonValue()) as string;
}

test("the live page gets its snapshot and ticks over a stream sent with Content-Encoding: deflate", async () => {
  const page = await signIn(browser, app, "demo-viewer");
  const stream = page.waitForResponse((r) => new URL(r.url()).pathname === `/api/dashboards/${app.dashboardId}/stream`);
  await page.goto(app.url(`/dashboards/${app.dashboardId}`));
  const res = await stream;
  expect(res.status()).toBe(200);
  expect((await res.request().allHeaders())["accept-encoding"]).toMatch(/\bdeflate\b/);
  expect(res.headers()["content-encoding"]).toBe("deflate");
  expect(res.headers()["cache-control"]).toBe("no-cache, no-transform");
  await page.locator("#status.ok").waitFor({ timeout: 20_000 });
  // The snapshot fills the cards; each later panel frame stamps its card anew: two new stamps are two ticks decoded.
  const first = await nextStamp(page, null);
  const second = await nextStamp(page, first);
  const third = await nextStamp(page, second);
  expect(Number(third)).toBeGreaterThan(Number(second));
  expect(Number(second)).toBeGreaterThan(Number(first));
  expect(await page.locator(".panel-stat .stat-value").first().textContent()).not.toBe("");
  await page.context().close();
}, 120_000);
