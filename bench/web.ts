// npm run bench -- web: in headless Chromium, a 20-panel dashboard of 4 series x 720 points drawn by uPlot (the live
// page's charts) and by the SVG renderer of web/charts/timeseries.ts side by side: time to the first chart (from
// navigation start, bundle parse included, and the first draw of all 20 panels alone), main-thread time per tick
// (p50, p95) over 300 ticks that slide every series by one point, and the JS heap after a GC at tick 100 and 300.
import { createServer } from "node:http";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS } from "../web/e2e/harness.ts";

const ENTRY = fileURLToPath(new URL("./web/page.ts", import.meta.url));

interface Result {
  impl: string;
  firstDraw: number;
  firstChartAt: number;
  ticks: number[];
  heapAt100: number;
  heapAt300: number;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const f1 = (n: number) => n.toFixed(1);
const mb = (n: number) => (n / 1024 / 1024).toFixed(2);

export async function run(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-bench-web-"));
  await esbuild.build({
    entryPoints: { page: ENTRY },
    outdir: dir,
    bundle: true,
    format: "esm",
    minify: true,
    platform: "browser",
    target: ["es2022"],
    logLevel: "silent",
  });
  const js = await readFile(join(dir, "page.js"));
  const css = await readFile(join(dir, "page.css")).catch(() => Buffer.from(""));
  const html = `<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/page.css">
<style>#grid{display:grid;grid-template-columns:repeat(2,1fr);gap:8px;width:1200px}.panel-body{height:300px;position:relative}</style>
</head><body><div id="grid"></div><script type="module" src="/page.js"></script></body></html>`;
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/page.js") res.writeHead(200, { "content-type": "text/javascript" }).end(js);
    else if (path === "/page.css") res.writeHead(200, { "content-type": "text/css" }).end(css);
    else res.writeHead(200, { "content-type": "text/html" }).end(html);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, "--enable-precise-memory-info", "--js-flags=--expose-gc"],
  });
  try {
    const results: Result[] = [];
    for (const impl of ["uplot", "svg"]) {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.on("pageerror", (e) => console.error(`web ${impl}: page error ${e.message}`));
      page.on("crash", () => console.error(`web ${impl}: the page crashed`));
      await page.goto(`http://127.0.0.1:${port}/?impl=${impl}`);
      const handle = await page.waitForFunction(() => window.benchResult, null, { timeout: 600_000, polling: 500 });
      results.push((await handle.jsonValue()) as Result);
      await page.close();
    }
    console.log("web: 20 panels x 4 series x 720 points, 300 ticks (one point per series per tick), headless Chromium");
    for (const r of results) {
      console.log(
        `web ${r.impl.padEnd(5)}: first chart ${f1(r.firstChartAt)} ms after navigation (draw of all 20: ${f1(r.firstDraw)} ms), tick main-thread p50 ${f1(pct(r.ticks, 50))} ms p95 ${f1(pct(r.ticks, 95))} ms, heap tick 100 ${mb(r.heapAt100)} MB, tick 300 ${mb(r.heapAt300)} MB (growth ${mb(r.heapAt300 - r.heapAt100)} MB)`,
      );
    }
    const [u, s] = results as [Result, Result];
    console.log(
      `web ratio uplot/svg: first draw ${(u.firstDraw / s.firstDraw).toFixed(2)}x, tick p95 ${(pct(u.ticks, 95) / pct(s.ticks, 95)).toFixed(2)}x, heap at 300 ${(u.heapAt300 / s.heapAt300).toFixed(2)}x`,
    );
    console.log(`web targets (uplot): first chart <= 300 ms, tick p95 <= 8 ms, no heap growth between tick 100 and 300`);
  } finally {
    await browser.close();
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
