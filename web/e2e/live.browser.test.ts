// Reading a dashboard as a Grafana user would, in Chromium against the demo: the time picker and the URL, reload,
// drag-zoom and back, a variable, the legend, full-screen and the CSV checked against the database, and a restart
// of the stream host survived without a reload.
import { readFile } from "node:fs/promises";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ContrastReport, contrastInBothSchemes } from "./contrast.ts";
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

/**
 * Waits until a card (by panel id) has a result stamped later than `after`, drawn when the card is in the viewport;
 * returns the stamp. Panels are drawn at the animation frame after their data arrives, so the stamp received
 * (updatedAt) can lead the one drawn (drawnAt), and a card below the fold is drawn only once it scrolls in.
 */
async function nextResult(p: Page, panelId: string, after = 0): Promise<number> {
  const handle = await p.waitForFunction(
    ([id, prev]) => {
      const card = document.getElementById(`panel-${id}`);
      const at = Number(card?.dataset.updatedAt ?? 0);
      const r = card?.getBoundingClientRect();
      const visible = r !== undefined && r.bottom > 0 && r.top < innerHeight && r.height > 0;
      return at > prev && (!visible || Number(card?.dataset.drawnAt ?? 0) === at) ? at : null;
    },
    [panelId, after] as const,
    { timeout: 30_000 },
  );
  return (await handle.jsonValue()) as number;
}

/** A panel's data as its inspector downloads it (the rows the chart draws), as CSV lines; closes the inspector. */
async function chartCsv(p: Page, title: string): Promise<string[]> {
  await p.getByRole("button", { name: `Menu of panel ${title}` }).click();
  await p.getByRole("menuitem", { name: "Inspect data (table, CSV)" }).click();
  const [download] = await Promise.all([p.waitForEvent("download"), p.click("#inspect-csv")]);
  const csv = await readFile((await download.path())!, "utf8");
  await p.keyboard.press("Escape");
  await p.locator("dialog.inspector").waitFor({ state: "detached" });
  return csv.trim().split("\r\n");
}

/** The first and last x-axis instants the chart of a panel covers (from its accessible name). */
async function chartLabel(p: Page, panelId: string): Promise<string> {
  return (await p.locator(`#panel-${panelId} .panel-body`).getAttribute("aria-label")) ?? "";
}

