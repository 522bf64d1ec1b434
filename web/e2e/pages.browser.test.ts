// Every page as each demo role sees it, in light and dark (screenshots under web/e2e/artifacts/, and every text's
// contrast measured), the live dashboard's values changing over the stream, and the workspace admin pages.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { contrastInBothSchemes } from "./contrast.ts";
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
    // Text below WCAG contrast (4.5:1, 3:1 when large) on any page, in either scheme (web/e2e/contrast.ts).
    const low: string[] = [];
    const paths = ["/", `/dashboards/${app.dashboardId}`, "/sources", "/account", "/generate", "/tokens", "/audit", "/admin/workspaces"];
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
      const contrast = await contrastInBothSchemes(page);
      for (const scheme of ["light", "dark"] as const) {
        for (const f of contrast[scheme].failures)
          low.push(`${path} ${scheme}: ${f.element} "${f.text}" ${f.color} on ${f.background} = ${f.ratio}:1 (needs ${f.required}:1)`);
      }
    }
    await page.context().close();
    expect(low).toEqual([]);
  },
  180_000,
);

/** The rows' texts of column `n` (1-based) of a table. */
async function column(page: Page, table: string, n: number): Promise<string[]> {
  return page.locator(`${table} tbody tr td:nth-child(${n})`).allTextContents();
}

test("a workspace admin creates an API token (shown once), it works, is revoked and refused; the audit page shows it, filtered and paged", async () => {
  const page = await signIn(browser, app, "demo-admin");
  await page.click('nav a[href="/tokens"]');
  await page.locator("#tokens[aria-busy]").waitFor({ state: "detached" });
  const workspaceId = new URL(page.url()).searchParams.get("workspace")!;
  expect(workspaceId).toMatch(/^ws_/);
  await page.fill("#token-name", "e2e-ci");
  await page.selectOption("#token-role", "viewer");
  await page.fill("#token-expires", "7");
  await page.click("#token-create");
  const secret = await page.locator("#token-value").inputValue();
  expect(secret).toMatch(/^pbt_[0-9a-f]+_\S+$/);
  const row = page.locator("#token-table tbody tr", { hasText: "e2e-ci" });
  await row.waitFor();
  expect(await row.locator("td").nth(1).textContent()).toBe("viewer");
  // The list shows how the token starts, never its secret part.
  const [, prefix, rest] = /^pbt_([0-9a-f]+)_(.+)$/.exec(secret)!;
  expect(await row.locator("td").nth(2).textContent()).toBe(`pbt_${prefix}_…`);
  expect(await page.locator("#tokens").textContent()).not.toContain(rest);
  await screenshots(page, "demo-admin-tokens-created");

  const asToken = () =>
    fetch(app.url(`/api/workspaces/${workspaceId}/dashboards`), {
      headers: { authorization: `Bearer ${secret}`, accept: "application/json" },
    });
  expect((await asToken()).status).toBe(200);
  page.once("dialog", (d) => void d.accept());
  await row.getByRole("button", { name: "Revoke e2e-ci" }).click();
  await row.locator(".tag", { hasText: "revoked" }).waitFor();
  expect((await asToken()).status).toBe(401);
  // Shown once: after a reload the secret is nowhere on the page.
  await page.reload();
  await page.locator("#token-table").waitFor();
  expect(await page.locator("#token-value").count()).toBe(0);
  expect(await page.content()).not.toContain(rest);

  // The trail, newest first: the revocation, then the creation, both by the admin.
  await page.click('nav a[href="/audit"]');
  await page.locator("#audit-table").waitFor();
  expect((await column(page, "#audit-table", 3)).slice(0, 2)).toEqual(["token.revoke", "token.create"]);
  const tokenId = `tok_${prefix}`;
  expect((await column(page, "#audit-table", 4)).slice(0, 2)).toEqual([`token ${tokenId}`, `token ${tokenId}`]);
  expect((await column(page, "#audit-table", 2)).slice(0, 2)).toEqual(["demo-admin", "demo-admin"]);

  // More entries than a page holds: 101 limit changes through the API, then the next page on demand.
  await page.evaluate(async (ws) => {
    for (let i = 1; i <= 101; i++) {
      const res = await fetch(`/api/workspaces/${ws}/limits`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ llmRatePerMinute: i, llmDailyTokenBudget: null }),
      });
      if (!res.ok) throw new Error(`limits: ${res.status}`);
    }
  }, workspaceId);
  await page.selectOption('#audit-filters select[name="action"]', "limits.update");
  await page.click('#audit-filters button[type="submit"]');
  await page.waitForURL(/action=limits\.update/);
  await page.locator("#audit-more:not([hidden])").waitFor();
  expect(await page.locator("#audit-table tbody tr").count()).toBe(100);
  await page.click("#audit-more");
  await page.waitForFunction(() => document.querySelectorAll("#audit-table tbody tr").length === 101);
  expect(new Set(await column(page, "#audit-table", 3))).toEqual(new Set(["limits.update"]));
  expect(await page.locator("#audit-more").isHidden()).toBe(true);
  // The filter is in the URL: a reload (or a shared link) shows the same list.
  await page.reload();
  await page.locator("#audit-table").waitFor();
  expect(await page.locator('#audit-filters select[name="action"]').inputValue()).toBe("limits.update");
  expect(new Set(await column(page, "#audit-table", 3))).toEqual(new Set(["limits.update"]));
  await screenshots(page, "demo-admin-audit-filtered");
  await page.context().close();
}, 120_000);

