// Where a web bench tick's main-thread time goes: `npx tsx bench/web-profile.ts [ticks] [query]` opens the web bench's
// page (bench/web.ts, startBenchPage: the live page's code path) in headless Chromium for `ticks` ticks (default 60;
// the page takes ?ticks=N) and prints, over the ticks:
// - the page's own tick figures (p50, p95), and the renderer main thread's CPU time per tick from /proc (robust to
//   other work on the machine, unlike wall time; it includes the bench's own untimed work between ticks);
// - a CPU profile (Profiler domain): self time by function and the time under each chart update, inclusive. A
//   sampling profile inflates native calls (canvas, Path2D) about twofold: read its shares, not its milliseconds;
// - a trace (devtools.timeline and blink categories): per frame that ran animation-frame callbacks, the main
//   thread's time in the callbacks (script), style and layout, pre-paint, paint and layerize, and commit (of which
//   the canvases' raster, ProduceCanvasResource, and the wait for the compositor thread).
//   Then the main thread's CPU (thread) time per tick by trace event over all its tasks (frames, the data task, the
//   rest): far steadier than wall time on a shared machine.
// The trace and the profile start once the visible charts are built (the ticks, not the snapshot's frames).
// PROFILE=0 or TRACE=0 skips one (each slows the page); TRACE_FILE=path keeps the trace (for chrome://tracing); DEPTH=n
// shows the chart updates' callees n levels down (3); ALLOC=1 adds a sampling heap profile over the ticks (the
// HeapProfiler domain, objects the garbage collector took since included): bytes allocated per tick by function, and
// by the stack of the largest, to find the garbage a tick makes;
// JS_FLAGS adds V8 flags to Chromium (e.g. JS_FLAGS="--trace-opt --trace-deopt" with DEBUG=pw:browser to see what V8
// optimizes; unminified with ALLOC=1, so the names are the source's);
// `query` is added to the page's URL (e.g. "budget=none").
// Figures from one run on a shared machine are noisy: compare two runs side by side, with the load average.
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS } from "../web/e2e/harness.ts";
import { startBenchPage } from "./web.ts";
import { topLevelTasks } from "./web/trace-tasks.ts";

const ticks = Number(process.argv[2] ?? 60);
const query = process.argv[3] ?? "";

interface TraceEvent {
  name: string;
  ph: string;
  ts: number;
  dur?: number;
  /** Thread time (CPU) of the event. */
  tdur?: number;
  pid: number;
  tid: number;
  args?: { name?: string };
}
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/** CPU time in ms of a process' main thread (/proc: utime + stime, in clock ticks of 10 ms). */
function mainThreadCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function profileSummary(p: CpuProfile): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i + 1] ?? 0));
  });
  const name = (id: number) => {
    const f = byId.get(id)!.callFrame;
    return `${f.functionName || "(anonymous)"}:${f.lineNumber}`;
  };
  const total = new Map<number, number>();
  const inclusive = (id: number): number => {
    const known = total.get(id);
    if (known !== undefined) return known;
    const t = (self.get(id) ?? 0) + (byId.get(id)!.children ?? []).reduce((a, c) => a + inclusive(c), 0);
    total.set(id, t);
    return t;
  };
  const bySelf = new Map<string, number>();
  for (const [id, us] of self) if (name(id) !== "(idle):-1") bySelf.set(name(id), (bySelf.get(name(id)) ?? 0) + us);
  console.log("\nCPU profile, self time per tick (top 25):");
  for (const [k, us] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`  ${(us / 1000 / ticks).toFixed(2).padStart(7)} ms  ${k}`);
  // Under the charts' update (TimeseriesChart.update): its callees, merged by name, two levels down.
  const updates = p.nodes.filter((n) => n.callFrame.functionName === "update").map((n) => n.id);
  const sumOf = (ids: number[]) => ids.reduce((a, id) => a + inclusive(id), 0) / 1000 / ticks;
  const show = (ids: number[], depth: number, indent: string) => {
    if (depth === 0) return;
    const groups = new Map<string, number[]>();
    for (const id of ids) for (const c of byId.get(id)!.children ?? []) groups.set(name(c), [...(groups.get(name(c)) ?? []), c]);
    for (const [k, cs] of [...groups].sort((a, b) => sumOf(b[1]) - sumOf(a[1]))) {
      if (sumOf(cs) < 0.05) continue;
      console.log(`${indent}${sumOf(cs).toFixed(2).padStart(7)} ms  ${k}`);
      show(cs, depth - 1, `${indent}  `);
    }
  };
  console.log(`\nchart updates per tick, inclusive: ${sumOf(updates).toFixed(2)} ms`);
  show(updates, Number(process.env.DEPTH ?? 3), "  ");
}

