// The dashboard editor in Chromium against the demo (web/e2e/harness.ts), as a new editor would use it: a new
// dashboard, a panel through the form, SQL typed with completion, the guard's refusal underlined as you type, a
// time series preview with a variable, type and unit, a resize by dragging, reorder and undo, save, a live tab that
// follows, history with a diff and a restore, and a 409 from a second tab that keeps both changes. The editor is
// its own chunk: the list page never downloads CodeMirror.
import type { Browser, Page, Response, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { contrastInBothSchemes } from "./contrast.ts";
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

interface Dashboard {
  id: string;
  version: number;
  spec: {
    title: string;
    panels: {
      id: string;
      title: string;
      type: string;
      unit?: string;
      sql: string;
      gridPos?: { x: number; y: number; w: number; h: number };
    }[];
    variables?: { name: string; values?: string[] }[];
  };
}

const workspaceId = async (p: Page) =>
  ((await (await p.request.get(app.url("/api/me"))).json()) as { workspaces: { id: string }[] }).workspaces[0].id;
const dashboards = async (p: Page) =>
  ((await (await p.request.get(app.url(`/api/workspaces/${await workspaceId(p)}/dashboards`))).json()) as { dashboards: unknown[] })
    .dashboards;
const stored = async (p: Page, id: string) => (await (await p.request.get(app.url(`/api/dashboards/${id}`))).json()) as Dashboard;

/** Every script the page loads, with its text, from now on. */
function scriptsOf(p: Page): () => Promise<{ url: string; text: string }[]> {
  const seen: Promise<{ url: string; text: string }>[] = [];
  const onResponse = (r: Response) => {
    if (r.request().resourceType() === "script") seen.push(r.text().then((text) => ({ url: r.url(), text })));
  };
  p.on("response", onResponse);
  return async () => {
    p.off("response", onResponse);
    return Promise.all(seen);
  };
}

/** CodeMirror's own class name, present in its view code and in no other script of ours. */
const CODEMIRROR_MARK = "cm-content";

const sqlContent = () => page.locator("#sql-editor .cm-content");

/** Waits until the editor's chunk has booted and loaded the dashboard (its buttons are in the page's HTML before). */
const editorReady = (p: Page) => p.locator("#editor:not([aria-busy])").waitFor({ timeout: 30_000 });

/** Empties the SQL editor and types `text` key by key (no Enter: Enter accepts an open completion). */
async function typeSql(text: string): Promise<void> {
  await sqlContent().click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.type(text, { delay: 5 });
}

/**
 * Waits for the completion list to offer `label` as its selected option, then takes it with Enter. CodeMirror
 * honours Enter on a list only once it has been open for its interactionDelay (75 ms), so that a fast typist's
 * Enter is a newline; the wait below lets a person's pause pass before the key.
 */
async function acceptCompletion(label: string): Promise<void> {
  const selected = page.locator('.cm-tooltip-autocomplete li[aria-selected="true"]');
  await expect
    .poll(async () => ((await selected.count()) > 0 ? await selected.first().textContent() : ""), { timeout: 15_000 })
    .toMatch(new RegExp(`^${label.replace(/[$.]/g, "\\$&")}`));
  await page.waitForTimeout(250);
  await page.keyboard.press("Enter");
  await page.locator(".cm-tooltip-autocomplete").waitFor({ state: "detached", timeout: 5_000 });
}

/** The text of every underlined (refused) stretch, in order: a mark split by highlighting is one stretch. */
const underlined = () =>
  page
    .locator(".cm-lintRange-error")
    .allTextContents()
    .then((t) => t.join(""));

/** The spec as the JSON tab shows it (the tab is opened to read it, then Panels again). */
async function specJson(): Promise<Dashboard["spec"]> {
  await page.locator("#tab-json").click();
  const text = await page.inputValue("#spec");
  await page.locator("#tab-panels").click();
  return JSON.parse(text) as Dashboard["spec"];
}
const panelSql = async () => (await specJson()).panels.find((p) => p.id === "panel-1")?.sql;

describe("the editor is a chunk of its own", () => {
  test("the dashboard list loads no CodeMirror; the editor page loads it and boots", async () => {
    const listScripts = scriptsOf(page);
    await page.goto(app.url("/"));
    await page.locator("#new-dashboard").waitFor({ state: "visible" });
    const onList = await listScripts();
    expect(onList.length).toBeGreaterThan(0);
    expect(onList.filter((s) => s.text.includes(CODEMIRROR_MARK)).map((s) => s.url)).toEqual([]);

    const violations: string[] = [];
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    const editorScripts = scriptsOf(page);
    await page.goto(app.url(`/dashboards/${app.dashboardId}/edit`));
    await page.locator(".layout-card").first().click();
    await page.locator("#sql-editor .cm-editor").waitFor({ state: "visible", timeout: 30_000 });
    const onEditor = await editorScripts();
    // CodeMirror's own styles reach its view (in a shadow root: the CSP blocks <style> elements), and nothing was
    // refused by the CSP on the way.
    expect(await page.locator("#sql-editor .cm-content").evaluate((el) => getComputedStyle(el).whiteSpace)).not.toBe("normal");
    expect(violations).toEqual([]);
    const chunks = onEditor.filter((s) => s.text.includes(CODEMIRROR_MARK));
    expect(chunks.map((s) => new URL(s.url).pathname)).toEqual([expect.stringMatching(/^\/assets\/chunk-[A-Z0-9]+\.js$/)]);
  }, 90_000);
});

describe("building a dashboard without touching JSON", () => {
  let id = "";
  let before = 0;

  test("New dashboard, a panel through the form, SQL with completion of a table and a column", async () => {
    await page.goto(app.url("/"));
    before = (await dashboards(page)).length;
    await page.locator("#new-dashboard").click();
    await page.waitForURL((u) => u.pathname === "/dashboards/new/edit");
    await editorReady(page);
    await page.locator("#add-panel").click();
    await page.locator('#panel-form input[name="title"]').fill("Checkout requests");
    await sqlContent().waitFor({ state: "visible" });

    await typeSql("SELECT $__timeGroup(ts, $__interval) AS time, count(*) AS requests FROM http_req");
    await acceptCompletion("http_requests");
    await page.keyboard.type(" WHERE $__timeFilter(ts) AND http_requests.sta", { delay: 5 });
    await acceptCompletion("status");
    await page.keyboard.type(" < 500 GROUP BY 1 ORDER BY 1", { delay: 5 });
    await expect
      .poll(panelSql)
      .toBe(
        "SELECT $__timeGroup(ts, $__interval) AS time, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) AND http_requests.status < 500 GROUP BY 1 ORDER BY 1",
      );
    await expect.poll(() => page.locator("#verdict").textContent(), { timeout: 15_000 }).toBe("The guard accepts this statement.");
    expect(await page.locator(".cm-lintRange-error").count()).toBe(0);
    // Nothing exists on the server until the first save.
    expect((await dashboards(page)).length).toBe(before);
  }, 120_000);

  test("SELECT * FROM pg_shadow is refused and underlined at the name, without pressing anything", async () => {
    await typeSql("SELECT * FROM pg_shadow");
    await expect.poll(() => page.locator("#verdict").textContent(), { timeout: 15_000 }).toMatch(/^Refused \(catalog\): .*pg_shadow/);
    expect(await underlined()).toBe("pg_shadow");
    await screenshots(page, "editor-refusal");
  }, 60_000);

  test("a custom variable, used in the SQL through completion; the preview draws a time series with it", async () => {
    await page.locator("#tab-settings").click();
    await page.locator("#add-variable").click();
    await page.locator('input[name="var-name-0"]').fill("service");
    await page.locator('input[name="var-values-0"]').fill("checkout, search, accounts");
    await page.locator("#tab-panels").click();

    await typeSql(
      "SELECT $__timeGroup(ts, $__interval) AS time, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) AND service = $ser",
    );
    await acceptCompletion("$service");
    await page.keyboard.type(" GROUP BY 1 ORDER BY 1", { delay: 5 });
    await expect
      .poll(panelSql)
      .toBe(
        "SELECT $__timeGroup(ts, $__interval) AS time, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) AND service = $service GROUP BY 1 ORDER BY 1",
      );
    await expect.poll(() => page.locator("#verdict").textContent(), { timeout: 15_000 }).toBe("The guard accepts this statement.");
    expect(await underlined()).toBe("");

    await page.locator('select[name="preview-var-service"]').selectOption("search");
    await page.locator('#panel-form select[name="type"]').selectOption("timeseries");
    await page.locator('#panel-form input[name="unit"]').fill("req/min");
    const answer = page.waitForResponse((r) => r.url().endsWith("/query-preview"));
    await page.locator("#preview-run").click();
    const response = await answer;
    expect(response.request().postDataJSON().values).toEqual({ service: ["search"] });
    const result = (await response.json()) as { rows: [number, number][]; range: { fromMs: number; toMs: number } };
    const chart = page.locator('#preview .preview-chart[data-type="timeseries"]');
    await chart.locator("canvas >> visible=true").first().waitFor({ state: "visible", timeout: 30_000 });
    const previewed = result.rows.reduce((sum, r) => sum + Number(r[1]), 0);
    expect(previewed).toBeGreaterThan(0);

    // The same range on the metrics database: the preview counted the rows of `search` alone, bound as a value.
    const client = await app.metricsClient();
    try {
      const { rows } = await client.query(
        "SELECT count(*) FILTER (WHERE service = 'search')::int AS search, count(*)::int AS total FROM http_requests WHERE ts BETWEEN to_timestamp($1 / 1000.0) AND to_timestamp($2 / 1000.0)",
        [result.range.fromMs, result.range.toMs],
      );
      expect(rows[0].search).toBeGreaterThanOrEqual(previewed);
      expect(rows[0].search).toBeLessThan(previewed * 1.01 + 10);
      expect(rows[0].total).toBeGreaterThan(previewed * 2);
    } finally {
      await client.end();
    }
    await screenshots(page, "editor-preview");
  }, 120_000);

  test("resize by dragging the corner; duplicate, reorder and undo", async () => {
    const card = page.locator('.layout-card[data-panel-id="panel-1"]');
    await card.scrollIntoViewIfNeeded();
    const start = (await specJson()).panels[0].gridPos!;
    const grid = (await page.locator("#layout").boundingBox())!;
    const cell = grid.width / 24;
    const handle = (await card.locator(".layout-resize").boundingBox())!;
    const [x0, y0] = [handle.x + handle.width / 2, handle.y + handle.height / 2];
    await page.mouse.move(x0, y0);
    await page.mouse.down();
    await page.mouse.move(x0 + cell * 4, y0 + 60, { steps: 10 });
    await page.mouse.up();
    await expect.poll(async () => (await specJson()).panels[0].gridPos).toEqual({ ...start, w: start.w + 4, h: start.h + 2 });

    await page.locator("#panel-form").getByRole("button", { name: "Duplicate" }).click();
    await expect.poll(async () => (await specJson()).panels.map((p) => p.id)).toEqual(["panel-1", "panel-2"]);
    const moveUp = page.locator("#panel-form").getByRole("button", { name: "Move up" });
    await moveUp.click();
    await expect.poll(async () => (await specJson()).panels.map((p) => p.id)).toEqual(["panel-2", "panel-1"]);
    // Ctrl+Z outside a text field undoes the editor's last step: the order comes back.
    await moveUp.focus();
    await page.keyboard.press("Control+Z");
    await expect.poll(async () => (await specJson()).panels.map((p) => p.id)).toEqual(["panel-1", "panel-2"]);
    await page.keyboard.press("Control+Shift+Z");
    await expect.poll(async () => (await specJson()).panels.map((p) => p.id)).toEqual(["panel-2", "panel-1"]);
    await page.locator("#undo").click();
    await expect.poll(async () => (await specJson()).panels.map((p) => p.id)).toEqual(["panel-1", "panel-2"]);
  }, 60_000);

  test("Ctrl+S saves the new dashboard: one dashboard more, with everything set through the form", async () => {
    await page.locator("#tab-settings").click();
    await page.locator('#pane-settings input[name="title"]').fill("Checkout traffic");
    await page.locator("#tab-panels").click();
    await page.keyboard.press("Control+S");
    await page.waitForURL((u) => /^\/dashboards\/db_[^/]+\/edit$/.test(u.pathname), { timeout: 15_000 });
    await expect.poll(() => page.locator("#message").textContent()).toContain("Saved version 1.");
    id = /\/dashboards\/([^/]+)\/edit/.exec(page.url())![1];
    expect((await dashboards(page)).length).toBe(before + 1);
    const d = await stored(page, id);
    expect(d.spec.title).toBe("Checkout traffic");
    expect(d.spec.variables).toEqual([{ name: "service", type: "custom", values: ["checkout", "search", "accounts"] }]);
    expect(d.spec.panels.map((p) => [p.id, p.title, p.type, p.unit])).toEqual([
      ["panel-1", "Checkout requests", "timeseries", "req/min"],
      ["panel-2", "Checkout requests (copy)", "timeseries", "req/min"],
    ]);
    expect(d.spec.panels[0].sql).toContain("service = $service");
    expect(d.spec.panels[0].gridPos).toEqual({ x: 0, y: 0, w: 16, h: 10 });
  }, 60_000);

  test("a second tab on the live page updates by itself when the editor saves", async () => {
    const live = await page.context().newPage();
    try {
      await live.goto(app.url(`/dashboards/${id}`));
      await expect.poll(() => live.locator("#panel-panel-1-title").textContent(), { timeout: 30_000 }).toContain("Checkout requests");
      await page.locator('.layout-card[data-panel-id="panel-1"]').click();
      await page.locator('#panel-form input[name="title"]').fill("Requests by service");
      await page.keyboard.press("Control+S");
      await expect.poll(() => page.locator("#message").textContent()).toContain("Saved version 2.");
      await expect.poll(() => live.locator("#panel-panel-1-title").textContent(), { timeout: 30_000 }).toContain("Requests by service");
      await screenshots(live, "editor-live-tab");
    } finally {
      await live.close();
    }
  }, 90_000);

  test("history: the versions, a diff of two, and a restore of the older one as a new version", async () => {
    await page.locator("#history-open").click();
    const dialog = page.locator("#history");
    await dialog.locator('input[name="compare-1"]').waitFor({ state: "visible", timeout: 15_000 });
    expect(await dialog.locator("tbody tr").count()).toBe(2);
    await expect.poll(() => page.locator("#history-diff").textContent()).toContain("From version 1 to version 2");
    expect(await page.locator("#history-diff").textContent()).toContain("Requests by service");
    await screenshots(page, "editor-history");
    await dialog.locator('button.restore[data-version="1"]').click();
    await expect.poll(() => page.locator("#message").textContent()).toContain("Restored version 1 as version 3.");
    const d = await stored(page, id);
    expect(d.version).toBe(3);
    expect(d.spec.panels[0].title).toBe("Checkout requests");
    // The form shows the restored spec.
    await expect.poll(() => page.locator('#panel-form input[name="title"]').inputValue()).toBe("Checkout requests");
  }, 60_000);

  test("a 409 forced from a second tab: Keep both saves both changes", async () => {
    const other = await page.context().newPage();
    try {
      await other.goto(app.url(`/dashboards/${id}/edit`));
      await editorReady(other);
      await other.locator('.layout-card[data-panel-id="panel-2"]').click();
      await other.locator('#panel-form input[name="unit"]').fill("rps");
      await other.locator("#save").click();
      await expect.poll(() => other.locator("#message").textContent()).toContain("Saved version 4.");
    } finally {
      await other.close();
    }
    // This tab still edits version 3.
    await page.locator('#panel-form input[name="title"]').fill("Checkout requests per minute");
    await page.locator("#save").click();
    const conflict = page.locator("#conflict");
    await conflict.locator("#keep-both").waitFor({ state: "visible", timeout: 15_000 });
    expect(await conflict.textContent()).toContain("rps");
    expect(await conflict.textContent()).toContain("Checkout requests per minute");
    await screenshots(page, "editor-conflict");
    await conflict.locator("#keep-both").click();
    await expect.poll(() => page.locator("#message").textContent()).toContain("Saved version 5.");
    const d = await stored(page, id);
    expect(d.spec.panels.map((p) => [p.title, p.unit])).toEqual([
      ["Checkout requests per minute", "req/min"],
      ["Checkout requests (copy)", "rps"],
    ]);
  }, 60_000);
});

test("Cancel on a never-saved dashboard leaves nothing behind", { timeout: 60_000 }, async () => {
  const before = (await dashboards(page)).length;
  await page.goto(app.url("/"));
  await page.locator("#new-dashboard").click();
  await editorReady(page);
  await page.locator("#add-panel").click();
  await page.locator("#cancel").click();
  await page.waitForURL((u) => u.pathname === "/");
  expect((await dashboards(page)).length).toBe(before);
});

describe("the SQL editor's colours and a save's warnings, then a refused save, on the demo dashboard", () => {
  test("every SQL token is at least 4.5:1 against the editor, in light and dark", async () => {
    await page.goto(app.url(`/dashboards/${app.dashboardId}/edit`));
    await editorReady(page);
    await page.locator(".layout-card").first().click();
    await sqlContent().waitFor({ state: "visible" });
    // Every kind of token lang-sql marks: keyword, type, builtin, string, number, bool, null, quoted name, comment.
    await typeSql(`SELECT 'text' AS s, 42 AS n, true, NULL, "Quoted", now()::timestamptz -- a comment`);
    const report = await contrastInBothSchemes(page, "#sql-editor");
    for (const scheme of ["light", "dark"] as const) {
      expect(report[scheme].checked, scheme).toBeGreaterThanOrEqual(8);
      expect(report[scheme].failures, scheme).toEqual([]);
    }
  }, 90_000);

  test("a save whose panel gives too many points per series shows the warning on that panel, until dismissed", async () => {
    const card = page.locator(".layout-card.selected");
    const panelId = (await card.getAttribute("data-panel-id"))!;
    // A 1-second bucket: over any saved range of more than 12 minutes, more than 720 points per series.
    await typeSql(
      "SELECT date_bin('1 second', ts, timestamptz 'epoch') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
    );
    await expect.poll(() => page.locator("#verdict").textContent(), { timeout: 15_000 }).toBe("The guard accepts this statement.");
    await page.locator("#save").click();
    const note = page.locator(`#save-warning[data-warning-for="${panelId}"]`);
    await note.waitFor({ timeout: 15_000 });
    await expect(note.textContent()).resolves.toMatch(/points per series over .*; 720 are kept/);
    await expect(page.locator(`.layout-card[data-panel-id="${panelId}"] .layout-warning`).textContent()).resolves.toMatch(/720 are kept/);
    await expect(page.locator("#message").textContent()).resolves.toMatch(/^Saved version \d+\..*One panel gives more points/);
    await note.getByRole("button", { name: /^Dismiss the warning of panel / }).click();
    await note.waitFor({ state: "detached" });
    expect(await page.locator(".layout-warning").count()).toBe(0);
  }, 90_000);

  test("the configuration store refusing a save: its error is shown and the draft is kept, in the page and the browser", async () => {
    const title = "Kept through a refused save";
    await page.locator('#panel-form input[name="title"]').fill(title);
    // The API answers as it does when the configuration store is down (a coded 503), for this dashboard's save only.
    const refuse = (route: Route) =>
      route.request().method() === "PUT"
        ? route.fulfill({
            status: 503,
            contentType: "application/problem+json",
            body: JSON.stringify({
              type: "about:blank",
              title: "Service Unavailable",
              status: 503,
              code: "config_store_unavailable",
              detail: "The configuration store is unavailable; try again shortly.",
            }),
          })
        : route.fallback();
    await page.route(`**/api/dashboards/${app.dashboardId}`, refuse);
    await page.locator("#save").click();
    const message = page.locator("#message");
    await expect
      .poll(() => message.textContent(), { timeout: 15_000 })
      .toBe("The configuration store is unavailable; try again shortly. Your changes are kept in this browser and can be saved again.");
    expect(await page.locator('#panel-form input[name="title"]').inputValue()).toBe(title);
    const drafts = await page.evaluate(() =>
      Object.keys(localStorage)
        .filter((k) => k.startsWith("pulseboard.draft."))
        .map((k) => localStorage.getItem(k) ?? ""),
    );
    expect(drafts.some((d) => d.includes(title))).toBe(true);
    expect(await page.locator("#save").isDisabled()).toBe(false);
    await page.unroute(`**/api/dashboards/${app.dashboardId}`, refuse);
    await page.locator("#save").click();
    await expect.poll(() => message.textContent(), { timeout: 15_000 }).toMatch(/^Saved version \d+\./);
  }, 90_000);
});
