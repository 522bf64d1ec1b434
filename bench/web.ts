// npm run bench -- web: in headless Chromium, a 20-panel dashboard of 4 series x 720 points (bench/web/data.ts) and
// 300 ticks that slide every series by one point, through the live page's code path (bench/web/page.ts): the
// snapshot parsed and merged into the rolling windows, each tick one panel-delta frame per panel decoded, applied and
// merged (mergeDelta), the panels drawn by renderResult (uPlot) through the live page's draw scheduler.
//
// What is measured, the same way for every line:
// - first chart (in a browser that has loaded one trivial page, as a user's running browser has): ms from navigation
//   start (the page's time origin; bundle download and parse included) to the end of the first frame that draws a
//   chart of the snapshot, style, layout and paint included (its long-animation-frame entry's end when it has one,
//   else a task posted from the scheduler's animation-frame callback), with its parts: when the stream was opened, script start, when the first
//   panel was taken (uPlot: from the snapshot's first bytes, while the rest arrives, as the live page does) and its
//   parse, when the whole snapshot event was received and its intake (uPlot: cut into panels, the others left for
//   after the first frame; SVG: every panel merged and drawn), that frame and the charts it drew; then when the last
//   visible chart of the snapshot was painted, and in how many frames;
// - the scheduler draws within a frame budget, so a tick's drawing may span several frames. Main-thread time per
//   tick is the total: the task that decodes and merges the tick's 20 frames (start to end), plus every frame that
//   draws the tick's data, each from the scheduler's animation-frame callback to a task posted from it (the draws,
//   uPlot's commit, the legend texts, then style, layout and paint). Idle time between them (waiting for a frame) is
//   not main-thread work and is left out. p50 and p95 over 300 ticks, and both parts' p95. Beside it: the longest
//   single frame of a tick (what makes jank) and the time from the data task's start to the end of the last frame
//   that drew the tick (all visible charts drawn), p95 each;
// - heap: usedJSHeapSize after a forced GC at tick 100 and tick 300 (the page's; the chart worker has a heap of its own,
//   which holds each drawn chart's columns);
// - the chart worker's time per tick (web/charts/chart-worker.ts: the lines and legend figures traced and rastered
//   on its own thread, which the page starts after the first chart is painted): not main-thread time, printed beside
//   it; the tick's "all visible charts drawn" ends when the worker has drawn it too. A second line at 1280x900 runs
//   without the worker (?worker=off: everything on the page's thread), right after the first, for the comparison.
// The SVG renderer draws as each result is merged, so its "merge" includes drawing all 20 and its ratio to uPlot is
// taken from the snapshot received to the charts painted.
// The live page draws only panels in the viewport, so the uPlot line says how many were visible (1280x900: 2 columns
// of the live page's panels, its markup and stylesheet); a second uPlot line runs in a viewport tall enough for all 20, the cost of a tick when every chart
// is drawn. The SVG renderer (web/charts/timeseries.ts) draws all 20 synchronously on every tick, as the page did
// before uPlot: the renderer comparison is uPlot with all 20 visible against it. A second uPlot line at 1280x900 runs the
// scheduler without its frame budget (every due visible chart in one frame, ?budget=none), for the budget's effect.
import { createServer } from "node:http";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { chromium } from "playwright-core";
import { EARLY_STREAM_SCRIPT } from "../lib/live/early-stream.ts";
import { uplotLazyIntl } from "../web/uplot-lazy-intl.ts";
import { deflateSink, processDeflater } from "../stream-host/stream-compression.ts";
import { buildChartWorker } from "../web/build.ts";
import { CHROMIUM, CHROMIUM_ARGS } from "../web/e2e/harness.ts";
import { BENCH_DONE, PANELS, snapshotFrame } from "./web/data.ts";

const ENTRY = fileURLToPath(new URL("./web/page.ts", import.meta.url));

