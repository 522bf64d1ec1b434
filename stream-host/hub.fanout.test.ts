import { Registry } from "prom-client";
import { describe, expect, test } from "vitest";
import type { DashboardSpec, Panel } from "../lib/dashboards/spec.ts";
import type { QueryResult } from "../lib/live/frames.ts";
import { createManualTimers } from "../lib/lifecycle/manual-timers.ts";
import { createLogger } from "../lib/log/logger.ts";
import { createMetrics } from "../lib/metrics/metrics.ts";
import { FANOUT_CHUNK, createHub } from "./hub.ts";
import { createKeyedLimiter } from "./limiter.ts";
import type { LoadedDashboard } from "./poller.ts";
import { recordingSink } from "./testing/recording-sink.ts";

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const settle = () => new Promise<void>((r) => setImmediate(r));

function panel(id: string): Panel {
  return { id, title: id, type: "timeseries", sourceId: "src_a", sql: `SELECT '${id}'` };
}

function dashboard(): LoadedDashboard {
  const spec: DashboardSpec = {
    title: "D",
    refreshIntervalMs: 5000,
    time: { from: "now-1h", to: "now" },
    panels: [panel("a"), panel("b")],
  };
  return { id: "db_1", workspaceId: "ws_1", version: 1, spec };
}

const empty: QueryResult = { columns: [], rows: [], truncated: false, elapsedMs: 1 };

/** A subscriber's stream whose writes also go to `log` (the order across every stream), with a hook on its next write. */
function sink(i: number, log: string[]) {
  let onWrite: (() => void) | null = null;
  const r = recordingSink({
    onWrite() {
      log.push(`write ${i}`);
      const f = onWrite;
      onWrite = null;
      f?.();
    },
  });
  return {
    ...r,
    /** The events each frame sent carried, by name ("panel+panel" for a tick's two frames in one write). */
    get events() {
      return r.frames.map((f) => [...f.matchAll(/^event: (\S+)/gm)].map((m) => m[1]).join("+"));
    },
    onNextWrite(f: () => void) {
      onWrite = f;
    },
  };
}

function setup(viewers: number) {
  const clock = createManualTimers(NOW);
  const warnings: string[] = [];
  const hub = createHub({
    metrics: createMetrics(new Registry(), { defaultCollectors: false }),
    runPanel: async () => empty,
    limiter: createKeyedLimiter(100),
    refreshMs: (spec) => spec.refreshIntervalMs ?? 15000,
    timers: clock.timers,
    now: clock.now,
    monotonic: clock.now,
    log: { ...createLogger({ silent: true }), warn: (msg: string) => void warnings.push(msg) },
  });
  const log: string[] = [];
  const sinks = Array.from({ length: viewers }, (_, i) => sink(i, log));
  for (const s of sinks) hub.subscribe(dashboard(), s.sink);
  log.length = 0;
  /** Runs the first tick: its panels' frames are flushed together once both are in. */
  const tick = async () => {
    clock.runNext();
    await settle();
  };
  return { hub, sinks, log, tick, warnings };
}

const viewers = FANOUT_CHUNK * 4 + 7;

describe("a tick's fan-out to many subscribers", () => {
  test("every subscriber gets the tick's frames once, in connection order, in chunks with the next-tick queue run between them", async () => {
    const { sinks, log, tick } = setup(viewers);
    // The first write queues a next-tick callback, as a socket write queues Node's after-write bookkeeping.
    sinks[0]!.onNextWrite(() => process.nextTick(() => log.push("next tick")));
    await tick();
    for (const s of sinks) expect(s.events).toEqual(["snapshot", "panel+panel"]);
    const writes = log.filter((x) => x.startsWith("write")).map((x) => Number(x.slice(6)));
    expect(writes).toEqual(sinks.map((_, i) => i));
    // The bookkeeping of the first chunk's writes runs before the second chunk is written.
    expect(log.indexOf("next tick")).toBe(FANOUT_CHUNK);
  });

  test("a drain in the middle of a fan-out finishes it first: each stream gets the tick's frames, then its terminal frame", async () => {
    const { hub, sinks, tick } = setup(viewers);
    // After the first chunk and before the fan-out's next step (microtasks run before next-tick callbacks).
    sinks[0]!.onNextWrite(() => queueMicrotask(() => void hub.closeAll(() => Buffer.from("event: draining\ndata: {}\n\n"))));
    await tick();
    for (const s of sinks) expect(s.events).toEqual(["snapshot", "panel+panel", "draining"]);
    expect(hub.subscribers).toBe(0);
  });

  test("a subscriber that leaves in the middle of a fan-out is not written to, and is not reported dropped", async () => {
    const { sinks, tick, warnings } = setup(viewers);
    const leaving = sinks[FANOUT_CHUNK * 2]!;
    sinks[0]!.onNextWrite(() => queueMicrotask(() => leaving.close()));
    await tick();
    expect(leaving.events).toEqual(["snapshot"]);
    for (const s of sinks) if (s !== leaving) expect(s.events).toEqual(["snapshot", "panel+panel"]);
    expect(warnings).toEqual([]);
  });

  test("a second frame while a fan-out is in progress goes out after it, to every subscriber", async () => {
    const { hub, sinks, tick } = setup(viewers);
    sinks[0]!.onNextWrite(() => queueMicrotask(() => hub.heartbeat(0)));
    await tick();
    // The heartbeat is a comment (no event name); each subscriber got the tick's frames, then it.
    for (const s of sinks) expect(s.events).toEqual(["snapshot", "panel+panel", ""]);
  });
});
