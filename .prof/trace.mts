import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import * as esbuild from "esbuild";
import { chromium } from "playwright-core";
const root = process.argv[2];
const query = process.argv[3] ?? "impl=uplot&ticks=40";
const viewportH = Number(process.argv[4] ?? 900);
await esbuild.build({ entryPoints: { page: `${root}/bench/web/page.ts` }, outdir: "/tmp/prof/out", bundle: true, format: "esm", minify: false, platform: "browser", target: ["es2022"], logLevel: "silent" });
const js = await readFile("/tmp/prof/out/page.js");
const css = await readFile("/tmp/prof/out/page.css").catch(() => Buffer.from(""));
const { CHROMIUM, CHROMIUM_ARGS } = await import(`${root}/web/e2e/harness.ts`);
const { snapshotPanels } = await import(`${root}/bench/web/data.ts`);
const snap = JSON.stringify(snapshotPanels());
const src = await readFile(`${root}/bench/web.ts`, "utf8");
const html = src.match(/const html = `([\s\S]*?)`;/)![1];
const server = createServer((req, res) => {
  const p = (req.url ?? "/").split("?")[0];
  if (p === "/snapshot.json") return res.writeHead(200).end(snap);
  if (p === "/page.js") res.writeHead(200, { "content-type": "text/javascript" }).end(js);
  else if (p === "/page.css") res.writeHead(200, { "content-type": "text/css" }).end(css);
  else res.writeHead(200, { "content-type": "text/html" }).end(html);
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const port = (server.address() as { port: number }).port;
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...(process.env.XFLAGS ? process.env.XFLAGS.split(" ") : []), "--enable-precise-memory-info", "--js-flags=--expose-gc"] });
const page = await browser.newPage({ viewport: { width: 1280, height: viewportH } });
await browser.startTracing(page, { path: "/tmp/prof/trace.json", categories: ["devtools.timeline", "blink", "cc", "gpu", "skia", "disabled-by-default-devtools.timeline", "v8"] });
await page.goto(`http://127.0.0.1:${port}/?${query}`);
await page.waitForFunction(() => (window as any).benchResult, null, { timeout: 600000, polling: 500 });
await browser.stopTracing();
const trace = JSON.parse(await readFile("/tmp/prof/trace.json", "utf8"));
const events = trace.traceEvents ?? trace;
const threads = new Map<string, string>();
for (const e of events) if (e.name === "thread_name") threads.set(`${e.pid}:${e.tid}`, e.args.name);
const main = [...threads].filter(([, n]) => n === "CrRendererMain").map(([k]) => k);
console.log("main threads", main);
// self time per event name on the renderer main thread (X events), nested subtraction
const agg = new Map<string, number>();
for (const k of main) {
  const evs = events.filter((e: any) => `${e.pid}:${e.tid}` === k && e.ph === "X" && e.dur).sort((a: any, b: any) => a.ts - b.ts || b.dur - a.dur);
  const stack: any[] = [];
  for (const e of evs) {
    while (stack.length && stack.at(-1).ts + stack.at(-1).dur <= e.ts) stack.pop();
    const parent = stack.at(-1);
    if (parent) parent.self -= e.dur;
    e.self = e.dur;
    stack.push(e);
  }
  for (const e of evs) agg.set(e.name, (agg.get(e.name) ?? 0) + e.self / 1000);
}
for (const [k, v] of [...agg].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(v.toFixed(1).padStart(9), k);
await browser.close(); server.close(); process.exit(0);
