// Where the web bench's first chart goes: `npx tsx bench/web-first-chart.ts [runs] [query]` opens the web bench's page
// (bench/web.ts, startBenchPage: the live page's code path) in headless Chromium `runs` times (default 1) with a trace
// of the renderer (devtools.timeline, v8, loading, blink.user_timing and V8's sampling profiler), and prints, from
// navigation start to the end of the frame that paints the first chart:
// - the page's own first-chart line (the bench's parts), then the renderer main thread's top-level tasks over 0.5 ms,
//   each with its start after navigation, its length and what took it (HTML parse, script compile and evaluation, the
//   stream's reads, timers, animation frames with their style, layout and paint);
// - the network: when the page, the bundle, the stylesheet and the stream were requested, answered and finished (the
//   stream's body has no end: its last received byte);
// - the sampled profile over that span, self time by function (top 30), then inclusive time under the top-level
//   functions our code runs (module evaluation, the stream client's reads, the first frame's draw).
// The trace and the profiler slow the page (about 1.3x): read its shares and order, not its milliseconds; the bench
// (`npm run bench -- web`) gives the figures. PROFILE=0 leaves the profiler out; the bundle is not minified, so that
// names are readable (MINIFY=1 profiles what the bench serves); DETAIL=1 adds each task's longest inner events (what
// took a task the list above does not name); PROFILE_SPAN=from,to (ms after navigation) narrows the profile to part of the way;
// SAVE=path writes each run's raw trace to path-N.json; EXTRA_ARGS="--flag ..." adds Chromium flags (an experiment).
// TRACE=0 runs the pages as the bench does, with no trace (a trivial page first), and prints each page's first-chart
// figures with its requests' Resource Timing and when the page's script read the stream's first bytes and its first
// 160 KB (the first panel's update; an init script times the reads of response bodies, the early script's first),
// then their medians: the way to compare two trees or settings; with
// VERSUS=query2 the pages alternate between [query] and query2 (side by side under the same load) and it prints both
// medians and their ratios.
import { loadavg } from "node:os";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS } from "../web/e2e/harness.ts";
import { startBenchPage } from "./web.ts";
import { BENCH_DONE } from "./web/data.ts";
import { topLevelTasks } from "./web/trace-tasks.ts";

const runs = Number(process.argv[2] ?? 1);
const query = process.argv[3] ?? "";

interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  id?: string;
  args?: {
    name?: string;
    data?: Record<string, unknown> & {
      url?: string;
      requestId?: string;
      functionName?: string;
      cpuProfile?: { nodes?: ProfileNode[]; samples?: number[] };
      timeDeltas?: number[];
      startTime?: number;
      frame?: string;
      isMainFrame?: boolean;
      documentLoaderURL?: string;
    };
    frame?: string;
  };
}
interface ProfileNode {
  id: number;
  parent?: number;
  callFrame: { functionName: string; url?: string; lineNumber?: number; columnNumber?: number };
}

const f1 = (n: number) => n.toFixed(1);

/** The names of a task's inner events worth printing, with their outermost durations summed. */
const INNER = [
  "ParseHTML",
  "EvaluateScript",
  "v8.compile",
  "v8.compileModule",
  "v8.evaluateModule",
  "v8.produceModuleCache",
  "v8.parseOnBackground",
  "FunctionCall",
  "TimerFire",
  "FireAnimationFrame",
  "EventDispatch",
  "RunMicrotasks",
  "V8.GCScavenger",
  "MajorGC",
  "MinorGC",
  "UpdateLayoutTree",
  "Layout",
  "PrePaint",
  "Paint",
  "Layerize",
  "Commit",
  "ResourceReceivedData",
  "HitTest",
  "ParseAuthorStyleSheet",
  "Decode Image",
];

function outer(list: TraceEvent[], name: string): number {
  let end = Number.NEGATIVE_INFINITY;
  let sum = 0;
  for (const e of list)
    if (e.name === name && e.ts >= end) {
      sum += e.dur!;
      end = e.ts + e.dur!;
    }
  return sum;
}

