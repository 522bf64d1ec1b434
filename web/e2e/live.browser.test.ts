// Reading a dashboard as a Grafana user would, in Chromium against the demo: the time picker and the URL, reload,
// drag-zoom and back, a variable, the legend, full-screen and the CSV checked against the database, and a restart
// of the stream host survived without a reload.
import { readFile } from "node:fs/promises";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DemoApp, launchChromium, screenshots, signIn, startDemoApp } from "./harness.ts";

let app: DemoApp;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [app, browser] = await Promise.all([startDemoApp(), launchChromium()]);
  page = await signIn(browser, app, "demo-editor");
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await app?.stop();
}, 60_000);

/** Waits until a card (by panel id) has a result stamped later than `after`; returns the stamp. */
async function nextResult(p: Page, panelId: string, after = 0): Promise<number> {
  const handle = await p.waitForFunction(
    ([id, prev]) => {
      const at = Number(document.getElementById(`panel-${id}`)?.dataset.updatedAt ?? 0);
      return at > prev ? at : null;
    },
    [panelId, after] as const,
    { timeout: 30_000 },
  );
  return (await handle.jsonValue()) as number;
}

/** The first and last x-axis instants the chart of a panel covers (from its accessible name). */
async function chartLabel(p: Page, panelId: string): Promise<string> {
  return (await p.locator(`#panel-${panelId} .panel-body`).getAttribute("aria-label")) ?? "";
}

describe("the time picker and the URL", () => {
  test("Last 6 hours: the URL, the picker, the served range and the axis follow; a reload gives the same view", async () => {
    await page.goto(app.url(`/dashboards/${app.dashboardId}`));
    const first = await nextResult(page, "rpm");
    await page.click("#time-picker-button");
    await page.getByRole("button", { name: "Last 6 hours" }).click();
    await page.waitForURL(/from=now-6h&to=now/);
    await nextResult(page, "rpm", first);
    await expect(page.locator("#time-picker-button").textContent()).resolves.toBe("Last 6 hours");
    // The axis spans six hours, and the chart's accessible name says so.
    const body = page.locator("#panel-rpm .panel-body");
    const [a, b] = await Promise.all([body.getAttribute("data-range-from"), body.getAttribute("data-range-to")]);
    expect(Number(b) - Number(a)).toBe(6 * 3_600_000);
    const label = await chartLabel(page, "rpm");
    expect(label).toContain(`from ${new Date(Number(a)).toISOString().slice(0, 19).replace("T", " ")} to `);
    await screenshots(page, "live-6h");

    await page.reload();
    await nextResult(page, "rpm");
    expect(new URL(page.url()).searchParams.get("from")).toBe("now-6h");
    await expect(page.locator("#time-picker-button").textContent()).resolves.toBe("Last 6 hours");
  }, 90_000);

  test("drag-zoom writes an absolute range into the history; back returns to the range before", async () => {
    const before = page.url();
    const over = page.locator("#panel-rpm .u-over");
    const box = (await over.boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.7, box.y + box.height / 2, { steps: 8 });
    await page.mouse.up();
    await page.waitForURL((u) => /^\d{4}-/.test(u.searchParams.get("from") ?? ""));
    const zoomed = new URL(page.url());
    const span = Date.parse(zoomed.searchParams.get("to")!) - Date.parse(zoomed.searchParams.get("from")!);
    expect(span).toBeGreaterThan(0);
    expect(span).toBeLessThan(6 * 3_600_000 * 0.3);
    await page.goBack();
    await page.waitForFunction((url) => location.href === url, before);
    await expect(page.locator("#time-picker-button").textContent()).resolves.toBe("Last 6 hours");
  }, 60_000);

  test("a legend click hides a series; shift-click shows it alone", async () => {
    await nextResult(page, "rpm");
    const items = page.locator("#panel-rpm .legend-item");
    expect(await items.count()).toBeGreaterThan(1);
    await items.first().click();
    await expect(items.first().getAttribute("aria-pressed")).resolves.toBe("false");
    expect(await chartLabel(page, "rpm")).not.toContain(`${await items.first().locator(".legend-key").textContent()} `);
    await items.nth(1).click({ modifiers: ["Shift"] });
    const pressed = await items.evaluateAll((els) => els.map((e) => e.getAttribute("aria-pressed")));
    expect(pressed.filter((p) => p === "true")).toHaveLength(1);
    expect(pressed[1]).toBe("true");
  }, 60_000);
});