interface Result {
  impl: string;
  scriptStart: number;
  streamOpened: number;
  fetched: number;
  firstTaken: number;
  parseMs: number;
  mergeMs: number;
  firstFrame: number;
  firstFrameCharts: number;
  firstDraw: { windowMs: number; chartMs: number };
  firstChartAt: number;
  allVisibleAt: number;
  snapshotFrames: number;
  ticks: number[];
  dataMs: number[];
  frameMs: number[];
  longestFrameMs: number[];
  allDrawnMs: number[];
  framesPerTick: number[];
  /** Per tick, the chart worker's time drawing it (its own thread); empty when the worker was off. */
  workerMs: number[];
  visible: number;
  heapAt100: number;
  heapAt300: number;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const f1 = (n: number) => n.toFixed(1);
const mb = (n: number) => (n / 1024 / 1024).toFixed(2);

/**
 * Builds the bench page and serves it on a loopback port: the page, its bundle and stylesheet, and the stream. The
 * page's HTML is the live page's head (handlers/pages/layout.ts): the early stream's inline script first, then the
 * stylesheet; `?early=off` leaves the script out (the page's stream client then opens the stream itself, as before).
 */
export async function startBenchPage(opts: { minify?: boolean } = {}): Promise<{ port: number; close(): Promise<void>; js: string }> {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-bench-web-"));
  // The chart worker, as the web build makes it and names it to the page (web/build.ts).
  const workerName = await buildChartWorker(dir, { minify: opts.minify ?? true, sourcemap: false });
  const worker = await readFile(join(dir, workerName));
  await esbuild.build({
    entryPoints: { page: ENTRY },
    outdir: dir,
    bundle: true,
    format: "esm",
    minify: opts.minify ?? true,
    platform: "browser",
    target: ["es2022"],
    logLevel: "silent",
    // As the web build does (web/build.ts): uPlot's Intl objects made on first use.
    plugins: [uplotLazyIntl],
    define: { __CHART_WORKER__: JSON.stringify(workerName) },
  });
  const js = await readFile(join(dir, "page.js"));
  const css = await readFile(join(dir, "page.css")).catch(() => Buffer.from(""));
  await rm(dir, { recursive: true, force: true });
  // The snapshot event as the stream host writes it (stream-host/sse.ts), deflated as it sends it to a browser by
  // default (STREAM_COMPRESSION=deflate: stream-host/stream-compression.ts); the stream then stays open, as a live one.
  const snapshot = Buffer.from(`event: snapshot\ndata: ${JSON.stringify(snapshotFrame())}\n\n`);
  // The stream host deflates a view's snapshot once and sends those bytes to each viewer: done here before the runs,
  // so that none of them waits for it.
  processDeflater.frame(snapshot);
  const html = (early: boolean) => `<!doctype html><html><head><meta charset="utf-8">
${early ? `<script data-stream="/stream">${EARLY_STREAM_SCRIPT}</script>` : ""}
<link rel="stylesheet" href="/page.css">
<style>#grid{grid-template-columns:repeat(2,1fr);width:1200px}</style>
</head><body><main id="grid" class="panel-grid"></main><script type="module" src="/page.js"></script></body></html>`;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname === "/page.js") res.writeHead(200, { "content-type": "text/javascript" }).end(js);
    else if (url.pathname === `/${workerName}`) res.writeHead(200, { "content-type": "text/javascript" }).end(worker);
    else if (url.pathname === "/page.css") res.writeHead(200, { "content-type": "text/css" }).end(css);
    else if (url.pathname === "/warm") res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><p>warm</p>");
    else if (url.pathname === "/stream") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", "content-encoding": "deflate" });
      deflateSink({
        get closed() {
          return res.destroyed;
        },
        write: (frame) => res.write(frame) || true,
        end: async () => void res.end(),
        destroy: () => res.destroy(),
        onClose: (f) => res.on("close", f),
      }).write(snapshot);
    } else res.writeHead(200, { "content-type": "text/html" }).end(html(url.searchParams.get("early") !== "off"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    js: js.toString(),
    port: (server.address() as { port: number }).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export async function run(): Promise<void> {
  const { port, close } = await startBenchPage();
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, "--enable-precise-memory-info", "--js-flags=--expose-gc"],
  });
  const runs = [
    { name: "uplot", impl: "uplot", height: 900 },
    // Right after the first, so the two see about the same load: the lines and legend figures on the page's thread.
    { name: "uplot", impl: "uplot&worker=off", height: 900 },
    { name: "uplot", impl: "uplot&budget=none", height: 900 },
    { name: "uplot", impl: "uplot", height: 3300 },
    { name: "svg", impl: "svg", height: 900 },
  ];
  try {
    // A trivial page first, so that the measured pages find the browser as a user's running browser
    // is: its first page pays one-time costs of a freshly launched browser (a renderer process started on demand, the
    // network service's first connections), which put the first measured page's stream request at 130 to 260 ms
    // after navigation against 70 to 110 ms for the ones after it. Nothing of the bench page is loaded or cached by it
    // (every page has a context, and so a cache, of its own).
    const warm = await browser.newPage();
    await warm.goto(`http://127.0.0.1:${port}/warm`);
    await warm.close();
    // Time for the browser to start the renderer process it keeps ready for the next page, as it has in a running
    // browser.
    await new Promise((r) => setTimeout(r, 3000));
    const results: Result[] = [];
    for (const r of runs) {
      const page = await browser.newPage({ viewport: { width: 1280, height: r.height } });
      page.on("pageerror", (e) => console.error(`web ${r.name}: page error ${e.message}`));
      page.on("crash", () => console.error(`web ${r.name}: the page crashed`));
      // The page says when it is done on its console: polling it (waitForFunction) would evaluate Playwright's
      // injected script in the page while it loads, 60 to 100 ms of main-thread work in the middle of the first chart.
      const done = page.waitForEvent("console", { predicate: (m) => m.text() === BENCH_DONE, timeout: 900_000 });
      await page.goto(`http://127.0.0.1:${port}/?impl=${r.impl}`);
      await done;
      results.push((await page.evaluate(() => window.benchResult)) as Result);
      await page.close();
    }
    console.log(
      `web: ${PANELS} panels x 4 series x 720 points, 300 ticks (one panel-delta frame per panel per tick), headless Chromium, load average ${(
        await import("node:os")
      )
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    console.log(
      "web: first chart = navigation start to the end of the first frame drawing a chart of the snapshot (paint included); tick main-thread time = the task that decodes and merges the tick's 20 frames + every frame that draws them (summed), each from the scheduler's animation-frame callback to a task posted after its paint (the waits for frames excluded); longest frame = the longest single frame of a tick; all visible charts drawn = data task start to the end of the last frame that drew the tick",
    );
    const line = (label: string, r: Result, height: number) =>
      console.log(
        `web ${label}: first chart ${f1(r.firstChartAt)} ms after navigation (stream opened ${f1(r.streamOpened)}, script ${f1(r.scriptStart)}, first panel taken ${f1(r.firstTaken)} (parse ${f1(r.parseMs)}), snapshot fetched ${f1(r.fetched)}, its intake ${f1(r.mergeMs)}, first frame ${f1(r.firstFrame)} ms drawing ${r.firstFrameCharts} charts (first chart's window ${f1(r.firstDraw.windowMs)}, build and draw ${f1(r.firstDraw.chartMs)}); all visible charts at ${f1(r.allVisibleAt)} ms in ${r.snapshotFrames} frames), tick main-thread p50 ${f1(pct(r.ticks, 50))} ms p95 ${f1(pct(r.ticks, 95))} ms (data p95 ${f1(pct(r.dataMs, 95))}, frames p95 ${f1(pct(r.frameMs, 95))}), longest frame per tick p95 ${f1(pct(r.longestFrameMs, 95))} ms, frames per tick p95 ${pct(r.framesPerTick, 95)}, all visible charts drawn after ${f1(pct(r.allDrawnMs, 95))} ms p95 (visible charts ${r.visible} of ${PANELS}, viewport 1280x${height}), heap tick 100 ${mb(r.heapAt100)} MB, tick 300 ${mb(r.heapAt300)} MB (growth ${mb(r.heapAt300 - r.heapAt100)} MB)${
          r.workerMs.length > 0
            ? `; chart worker (its own thread) p50 ${f1(pct(r.workerMs, 50))} ms p95 ${f1(pct(r.workerMs, 95))} ms a tick`
            : ""
        }`,
      );
    const [u, paged, whole, all, s] = results as [Result, Result, Result, Result, Result];
    line("uplot     ", u, runs[0]!.height);
    line("uplot no worker (plots and figures on the page's thread)", paged, runs[1]!.height);
    line("uplot one frame (no budget)", whole, runs[2]!.height);
    line("uplot all ", all, runs[3]!.height);
    line("svg       ", s, runs[4]!.height);
    console.log(
      `web ratio uplot chart worker/no worker (1280x900): tick main-thread p50 ${(pct(u.ticks, 50) / pct(paged.ticks, 50)).toFixed(2)}x, p95 ${(pct(u.ticks, 95) / pct(paged.ticks, 95)).toFixed(2)}x, frames p95 ${(pct(u.frameMs, 95) / pct(paged.frameMs, 95)).toFixed(2)}x`,
    );
    console.log(
      `web ratio uplot frame budget/one frame (1280x900): tick main-thread p95 ${(pct(u.ticks, 95) / pct(whole.ticks, 95)).toFixed(2)}x, longest frame per tick p95 ${(pct(u.longestFrameMs, 95) / pct(whole.longestFrameMs, 95)).toFixed(2)}x, all visible charts drawn p95 ${(pct(u.allDrawnMs, 95) / pct(whole.allDrawnMs, 95)).toFixed(2)}x, first frame ${(u.firstFrame / whole.firstFrame).toFixed(2)}x`,
    );
    console.log(
      `web ratio uplot/svg (all 20 drawn): snapshot received to all charts painted ${((all.allVisibleAt - all.fetched) / (s.allVisibleAt - s.fetched)).toFixed(2)}x, tick p95 ${(pct(all.ticks, 95) / pct(s.ticks, 95)).toFixed(2)}x, heap at 300 ${(all.heapAt300 / s.heapAt300).toFixed(2)}x`,
    );
    console.log(
      `web targets (uplot, 1280x900): first chart <= 300 ms; tick main-thread p95 <= 8 ms, on the total over all the frames that draw a tick (not on the longest frame); no heap growth between tick 100 and 300`,
    );
  } finally {
    await browser.close();
    await close();
  }
}