function report(events: TraceEvent[], firstChartAt: number, origin: number): void {
  const ms = (ts: number) => (ts - origin) / 1000;
  // The renderer of the bench page: the one whose main thread parsed its HTML.
  const parse = events.find((e) => e.name === "ParseHTML" && e.ph === "X");
  if (!parse) throw new Error("no ParseHTML in the trace");
  const main = { pid: parse.pid, tid: parse.tid };
  const end = origin + firstChartAt * 1000 + 2000;
  const tasks = topLevelTasks(
    events.filter((e) => e.ts >= origin - 5000 && e.ts <= end),
    main,
  );
  console.log("\nmain thread, top-level tasks over 0.5 ms (start after navigation, length, inside):");
  let busy = 0;
  for (const { task, inner } of tasks) {
    if (task.dur! < 500) {
      busy += task.dur!;
      continue;
    }
    busy += task.dur!;
    const parts = INNER.map((n) => [n, outer(inner, n)] as const)
      .filter(([, d]) => d >= 300)
      .map(([n, d]) => `${n} ${f1(d / 1000)}`);
    if (process.env.DETAIL) {
      // Its longest inner events: what took a task the names above do not cover.
      const longest = [...inner].sort((a, b) => b.dur! - a.dur!).slice(0, 4);
      parts.push(...longest.map((e) => `${e.name} ${f1(e.dur! / 1000)}`));
    }
    const fn = inner.find((e) => e.name === "FunctionCall")?.args?.data?.functionName;
    const url = inner.find((e) => e.name === "EvaluateScript" || e.name === "v8.compileModule")?.args?.data?.url;
    console.log(
      `  ${f1(ms(task.ts)).padStart(7)} +${f1(task.dur! / 1000).padStart(6)} ms  ${task.name}${fn ? ` (${fn})` : ""}${url ? ` ${new URL(url).pathname}` : ""}: ${parts.join(", ")}`,
    );
  }
  console.log(`  main thread busy ${f1(busy / 1000)} ms of the first ${f1(firstChartAt)} ms`);

  console.log("\nnetwork (ms after navigation):");
  const byRequest = new Map<string, { url: string; send?: number; response?: number; data: number[]; finish?: number }>();
  for (const e of events) {
    const d = e.args?.data;
    if (!d?.requestId) continue;
    const r = byRequest.get(d.requestId) ?? { url: "", data: [] };
    byRequest.set(d.requestId, r);
    if (e.name === "ResourceSendRequest") {
      r.url = d.url ?? "";
      r.send = ms(e.ts);
    } else if (e.name === "ResourceReceiveResponse") r.response = ms(e.ts);
    else if (e.name === "ResourceReceivedData") r.data.push(ms(e.ts));
    else if (e.name === "ResourceFinish") r.finish = ms(e.ts);
  }
  for (const r of byRequest.values())
    if (r.url)
      console.log(
        `  ${new URL(r.url).pathname.padEnd(10)} sent ${f1(r.send ?? Number.NaN)}, answered ${f1(r.response ?? Number.NaN)}, ${r.data.length} data events (first ${f1(r.data[0] ?? Number.NaN)}, last ${f1(r.data.at(-1) ?? Number.NaN)}), finished ${f1(r.finish ?? Number.NaN)}`,
      );

  // The sampled profile (V8's profiler in the trace: a Profile event, then ProfileChunks).
  const chunks = events.filter((e) => e.name === "ProfileChunk" && e.pid === main.pid);
  const profile = events.find((e) => e.name === "Profile" && e.pid === main.pid);
  if (!profile || chunks.length === 0) return;
  const nodes = new Map<number, ProfileNode>();
  const self = new Map<number, number>();
  let t = profile.args!.data!.startTime!;
  for (const c of chunks.filter((c) => c.id === profile.id).sort((a, b) => a.ts - b.ts)) {
    const cp = c.args!.data!.cpuProfile!;
    for (const n of cp.nodes ?? []) nodes.set(n.id, n);
    const deltas = c.args!.data!.timeDeltas ?? [];
    (cp.samples ?? []).forEach((id, i) => {
      t += deltas[i] ?? 0;
      // PROFILE_SPAN=from,to (ms after navigation) narrows the profile to part of the way.
      const [from, to] = (process.env.PROFILE_SPAN ?? `0,${firstChartAt}`).split(",").map(Number) as [number, number];
      if (t < origin + from * 1000 || t > origin + to * 1000) return;
      self.set(id, (self.get(id) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0));
    });
  }
  const label = (id: number) => {
    const f = nodes.get(id)!.callFrame;
    const file = f.url ? new URL(f.url, "http://x").pathname.split("/").at(-1) : "";
    return `${f.functionName || "(anonymous)"} ${file}:${(f.lineNumber ?? -1) + 1}:${(f.columnNumber ?? -1) + 1}`;
  };
  const bySelf = new Map<string, number>();
  for (const [id, us] of self) {
    const name = label(id);
    if (name.startsWith("(idle)")) continue;
    bySelf.set(name, (bySelf.get(name) ?? 0) + us);
  }
  console.log(
    `\nprofile, navigation to the first chart, self time (top 30 of ${f1([...bySelf.values()].reduce((a, b) => a + b, 0) / 1000)} ms sampled):`,
  );
  for (const [k, us] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${f1(us / 1000).padStart(6)} ms  ${k}`);
  // Inclusive time per node, summed by label, for the nodes of our bundle: the heaviest call paths.
  const children = new Map<number, number[]>();
  for (const n of nodes.values()) if (n.parent !== undefined) children.set(n.parent, [...(children.get(n.parent) ?? []), n.id]);
  const inclusive = new Map<number, number>();
  const incl = (id: number): number => {
    const known = inclusive.get(id);
    if (known !== undefined) return known;
    const v = (self.get(id) ?? 0) + (children.get(id) ?? []).reduce((a, c) => a + incl(c), 0);
    inclusive.set(id, v);
    return v;
  };
  const byIncl = new Map<string, number>();
  for (const id of nodes.keys()) {
    const f = nodes.get(id)!.callFrame;
    if (!f.url?.includes("page.js")) continue;
    // Count a function once per path: only where its parent is not the same function.
    const parent = nodes.get(id)!.parent;
    if (parent !== undefined && label(parent) === label(id)) continue;
    byIncl.set(label(id), (byIncl.get(label(id)) ?? 0) + incl(id));
  }
  console.log("\nprofile, inclusive time of the bundle's functions (top 30):");
  for (const [k, us] of [...byIncl].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${f1(us / 1000).padStart(6)} ms  ${k}`);
}

