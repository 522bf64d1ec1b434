// The dashboard editor in Chromium (the harness of web/e2e/harness.ts).
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type DemoApp, launchChromium, signIn, startDemoApp } from "./harness.ts";

let app: DemoApp;
let browser: Browser;

beforeAll(async () => {
  [app, browser] = await Promise.all([startDemoApp(), launchChromium()]);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
}, 60_000);

test("Cancel on a never-saved dashboard leaves nothing behind", { timeout: 60_000 }, async () => {
  const page = await signIn(browser, app, "demo-editor");
  const list = async () => (await (await page.request.get(app.url("/api/me"))).json()) as { workspaces: { id: string }[] };
  const ws = (await list()).workspaces[0].id;
  const count = async () =>
    ((await (await page.request.get(app.url(`/api/workspaces/${ws}/dashboards`))).json()) as { dashboards: unknown[] }).dashboards.length;
  const before = await count();
  await page.locator("#new-dashboard").click();
  await page.locator("#add-panel").click();
  await page.locator("#cancel").click();
  await page.waitForURL((u) => u.pathname === "/");
  expect(await count()).toBe(before);
});
