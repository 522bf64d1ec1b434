// npm run bench -- editor: the dashboard editor in headless Chromium against the demo app (web/e2e/harness.ts),
// figures side by side in one run:
// - bundle: the bytes the list page and the editor page load (raw, gzip, brotli) with the editor in its own chunk,
//   and what every page loaded when the editor was bundled into main.js (the same build without splitting);
// - time to interactive from navigation start: the list page (dashboards listed) and the editor page (panels laid
//   out, then the SQL editor mounted on a panel), medians of several loads;
// - keystroke to verdict for a 50-line statement: a key typed at the end of the statement until the guard's verdict
//   is on screen (debounce + the /check round trip + drawing), beside the /check round trip alone and the server's
//   guard alone on the same statement;
// - keystroke cost: main-thread task time per key typed into the SQL editor (completion and lint included) beside a
//   bare <textarea> on the same page.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { brotliCompress, constants as zlib, gzip } from "node:zlib";
import * as esbuild from "esbuild";
import type { CDPSession, Page } from "playwright-core";
import type { Catalog } from "../lib/catalog/types.ts";
import { createGuard, loadGuardParser } from "../lib/sql-guard/index.ts";
import { type DemoApp, launchChromium, signIn, startDemoApp } from "../web/e2e/harness.ts";

const LOADS = 7;
const ROUNDS = 30;
const KEYS = 120;

const br = promisify(brotliCompress);
const gz = promisify(gzip);
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
const f1 = (n: number) => n.toFixed(1);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const median = (xs: number[]) => pct(xs, 50);

interface Sizes {
  raw: number;
  gzip: number;
  br: number;
}
async function sizesOf(buffers: Buffer[]): Promise<Sizes> {
  const out = { raw: 0, gzip: 0, br: 0 };
  for (const b of buffers) {
    out.raw += b.length;
    out.gzip += (await gz(b, { level: 9 })).length;
    out.br += (await br(b, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } })).length;
  }
  return out;
}
const sizeText = (s: Sizes) => `${kb(s.raw)} raw, ${kb(s.gzip)} gzip, ${kb(s.br)} br`;