/** The page's first-chart figures (window.benchResult, bench/web/page.ts). */
interface FirstChart {
  firstChartAt: number;
  streamOpened: number;
  scriptStart: number;
  fetched: number;
  firstTaken: number;
  parseMs: number;
  mergeMs: number;
  firstFrame: number;
  firstDraw: { windowMs: number; chartMs: number };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * TRACE=0: no trace, as the bench runs (a trivial page first, then the measured pages one after the other), `runs`
 * pages, each page's first-chart figures and its requests' Resource Timing (request sent, first byte, last byte, in
 * ms after navigation), then the medians: for comparing a change, several pages in one run.
 */
async function untraced(port: number): Promise<void> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, ...(process.env.EXTRA_ARGS?.split(" ") ?? [])],
  });
  // VERSUS=query: the pages alternate between the query and this one (one after the other, so both see the same load).
  const sides = process.env.VERSUS === undefined ? [query] : [query, process.env.VERSUS];
  try {
    const warm = await browser.newPage();
    await warm.goto(`http://127.0.0.1:${port}/warm`);
    await warm.close();
    await new Promise((r) => setTimeout(r, 3000));
    const all = sides.map(() => ({}) as Record<string, number[]>);
    for (let i = 0; i < runs * sides.length; i++) {
      const side = i % sides.length;
      const q = sides[side]!;
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
      // When the page's script got the stream's bytes: the first read of a response body (the early script's) timed.
      await page.addInitScript(() => {
        const read = ReadableStreamDefaultReader.prototype.read;
        const seen: { at: number; bytes: number }[] = [];
        (window as unknown as { __reads: typeof seen }).__reads = seen;
        let total = 0;
        ReadableStreamDefaultReader.prototype.read = function (this: ReadableStreamDefaultReader<Uint8Array>) {
          return read.call(this).then((r) => {
            if (!r.done && r.value instanceof Uint8Array && seen.length < 64) {
              total += r.value.byteLength;
              seen.push({ at: performance.now(), bytes: total });
            }
            return r;
          });
        } as typeof read;
      });
      const done = page.waitForEvent("console", { predicate: (m) => m.text() === BENCH_DONE, timeout: 300_000 });
      await page.goto(`http://127.0.0.1:${port}/?impl=uplot&ticks=1${q ? `&${q}` : ""}`);
      await done;
      const r = (await page.evaluate(() => window.benchResult)) as FirstChart;
      const net = await page.evaluate(() =>
        (performance.getEntriesByType("resource") as PerformanceResourceTiming[]).map((e) => ({
          path: new URL(e.name).pathname,
          sent: e.requestStart,
          first: e.responseStart,
          last: e.responseEnd,
        })),
      );
      const reads = await page.evaluate(() => (window as unknown as { __reads: { at: number; bytes: number }[] }).__reads);
      await page.close();
      // The early script reads the stream first: its first bytes, and when 160 KB had come (the first panel's update).
      const firstRead = reads[0]?.at ?? Number.NaN;
      const read160 = reads.find((x) => x.bytes >= 160_000)?.at ?? Number.NaN;
      const figures: [string, number][] = [
        ["first chart", r.firstChartAt],
        ["stream opened", r.streamOpened],
        ["script", r.scriptStart],
        ["first panel taken", r.firstTaken],
        ["snapshot fetched", r.fetched],
        ["first frame", r.firstFrame],
        ["window", r.firstDraw.windowMs],
        ["build and draw", r.firstDraw.chartMs],
        ["stream read first bytes", firstRead],
        ["stream read 160 KB", read160],
      ];
      for (const n of net)
        if (n.path !== "/favicon.ico") {
          figures.push([`${n.path} sent`, n.sent], [`${n.path} first byte`, n.first], [`${n.path} last byte`, n.last]);
        }
      const mine = all[side]!;
      for (const [k, v] of figures) {
        mine[k] ??= [];
        mine[k].push(v);
      }
      console.log(
        `run ${i + 1}${sides.length > 1 ? ` [${q}]` : ""}, load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(" ")}: ${figures.map(([k, v]) => `${k} ${f1(v)}`).join(", ")}`,
      );
    }
    for (const [side, q] of sides.entries())
      console.log(
        `median of ${runs}${sides.length > 1 ? ` [${q}]` : ""}: ${Object.entries(all[side]!)
          .map(([k, v]) => `${k} ${f1(median(v))}`)
          .join(", ")}`,
      );
    if (sides.length > 1) {
      const ratio = (k: string) => median(all[1]![k] ?? []) / median(all[0]![k] ?? []);
      console.log(
        `ratio [${sides[1]}]/[${sides[0]}] of the medians: first chart ${ratio("first chart").toFixed(2)}x, script ${ratio("script").toFixed(2)}x, first panel taken ${ratio("first panel taken").toFixed(2)}x, first frame ${ratio("first frame").toFixed(2)}x`,
      );
    }
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const bench = await startBenchPage({ minify: process.env.MINIFY === "1" });
  if (process.env.TRACE === "0") {
    try {
      await untraced(bench.port);
    } finally {
      await bench.close();
    }
    return;
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, ...(process.env.EXTRA_ARGS?.split(" ") ?? [])],
  });
  try {
    for (let i = 0; i < runs; i++) {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
      const categories = [
        "devtools.timeline",
        "disabled-by-default-devtools.timeline",
        "v8",
        "v8.execute",
        "blink.user_timing",
        "loading",
        "netlog",
        ...(process.env.PROFILE === "0" ? [] : ["disabled-by-default-v8.cpu_profiler"]),
      ];
      await browser.startTracing(page, { categories });
      const done = page.waitForEvent("console", { predicate: (m) => m.text() === BENCH_DONE, timeout: 300_000 });
      await page.goto(`http://127.0.0.1:${bench.port}/?impl=uplot&ticks=1${query ? `&${query}` : ""}`);
      await done;
      const r = (await page.evaluate(() => window.benchResult)) as FirstChart;
      // The page's time origin on the trace's clock: the navigationStart mark of its main frame.
      const origin = await page.evaluate(() => performance.timeOrigin);
      const raw = await browser.stopTracing();
      if (process.env.SAVE) (await import("node:fs")).writeFileSync(`${process.env.SAVE}-${i}.json`, raw);
      const trace = JSON.parse(raw.toString()) as { traceEvents: TraceEvent[] };
      await page.close();
      const nav = trace.traceEvents
        .filter((e) => e.name === "navigationStart" && e.args?.data?.documentLoaderURL?.startsWith("http://127.0.0.1"))
        .at(-1);
      if (!nav) throw new Error(`no navigationStart in the trace (time origin ${origin})`);
      console.log(
        `\nrun ${i + 1}, load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(
            " ",
          )} (slowed by the trace): first chart ${f1(r.firstChartAt)} ms (stream opened ${f1(r.streamOpened)}, script ${f1(r.scriptStart)}, first panel taken ${f1(r.firstTaken)} (parse ${f1(r.parseMs)}), snapshot fetched ${f1(r.fetched)}, its intake ${f1(r.mergeMs)}, first frame ${f1(r.firstFrame)} (window ${f1(r.firstDraw.windowMs)}, build and draw ${f1(r.firstDraw.chartMs)}))`,
      );
      report(trace.traceEvents, r.firstChartAt, nav.ts);
    }
  } finally {
    await browser.close();
    await bench.close();
  }
}

await main();
