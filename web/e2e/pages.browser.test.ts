// Every page as each demo role sees it, in light and dark (screenshots under web/e2e/artifacts/), and the live
// dashboard's values changing over the stream.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type DemoApp, launchChromium, screenshots, signIn, startDemoApp } from "./harness.ts";

let app: DemoApp;
let browser: Browser;

beforeAll(async () => {
  [app, browser] = await Promise.all([startDemoApp(), launchChromium()]);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
}, 60_000);

/** The first panel's update stamp once it differs from `previous`. */
async function waitForStamp(page: Page, previous: string | null): Promise<string> {
  const handle = await page.waitForFunction(
    (prev) => {
      const at = document.querySelector("article.panel[data-updated-at]")?.getAttribute("data-updated-at");
      return at && at !== prev ? at : null;
    },
    previous,
    { timeout: 20_000 },
  );
  return (await handle.jsonValue()) as string;
}

/** The text of the first stat panel's figure. */
async function statText(page: Page): Promise<string> {
  return (await page.locator(".panel-stat .stat-value").first().textContent()) ?? "";
}

test("a viewer signs in through the development identity provider and sees the demo dashboard update over SSE", async () => {
  const page = await signIn(browser, app, "demo-viewer");
  expect(new URL(page.url()).pathname).toBe("/");
  await expect(page.locator(".who-name").textContent()).resolves.toContain("Demo Viewer");
  await page.goto(app.url(`/dashboards/${app.dashboardId}`));
  await page.locator("#status.ok").waitFor({ timeout: 20_000 });
  // Each panel event stamps its card with the result's time: two different stamps on one card are two ticks.
  const first = await waitForStamp(page, null);
  const second = await waitForStamp(page, first);
  expect(Number(second)).toBeGreaterThan(Number(first));
  expect(await statText(page)).not.toBe("");
  await page.context().close();
}, 90_000);

test.each(["demo-viewer", "demo-editor", "demo-admin"])(
  "every page of %s in light and dark",
  async (user) => {
    const page = await signIn(browser, app, user);
    const paths = ["/", `/dashboards/${app.dashboardId}`, "/sources", "/account", "/generate", "/admin/workspaces"];
    if (user !== "demo-viewer") paths.push(`/dashboards/${app.dashboardId}/edit`);
    for (const path of paths) {
      await page.goto(app.url(path));
      // The live page keeps its stream open, so "network idle" never comes: wait for the page's own settling.
      await page.waitForLoadState("load");
      await page.waitForTimeout(1_000);
      const name = `${user}-${
        path === "/"
          ? "list"
          : path
              .split("/")
              .filter(Boolean)
              .map((p) => (p.startsWith("db_") ? "dashboard" : p))
              .join("-")
      }`;
      await screenshots(page, name);
    }
    await page.context().close();
  },
  120_000,
);