describe("the time picker and the URL", () => {
  test("the stream is opened once, by the page's inline script while the bundle loads (the policy allows it), and taken over", async () => {
    const p = await page.context().newPage();
    const streams: string[] = [];
    const refused: string[] = [];
    p.on("request", (r) => {
      if (r.url().includes("/stream")) streams.push(r.url());
    });
    p.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });
    // Records whether the inline script left its stream (before any of the page's scripts run).
    await p.addInitScript(() => {
      let held: unknown;
      Object.defineProperty(window, "__pulseboardEarlyStream", {
        configurable: true,
        get: () => held,
        set: (v) => {
          held = v;
          document.documentElement.dataset.earlyStream = "set";
        },
      });
    });
    try {
      await p.goto(app.url(`/dashboards/${app.dashboardId}?from=now-3h&to=now`));
      await nextResult(p, "rpm");
      await p.locator("#status", { hasText: "Live" }).waitFor({ timeout: 30_000 });
      expect(refused).toEqual([]);
      expect(await p.evaluate(() => document.documentElement.dataset.earlyStream)).toBe("set");
      // Taken over: the one stream request is the inline script's, and the global is gone.
      expect(streams).toHaveLength(1);
      expect(streams[0]).toContain("/stream?from=now-3h&to=now");
      expect(await p.evaluate(() => "__pulseboardEarlyStream" in window)).toBe(false);
    } finally {
      await p.close();
    }
  }, 60_000);

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

  test("one crosshair: hovering a time series shows the instant on the other time series too", async () => {
    await nextResult(page, "rpm");
    await nextResult(page, "p95");
    await expect(page.locator("#panel-p95 .tooltip").isHidden()).resolves.toBe(true);
    const box = (await page.locator("#panel-rpm .u-over").boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
    // The other chart, drawn lazily like every panel, follows the cursor through uPlot's sync.
    await page.locator("#panel-p95 .tooltip:not([hidden]) .tip-time").waitFor({ timeout: 10_000 });
    expect(await page.locator("#panel-p95 .tip-time").textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    await page.mouse.move(0, 0);
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
  test("choosing a value in the bar re-attaches the stream without a reload, the URL carries it, and the chart's data is the SQL's rows for that value", async () => {
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
                sql: "SELECT $__timeGroup(ts, '1m') AS time, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) AND service = $service GROUP BY 1 ORDER BY 1",
              },
            ],
          },
        }),
      });
      return { status: res.status, body: await res.json() };
    }, app.dashboardId);
    expect(made.status).toBe(201);
    const id = made.body.id as string;
    // A range that has ended: each view is queried once, so the page's data and the database's rows are of one moment.
    const to = new Date(Date.now() - 60_000);
    to.setUTCSeconds(0, 0);
    const from = new Date(to.getTime() - 30 * 60_000);
    await page.goto(app.url(`/dashboards/${id}?from=${from.toISOString()}&to=${to.toISOString()}`));
    await nextResult(page, "rpm");
    await expect(page.locator("#var-service").inputValue()).resolves.toBe("accounts");
    const accounts = await chartCsv(page, "Requests of one service");
    const marker = await page.evaluate(() => {
      (window as unknown as { marker: number }).marker = 42;
      return 42;
    });
    const before = Number(await page.locator("#panel-rpm").getAttribute("data-updated-at"));
    const [stream] = await Promise.all([
      page.waitForResponse(
        (r) => r.url().includes("/stream?") && new URL(r.url()).searchParams.getAll("var-service").join() === "checkout",
      ),
      page.selectOption("#var-service", "checkout"),
    ]);
    expect(stream.status()).toBe(200);
    await page.waitForURL(/var-service=checkout/);
    // The new stream's snapshot redraws the panel.
    await nextResult(page, "rpm", before);
    await expect(page.locator("#var-service").inputValue()).resolves.toBe("checkout");
    // Same document: no reload happened.
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(marker);

    // The data level: what the chart holds (its inspector's CSV) is the panel's SQL run on the database with the
    // chosen value bound, row for row, and not the rows of the value before.
    const checkout = await chartCsv(page, "Requests of one service");
    const db = await app.metricsClient();
    try {
      const sql =
        "SELECT date_bin(interval '1 minute', ts, timestamptz 'epoch') AS time, count(*) AS requests FROM http_requests WHERE (ts BETWEEN $1 AND $2) AND service = $3 GROUP BY 1 ORDER BY 1";
      const rows = async (service: string) =>
        (await db.query<{ time: Date; requests: string }>(sql, [from, to, service])).rows.map(
          (r) => `${r.time.toISOString()},${r.requests}`,
        );
      const expected = await rows("checkout");
      expect(expected.length).toBeGreaterThan(0);
      expect(checkout).toEqual(["time,requests", ...expected]);
      expect(accounts).toEqual(["time,requests", ...(await rows("accounts"))]);
      expect(checkout).not.toEqual(accounts);
    } finally {
      await db.end();
    }
  }, 120_000);
});