/** The JS of the web build: per page with splitting (as built by web/build.ts), and as one bundle without. */
async function bundles(): Promise<{ list: Sizes; editor: Sizes; single: Sizes }> {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-bench-editor-"));
  try {
    const entry = fileURLToPath(new URL("../web/main.ts", import.meta.url));
    const common = {
      entryPoints: { main: entry },
      bundle: true,
      format: "esm" as const,
      platform: "browser" as const,
      target: ["es2022"],
      minify: true,
      write: false as const,
      metafile: true as const,
      logLevel: "silent" as const,
      define: { "process.env.NODE_ENV": '"production"' },
    };
    const split = await esbuild.build({
      ...common,
      outdir: join(dir, "split"),
      splitting: true,
      entryNames: "[name]",
      chunkNames: "chunk-[hash]",
    });
    const single = await esbuild.build({ ...common, outdir: join(dir, "single") });
    const js = (r: esbuild.BuildResult<{ write: false; metafile: true }>) => r.outputFiles.filter((f) => f.path.endsWith(".js"));
    const splitFiles = js(split);
    const main = splitFiles.find((f) => f.path.endsWith("/main.js"))!;
    // What main.js imports statically is loaded by every page; the rest only by the editor.
    const staticImports = new Set(
      split.metafile.outputs[Object.keys(split.metafile.outputs).find((k) => k.endsWith("main.js"))!]!.imports.filter(
        (i) => i.kind === "import-statement",
      ).map((i) => i.path.split("/").pop()),
    );
    const listFiles = splitFiles.filter((f) => f === main || staticImports.has(f.path.split("/").pop()));
    return {
      list: await sizesOf(listFiles.map((f) => Buffer.from(f.contents))),
      editor: await sizesOf(splitFiles.map((f) => Buffer.from(f.contents))),
      single: await sizesOf(js(single).map((f) => Buffer.from(f.contents))),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A 50-line panel statement the guard accepts on the demo catalog; the last line ends in a number. */
function fiftyLines(): string {
  const lines = ["SELECT $__timeGroup(ts, $__interval) AS time,"];
  for (let i = 0; i < 45; i++) lines.push(`  count(*) FILTER (WHERE status = ${200 + i} AND latency_ms > ${i * 10}) AS s${200 + i},`);
  lines.push("  count(*) AS total", "FROM http_requests", "WHERE $__timeFilter(ts)", "GROUP BY 1 ORDER BY 1");
  return lines.join("\n");
}

/** Main-thread task time so far (CDP Performance.getMetrics), in ms. */
async function taskMs(cdp: CDPSession): Promise<number> {
  const { metrics } = (await cdp.send("Performance.getMetrics")) as { metrics: { name: string; value: number }[] };
  return (metrics.find((m) => m.name === "TaskDuration")?.value ?? 0) * 1000;
}

async function timeToInteractive(page: Page, url: string, ready: () => boolean): Promise<number> {
  await page.goto(url, { waitUntil: "commit" });
  const at = await page.waitForFunction(ready, null, { polling: "raf", timeout: 60_000 });
  await at.dispose();
  return page.evaluate(() => performance.now());
}

export async function run(): Promise<void> {
  const sizes = await bundles();
  let app: DemoApp | null = null;
  const browser = await launchChromium();
  try {
    app = await startDemoApp();
    const page = await signIn(browser, app, "demo-editor");
    const editUrl = app.url(`/dashboards/${app.dashboardId}/edit`);

    // --- Time to interactive ---------------------------------------------------------------------------------
    const listTti: number[] = [];
    const editorTti: number[] = [];
    const sqlTti: number[] = [];
    for (let i = 0; i < LOADS; i++) {
      listTti.push(await timeToInteractive(page, app.url("/"), () => document.querySelector("#dashboards .dash-link") !== null));
      editorTti.push(await timeToInteractive(page, editUrl, () => document.querySelector("#layout .layout-card") !== null));
      await page.locator("#layout .layout-card").first().click();
      await page.locator("#sql-editor .cm-content").waitFor();
      sqlTti.push(await page.evaluate(() => performance.now()));
    }

    // --- Keystroke to verdict ---------------------------------------------------------------------------------
    const sql = fiftyLines();
    const { spec, sourceId } = await page.evaluate(async (id) => {
      const d = await (await fetch(`/api/dashboards/${id}`)).json();
      return { spec: d.spec, sourceId: d.spec.panels[0].sourceId as string };
    }, app.dashboardId);
    spec.panels[0].sql = sql;
    await page.locator("#tab-json").click();
    await page.locator("#spec").fill(JSON.stringify(spec, null, 2));
    await page.locator("#tab-panels").click();
    await page.locator("#layout .layout-card").first().click();
    await page.locator("#sql-editor .cm-content").waitFor();
    const lines = await page.locator("#sql-editor .cm-line").count();
    await page.locator("#sql-editor .cm-content").click();
    await page.keyboard.press("Control+End");
    await page.waitForFunction(() => document.getElementById("verdict")?.textContent === "The guard accepts this statement.", null, {
      timeout: 30_000,
    });
    await page.evaluate(() => {
      const w = window as unknown as { keyAt: number; verdictMs: number[] };
      w.verdictMs = [];
      document.addEventListener("keydown", () => (w.keyAt = performance.now()), true);
      new MutationObserver(() => w.verdictMs.push(performance.now() - w.keyAt)).observe(document.getElementById("verdict")!, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    for (let i = 0; i < ROUNDS; i++) {
      // "1x" is a syntax error and "1" is accepted: every key changes the verdict.
      await page.keyboard.press(i % 2 === 0 ? "x" : "Backspace");
      await page.waitForFunction((n) => (window as unknown as { verdictMs: number[] }).verdictMs.length >= n, i + 1, { timeout: 30_000 });
    }
    const verdictMs = await page.evaluate(() => (window as unknown as { verdictMs: number[] }).verdictMs);
    const roundTrip = await page.evaluate(
      async ({ id, text, n }) => {
        const out: number[] = [];
        for (let i = 0; i < n; i++) {
          const t = performance.now();
          const res = await fetch(`/api/sources/${id}/check`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ sql: i % 2 === 0 ? `${text}x` : text }),
          });
          await res.json();
          out.push(performance.now() - t);
        }
        return out;
      },
      { id: sourceId, text: sql, n: ROUNDS },
    );
    const catalog = (await page.evaluate(async (id) => (await (await fetch(`/api/sources/${id}`)).json()).catalog, sourceId)) as Catalog;
    await loadGuardParser();
    const guard = createGuard({ cacheSize: 0 });
    const guardMs: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      guard.check(i % 2 === 0 ? `${sql}x` : sql, catalog);
      guardMs.push(performance.now() - t);
    }

    // --- Keystroke cost -----------------------------------------------------------------------------------------
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Performance.enable");
    await page.locator("#sql-editor .cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.press("Enter");
    let t0 = await taskMs(cdp);
    await page.keyboard.type("abcdefghij klmnopqrs tuvwxyz ".repeat(5).slice(0, KEYS), { delay: 30 });
    await page.waitForTimeout(1000); // the last key's lint round trip
    const cmPerKey = ((await taskMs(cdp)) - t0) / KEYS;
    await page.evaluate(() => {
      const ta = document.createElement("textarea");
      ta.id = "bench-bare";
      ta.rows = 50;
      document.body.append(ta);
    });
    await page.locator("#bench-bare").fill(sql);
    await page.locator("#bench-bare").click();
    await page.keyboard.press("Control+End");
    t0 = await taskMs(cdp);
    await page.keyboard.type("abcdefghij klmnopqrs tuvwxyz ".repeat(5).slice(0, KEYS), { delay: 30 });
    await page.waitForTimeout(1000);
    const bareMs = ((await taskMs(cdp)) - t0) / KEYS;

    console.log(`editor: bundle, list page JS ${sizeText(sizes.list)}; editor page JS ${sizeText(sizes.editor)}`);
    console.log(
      `editor: bundle, before the split every page loaded ${sizeText(sizes.single)}; list page now ${(sizes.list.br / sizes.single.br).toFixed(2)}x of that (br)`,
    );
    console.log(
      `editor: time to interactive (median of ${LOADS}) list ${f1(median(listTti))} ms, editor panels ${f1(median(editorTti))} ms, SQL editor mounted after a click on a panel ${f1(median(sqlTti))} ms; editor/list ${(median(editorTti) / median(listTti)).toFixed(2)}x`,
    );
    console.log(
      `editor: keystroke to verdict, ${lines}-line statement (${ROUNDS} keys, 300 ms debounce included) p50 ${f1(median(verdictMs))} ms p95 ${f1(pct(verdictMs, 95))} ms; /check round trip p50 ${f1(median(roundTrip))} ms; server guard alone p50 ${f1(median(guardMs) * 1000)} us`,
    );
    console.log(
      `editor: keystroke cost (main-thread task time per key, ${KEYS} keys at 30 ms) SQL editor ${f1(cmPerKey)} ms, bare textarea ${f1(bareMs)} ms, ratio ${(cmPerKey / bareMs).toFixed(2)}x`,
    );
  } finally {
    await browser.close();
    await app?.stop();
  }
}