test("a viewer sees neither entry, and the pages answer with what the role is", async () => {
  const page = await signIn(browser, app, "demo-viewer");
  expect(await page.locator('nav a[href="/tokens"], nav a[href="/audit"]').count()).toBe(0);
  for (const path of ["/tokens", "/audit"]) {
    const res = await page.goto(app.url(path));
    expect(res?.status()).toBe(403);
    await expect(page.locator("main .notice.error").textContent()).resolves.toContain("needs the admin role in a workspace");
    // No browser module ran: nothing reported a failure to start above the text.
    expect(await page.locator("main .notice").count()).toBe(1);
  }
  await page.context().close();
}, 60_000);

test("at 390 px the live dashboard, its panel menu and the editor fit: nothing scrolls sideways, every control is on screen", async () => {
  const page = await signIn(browser, app, "demo-editor", { viewport: { width: 390, height: 844 } });
  /** Controls (and charts) that stick out of the 390 px viewport, by their label. */
  const outside = () =>
    page.evaluate(() =>
      [...document.querySelectorAll("button, a[href], select, input, textarea, canvas, [role=menuitem]")]
        .filter((e) => {
          const r = e.getBoundingClientRect();
          return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== "hidden" && (r.left < -0.5 || r.right > 390.5);
        })
        .map((e) => `${e.tagName.toLowerCase()} "${(e.getAttribute("aria-label") ?? e.textContent ?? "").trim().slice(0, 40)}"`),
    );
  await page.goto(app.url(`/dashboards/${app.dashboardId}`));
  await page.locator("#status.ok").waitFor({ timeout: 20_000 });
  await page.locator("article.panel canvas >> visible=true").first().waitFor({ timeout: 20_000 });
  expect(await outside()).toEqual([]);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  // A legend taller than its box (the first panel's four series take a row each here) ends between rows: every entry
  // is wholly inside the box or wholly below it, none cut in half.
  const legendCuts = await page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>(".legend:not([hidden])")].flatMap((legend) => {
      const box = legend.getBoundingClientRect();
      return [...legend.querySelectorAll<HTMLElement>(":scope > li:not(.legend-figures)")]
        .map((li) => li.getBoundingClientRect())
        .filter((r) => r.top < box.bottom - 0.5 && r.bottom > box.bottom + 0.5)
        .map(
          (r) =>
            `${legend.getAttribute("aria-label")}: an entry from ${r.top.toFixed(1)} to ${r.bottom.toFixed(1)} cut at ${box.bottom.toFixed(1)}`,
        );
    }),
  );
  expect(legendCuts).toEqual([]);
  // A title cut short by the card's width is whole in its tooltip.
  const firstTitle = page.locator("article.panel h2").first();
  expect(await firstTitle.evaluate((e) => e.scrollWidth > e.clientWidth)).toBe(true);
  expect(await firstTitle.getAttribute("title")).toBe(await firstTitle.textContent());
  // The last card, far below the fold, is drawn when it scrolls in; until then it says that its result is there.
  const last = page.locator("article.panel").last();
  await last.locator(".panel-body .state.empty").waitFor({ timeout: 20_000 });
  expect(await last.locator(".panel-body").textContent()).toBe("Update received: shown when it scrolls into view.");
  await screenshots(page, "demo-editor-390-dashboard");
  await last.scrollIntoViewIfNeeded();
  await expect.poll(() => last.locator(".panel-body .state").count(), { timeout: 20_000 }).toBe(0);
  await page.evaluate(() => window.scrollTo(0, 0));
  // The first panel's menu opens inside the viewport.
  await page.locator("article.panel").first().getByRole("button", { name: /menu/i }).click();
  await page.getByRole("menuitem").first().waitFor();
  expect(await outside()).toEqual([]);
  await screenshots(page, "demo-editor-390-panel-menu");
  await page.keyboard.press("Escape");
  await page.goto(app.url(`/dashboards/${app.dashboardId}/edit`));
  await page.locator("#editor:not([aria-busy])").waitFor({ timeout: 30_000 });
  expect(await outside()).toEqual([]);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await screenshots(page, "demo-editor-390-editor");
  // A panel opened in the editor: its SQL in CodeMirror, its options and the preview.
  await page.locator(".layout-card").first().click();
  await page.locator("#sql-editor .cm-editor").waitFor({ state: "visible", timeout: 30_000 });
  expect(await outside()).toEqual([]);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await screenshots(page, "demo-editor-390-panel-editor");
  await page.context().close();
}, 90_000);

test("at 390 px the workspace admin's navigation wraps: every entry is on screen and nothing scrolls sideways", async () => {
  const page = await signIn(browser, app, "demo-admin", { viewport: { width: 390, height: 844 } });
  for (const path of ["/", "/tokens", "/audit"]) {
    await page.goto(app.url(path));
    await page.waitForLoadState("load");
    const links = page.locator("nav .nav-list a");
    expect(await links.allTextContents()).toEqual(expect.arrayContaining(["Tokens", "Audit"]));
    for (const box of await links.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON() as DOMRect))) {
      expect(box.left).toBeGreaterThanOrEqual(0);
      expect(box.right).toBeLessThanOrEqual(390);
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshots(page, `demo-admin-390-${path === "/" ? "list" : path.slice(1)}`);
  }
  await page.context().close();
}, 60_000);