describe("the panel menu", () => {
  test("full-screen then the CSV of a past range matches the same SQL run on the database", async () => {
    // A range that has ended: queried once, stable, and not called live.
    const to = new Date(Date.now() - 60_000);
    to.setUTCSeconds(0, 0);
    const from = new Date(to.getTime() - 20 * 60_000);
    const url = `/dashboards/${app.dashboardId}?from=${from.toISOString()}&to=${to.toISOString()}`;
    await page.goto(app.url(url));
    await nextResult(page, "status");
    await page.locator("#status", { hasText: "Fixed range" }).waitFor();
    await page.getByRole("button", { name: "Menu of panel Responses by status" }).click();
    await page.getByRole("menuitem", { name: "View full-screen" }).click();
    await page.waitForURL(/viewPanel=status/);
    expect(await page.locator("article.panel:not([hidden])").count()).toBe(1);
    await screenshots(page, "live-full-screen");

    await page.getByRole("button", { name: "Menu of panel Responses by status" }).click();
    await page.getByRole("menuitem", { name: "Inspect data (table, CSV)" }).click();
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#inspect-csv")]);
    const csv = await readFile((await download.path())!, "utf8");
    const db = await app.metricsClient();
    try {
      const expected = await db.query(
        "SELECT status::text AS status, count(*) AS responses FROM http_requests WHERE (ts BETWEEN $1 AND $2) GROUP BY 1 ORDER BY 1",
        [from, to],
      );
      const lines = csv.trim().split("\r\n");
      expect(lines[0]).toBe("status,responses");
      expect(lines.slice(1)).toEqual(expected.rows.map((r) => `${r.status},${r.responses}`));
      expect(expected.rows.length).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
    await page.getByRole("tab", { name: "Query" }).click();
    await expect(page.locator("#inspect-rows").textContent()).resolves.toBe(String(csv.trim().split("\r\n").length - 1));
    await expect(page.locator("#inspect-sql").textContent()).resolves.toContain("FROM http_requests");
    await page.keyboard.press("Escape");
    await page.keyboard.press("Escape");
    await page.waitForURL((u) => !u.searchParams.has("viewPanel"));
  }, 90_000);
});

describe("variables", () => {
  test("changing a variable re-attaches the stream without a reload, and the URL carries it", async () => {
    await page.goto(app.url(`/dashboards/${app.dashboardId}`));
    const made = await page.evaluate(async (demoId) => {
      const demo = await (await fetch(`/api/dashboards/${demoId}`)).json();
      const sourceId = demo.spec.panels[0].sourceId;
      const res = await fetch(`/api/workspaces/${demo.workspaceId}/dashboards`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          spec: {
            title: "By service",
            time: { from: "now-1h", to: "now" },
            refreshIntervalMs: 5000,
            variables: [{ name: "service", type: "custom", values: ["accounts", "catalog", "checkout", "search"], default: "accounts" }],
            panels: [
              {
                id: "rpm",
                title: "Requests of one service",
                type: "timeseries",
                sourceId,
                sql: "SELECT $__timeGroup(ts, '1m') AS time, service, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1, 2 ORDER BY 1",
              },
            ],
          },
        }),
      });
      return { status: res.status, body: await res.json() };
    }, app.dashboardId);
    expect(made.status).toBe(201);
    const id = made.body.id as string;
    await page.goto(app.url(`/dashboards/${id}`));
    await nextResult(page, "rpm");
    await expect(page.locator("#var-service").inputValue()).resolves.toBe("accounts");
    const marker = await page.evaluate(() => {
      (window as unknown as { marker: number }).marker = 42;
      return 42;
    });
    const [stream] = await Promise.all([
      page.waitForResponse(
        (r) => r.url().includes("/stream?") && new URL(r.url()).searchParams.getAll("var-service").join() === "checkout",
      ),
      page.selectOption("#var-service", "checkout"),
    ]);
    expect(stream.status()).toBe(200);
    await page.waitForURL(/var-service=checkout/);
    // The new stream's snapshot redraws the panel.
    await nextResult(page, "rpm");
    await expect(page.locator("#var-service").inputValue()).resolves.toBe("checkout");
    // Same document: no reload happened.
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(marker);
  }, 90_000);
});

describe("a restart of the stream host", () => {
  test("the page shows it is reconnecting and recovers without a reload", async () => {
    await page.goto(app.url(`/dashboards/${app.dashboardId}`));
    const before = await nextResult(page, "rpm");
    await page.evaluate(() => {
      (window as unknown as { marker: number }).marker = 7;
    });
    await app.restart();
    await page.locator("#status", { hasText: "Live" }).waitFor({ timeout: 60_000 });
    const after = await nextResult(page, "rpm", before);
    expect(after).toBeGreaterThan(before);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(7);
  }, 180_000);
});