describe("contrast", () => {
  /** Every failure of both schemes, as lines naming the element, its text, the colours and the ratio. */
  const failures = (r: { light: ContrastReport; dark: ContrastReport }) =>
    (["light", "dark"] as const).flatMap((scheme) =>
      r[scheme].failures.map(
        (f) => `${scheme}: ${f.element} "${f.text}" ${f.color} on ${f.background} = ${f.ratio}:1 (needs ${f.required}:1)`,
      ),
    );

  test("the measurement finds text below 4.5:1 (a control: #888 on white is 3.54:1, too little for body text, enough for large text)", async () => {
    await page.goto(app.url(`/dashboards/${app.dashboardId}`));
    await nextResult(page, "rpm");
    await page.evaluate(() => {
      const add = (text: string, px: string) => {
        const p = document.createElement("p");
        p.textContent = text;
        // CSSOM, which the CSP allows (it forbids style attributes in markup).
        Object.assign(p.style, { color: "#888888", background: "#ffffff", fontSize: px, fontWeight: "700" });
        document.getElementById("main")!.append(p);
      };
      add("faint control", "15px");
      add("large control", "24px");
    });
    const report = await contrastInBothSchemes(page);
    for (const scheme of ["light", "dark"] as const) {
      expect(report[scheme].failures.filter((f) => f.text.endsWith("control"))).toEqual([
        { element: "p", text: "faint control", color: "#888888", background: "#ffffff", ratio: 3.54, required: 4.5 },
      ]);
    }
  }, 60_000);

  test("every text of the live page is at least 4.5:1 (3:1 when large) in light and dark: at rest, with the time picker, the panel menu and the inspector open, a series hidden, a past range and paused", async () => {
    await page.goto(app.url(`/dashboards/${app.dashboardId}`));
    await nextResult(page, "rpm");
    const seen: string[] = [];
    const measure = async (state: string) => {
      const report = await contrastInBothSchemes(page);
      expect(report.light.checked, state).toBeGreaterThan(20);
      seen.push(...failures(report).map((f) => `${state}: ${f}`));
    };
    await measure("at rest");
    await page.click("#time-picker-button");
    await page.locator("#time-picker:not([hidden])").waitFor();
    await measure("time picker");
    await page.keyboard.press("Escape");
    await page
      .getByRole("button", { name: /^Menu of panel / })
      .first()
      .click();
    await measure("panel menu");
    await page.getByRole("menuitem", { name: "Inspect data (table, CSV)" }).click();
    await page.locator("dialog.inspector").waitFor();
    await measure("inspector, data");
    await page.getByRole("tab", { name: "Query" }).click();
    await measure("inspector, query");
    await page.keyboard.press("Escape");
    await page.locator("#panel-rpm .legend-item").first().click();
    await measure("a series hidden");
    const to = new Date(Date.now() - 60_000);
    const from = new Date(to.getTime() - 20 * 60_000);
    await page.goto(app.url(`/dashboards/${app.dashboardId}?from=${from.toISOString()}&to=${to.toISOString()}`));
    await page.locator("#status", { hasText: "Fixed range" }).waitFor();
    await measure("a past range");
    await page.goto(app.url(`/dashboards/${app.dashboardId}?refresh=off`));
    await nextResult(page, "rpm");
    await measure("paused");
    expect(seen).toEqual([]);
  }, 120_000);
});

describe("a range that ends while it is watched", () => {
  test("reads Live until its fixed end, then ended and not refreshing on the same stream: no reconnect", async () => {
    const streams: string[] = [];
    const onRequest = (r: { url(): string }) => {
      if (r.url().includes("/stream")) streams.push(r.url());
    };
    page.on("request", onRequest);
    try {
      const to = new Date(Date.now() + 8000);
      const from = new Date(to.getTime() - 20 * 60_000);
      await page.goto(app.url(`/dashboards/${app.dashboardId}?from=${from.toISOString()}&to=${to.toISOString()}`));
      await page.locator("#status", { hasText: "Live" }).waitFor({ timeout: 30_000 });
      expect(await page.locator("#refresh-picker").isDisabled()).toBe(false);
      await page.locator("#status", { hasText: "Fixed range · not refreshing" }).waitFor({ timeout: 60_000 });
      await expect(page.locator("#time-picker-button").textContent()).resolves.toMatch(/ · ended$/);
      expect(await page.locator("#refresh-picker").isDisabled()).toBe(true);
      // Two seconds on: still the one stream (no reconnect), still not live.
      await page.waitForTimeout(2000);
      expect(streams).toHaveLength(1);
      await expect(page.locator("#status").textContent()).resolves.toBe("Fixed range · not refreshing");
    } finally {
      page.off("request", onRequest);
    }
  }, 120_000);
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