interface HeapNode {
  callFrame: { functionName: string; lineNumber: number; url: string };
  selfSize: number;
  children: HeapNode[];
}

/** A sampling heap profile's bytes per tick by allocating function (self), and the stacks of the largest. */
function allocationSummary(head: HeapNode): void {
  const name = (n: HeapNode) => `${n.callFrame.functionName || "(anonymous)"}:${n.callFrame.lineNumber}`;
  const bySelf = new Map<string, number>();
  const byStack = new Map<string, number>();
  let all = 0;
  const walk = (n: HeapNode, stack: string[]) => {
    const here = [...stack, name(n)];
    if (n.selfSize > 0) {
      all += n.selfSize;
      bySelf.set(name(n), (bySelf.get(name(n)) ?? 0) + n.selfSize);
      const key = here.slice(-4).join(" > ");
      byStack.set(key, (byStack.get(key) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, here);
  };
  walk(head, []);
  const kb = (b: number) => (b / 1024 / ticks).toFixed(1).padStart(7);
  console.log(`
heap allocation sampling: ${kb(all)} KB a tick allocated in all, by function (self, top 15):`);
  for (const [k, b] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${kb(b)} KB  ${k}`);
  console.log("by stack (the last four calls, top 10):");
  for (const [k, b] of [...byStack].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`  ${kb(b)} KB  ${k}`);
}

function traceSummary(events: TraceEvent[]): void {
  const main = events.find((e) => e.ph === "M" && e.name === "thread_name" && e.args?.name === "CrRendererMain");
  if (!main) return;
  // Top-level tasks with their descendants.
  const tasks = topLevelTasks(events, main);
  const phases: [string, string[]][] = [
    ["animation-frame callbacks (script)", ["FireAnimationFrame"]],
    ["style and layout", ["LocalFrameView::RunStyleAndLayoutLifecyclePhases"]],
    ["pre-paint", ["PrePaint"]],
    ["paint", ["Paint"]],
    ["layerize", ["Layerize"]],
    ["commit", ["Commit"]],
    ["  canvas raster (ProduceCanvasResource)", ["Canvas2DResourceProviderSharedImage::ProduceCanvasResource"]],
    ["  waiting for the compositor", ["ProxyMain::BeginMainFrame::commit"]],
  ];
  const frames = tasks.filter((t) => t.inner.some((e) => e.name === "FireAnimationFrame" && e.dur! > 1000));
  if (frames.length === 0) return;
  const outer = (list: TraceEvent[], names: string[]) => {
    // Outermost events of those names only (a Paint inside a Paint counts once).
    let end = Number.NEGATIVE_INFINITY;
    let sum = 0;
    for (const e of list)
      if (names.includes(e.name) && e.ts >= end) {
        sum += e.dur!;
        end = e.ts + e.dur!;
      }
    return sum;
  };
  // Self time (an event's thread time less its children's) by name, over every task of the main thread. Thread time
  // (the trace's tdur) leaves out the time the thread was preempted: on a shared machine it varies far less than
  // wall time.
  const self = new Map<string, number>();
  const cpu = (e: TraceEvent) => e.tdur ?? e.dur!;
  for (const t of tasks) {
    const stack: TraceEvent[] = [];
    for (const e of [t.task, ...t.inner]) {
      while (stack.length > 0 && e.ts >= stack.at(-1)!.ts + stack.at(-1)!.dur!) stack.pop();
      const parent = stack.at(-1);
      if (parent) self.set(parent.name, (self.get(parent.name) ?? 0) - cpu(e));
      self.set(e.name, (self.get(e.name) ?? 0) + cpu(e));
      stack.push(e);
    }
  }
  const all = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(`\ntrace: main thread CPU ${(all / ticks / 1000).toFixed(2)} ms a tick (thread time), self time by event (top 20):`);
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 20))
    console.log(`  ${(us / ticks / 1000).toFixed(2).padStart(7)} ms  ${k}`);
  // The garbage collector's pauses on the main thread: a young-generation collection (MinorGC) comes as often as the
  // page allocates its space's worth, and its wall time (it waits for its helper threads) lands in whatever task is
  // running, the data task's or a frame's.
  for (const kind of ["MinorGC", "MajorGC"]) {
    const gcs = tasks.flatMap((t) => t.inner.filter((e) => e.name === kind));
    const wall = gcs.reduce((a, e) => a + e.dur!, 0);
    console.log(
      `trace: ${kind} ${gcs.length} (one every ${(ticks / Math.max(1, gcs.length)).toFixed(1)} ticks), ${(wall / Math.max(1, gcs.length) / 1000).toFixed(2)} ms wall each, ${(wall / ticks / 1000).toFixed(2)} ms a tick`,
    );
  }
  console.log(`\ntrace: ${frames.length} frames drawing charts (${(frames.length / ticks).toFixed(2)} a tick), per frame:`);
  console.log(`  ${(frames.reduce((a, f) => a + f.task.dur!, 0) / frames.length / 1000).toFixed(2).padStart(7)} ms  the frame's task`);
  for (const [label, names] of phases)
    console.log(`  ${(frames.reduce((a, f) => a + outer(f.inner, names), 0) / frames.length / 1000).toFixed(2).padStart(7)} ms  ${label}`);
}

async function main(): Promise<void> {
  const bench = await startBenchPage({ minify: process.env.PROFILE === "0" && process.env.ALLOC !== "1" });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, "--enable-precise-memory-info", ...(process.env.JS_FLAGS ? [`--js-flags=${process.env.JS_FLAGS}`] : [])],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
    const cdp = await page.context().newCDPSession(page);
    const tracing = process.env.TRACE !== "0";
    const profiling = process.env.PROFILE !== "0";
    if (profiling) await cdp.send("Profiler.enable");
    await page.goto(`http://127.0.0.1:${bench.port}/?impl=uplot&ticks=${ticks}${query ? `&${query}` : ""}`);
    // From the visible charts built (uPlot's canvas each): the snapshot's frames are before, the ticks after.
    await page.waitForFunction(() => document.querySelectorAll(".uplot canvas:not(.u-plot-layer)").length >= 6, null, {
      polling: 20,
      timeout: 120_000,
    });
    if (tracing)
      await browser.startTracing(page, { categories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "blink", "cc"] });
    const { processInfo } = (await (await browser.newBrowserCDPSession()).send("SystemInfo.getProcessInfo")) as unknown as {
      processInfo: { type: string; id: number }[];
    };
    const renderers = processInfo.filter((p) => p.type === "renderer").map((p) => p.id);
    const cpu0 = renderers.map(mainThreadCpuMs);
    const allocating = process.env.ALLOC === "1";
    if (allocating) {
      await cdp.send("HeapProfiler.enable");
      await cdp.send("HeapProfiler.startSampling", {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    }
    if (profiling) await cdp.send("Profiler.start");
    const handle = await page.waitForFunction(() => (window as { benchResult?: unknown }).benchResult, null, {
      polling: 200,
      timeout: 900_000,
    });
    const cpu = Math.max(...renderers.map((pid, i) => mainThreadCpuMs(pid) - cpu0[i]!));
    const profile = profiling ? ((await cdp.send("Profiler.stop")).profile as unknown as CpuProfile) : null;
    const allocations = allocating ? ((await cdp.send("HeapProfiler.stopSampling")).profile.head as unknown as HeapNode) : null;
    const trace = tracing ? await browser.stopTracing() : null;
    const r = (await handle.jsonValue()) as { ticks: number[]; frameMs: number[]; dataMs: number[]; framesPerTick: number[] };
    console.log(
      `web profile: ${ticks} ticks${query ? ` (${query})` : ""}, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(
          " ",
        )}${profiling || tracing ? ` (slowed by ${[profiling && "the CPU profile", tracing && "the trace"].filter(Boolean).join(" and ")})` : ""}`,
    );
    console.log(
      `tick main-thread p50 ${pct(r.ticks, 50).toFixed(1)} ms p95 ${pct(r.ticks, 95).toFixed(1)} ms (data p95 ${pct(r.dataMs, 95).toFixed(1)}, frames p95 ${pct(r.frameMs, 95).toFixed(1)}, frames per tick p95 ${pct(r.framesPerTick, 95)}); renderer main thread CPU ${(cpu / ticks).toFixed(1)} ms a tick (/proc, bench's own work between ticks included)`,
    );
    if (profile) profileSummary(profile);
    if (allocations) allocationSummary(allocations);
    if (trace && process.env.TRACE_FILE) writeFileSync(process.env.TRACE_FILE, trace);
    if (trace) traceSummary((JSON.parse(trace.toString()) as { traceEvents: TraceEvent[] }).traceEvents);
  } finally {
    await browser.close();
    await bench.close();
  }
}

await main();
