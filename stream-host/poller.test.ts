import { describe, expect, test } from "vitest";
import type { DashboardSpec, Panel } from "../lib/dashboards/spec.ts";
import { AppError } from "../lib/http/errors.ts";
import type { QueryResult } from "../lib/live/frames.ts";
import { SlotWaitAborted, createKeyedLimiter } from "./limiter.ts";
import { QueryStalledError } from "../lib/query/portal.ts";
import type { HeldListener } from "../lib/query/runner.ts";
import { type LoadedDashboard, type PanelRuns, type PanelUpdate, createPoller, panelError, timeoutBackoffTicks } from "./poller.ts";
import { createManualTimers } from "../lib/lifecycle/manual-timers.ts";
import { createLogger } from "../lib/log/logger.ts";
import { createMetrics } from "../lib/metrics/metrics.ts";
import { Registry } from "prom-client";
import { COALESCE_MS, createHub } from "./hub.ts";
import { drainingFrame } from "./sse.ts";
import { recordingSink } from "./testing/recording-sink.ts";

function panel(id: string, sourceId = "src_a"): Panel {
  return { id, title: `Panel ${id}`, type: "stat", sourceId, sql: `SELECT '${id}'` };
}

function dashboard(panels: Panel[], refreshIntervalMs = 5000): LoadedDashboard {
  const spec: DashboardSpec = { title: "D", refreshIntervalMs, time: { from: "now-1h", to: "now" }, panels };
  return { id: "db_1", workspaceId: "ws_1", version: 1, spec };
}

/** A runPanel whose calls wait until the test settles them. */
function gatedRunner() {
  const calls: {
    panel: Panel;
    range: { fromMs: number; toMs: number };
    signal: AbortSignal;
    resolve(v: unknown): void;
    reject(e: unknown): void;
  }[] = [];
  return {
    calls,
    run: (p: Panel, _d: LoadedDashboard, range: { fromMs: number; toMs: number }, signal: AbortSignal) =>
      // Tests settle runs with whatever shape they check; the poller passes results through untouched.
      new Promise<QueryResult>((resolve, reject) =>
        calls.push({ panel: p, range, signal, resolve: resolve as (v: unknown) => void, reject }),
      ),
  };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

/** A poller on a manual clock; with `clockMono` its durations are measured on that clock too. */
function setup(opts: { panels: Panel[]; concurrency?: number; refresh?: number; clockMono?: boolean; inFlight?: PanelRuns }) {
  const clock = createManualTimers();
  let mono = 0;
  const runner = gatedRunner();
  const updates: PanelUpdate[] = [];
  const ticks: number[] = [];
  let current = dashboard(opts.panels, opts.refresh);
  const poller = createPoller({
    current: () => current,
    runPanel: runner.run,
    limiter: createKeyedLimiter(opts.concurrency ?? 4),
    inFlight: opts.inFlight,
    refreshMs: (spec) => spec.refreshIntervalMs ?? 15000,
    onPanel: (u) => updates.push(u),
    onTick: (s) => ticks.push(s),
    timers: clock.timers,
    now: clock.now,
    monotonic: opts.clockMono ? clock.now : () => mono,
  });
  return {
    clock,
    runner,
    updates,
    ticks,
    poller,
    setMono: (v: number) => {
      mono = v;
    },
    setDashboard: (d: LoadedDashboard) => {
      current = d;
    },
  };
}

describe("poller", () => {
  test("the first tick starts at once; each panel is queried with the tick's resolved range", async () => {
    const t = setup({ panels: [panel("a"), panel("b")] });
    t.poller.start();
    expect(t.runner.calls).toHaveLength(0);
    t.clock.runNext();
    await flush();
    expect(t.runner.calls.map((c) => c.panel.id)).toEqual(["a", "b"]);
    expect(t.runner.calls[0].range).toEqual({ fromMs: t.clock.now() - 3_600_000, toMs: t.clock.now(), at: t.clock.now() });
    expect(t.runner.calls[1].range).toEqual(t.runner.calls[0].range);
  });

  test("on a shared grid, pollers started apart tick at the same instants after their first tick, and read the same range", async () => {
    const T0 = 1_700_000_000_000;
    const clock = createManualTimers(T0);
    const origins = new Map<number, number>();
    const grid = (refresh: number, at: number) => {
      if (!origins.has(refresh)) origins.set(refresh, at);
      return origins.get(refresh) as number;
    };
    const runs: { poller: string; range: { fromMs: number; toMs: number; at?: number } }[] = [];
    const make = (name: string) =>
      createPoller({
        current: () => dashboard([panel("a")], 5000),
        runPanel: async (_p, _d, range) => {
          runs.push({ poller: name, range });
          return { columns: [], rows: [], truncated: false, elapsedMs: 1 };
        },
        limiter: createKeyedLimiter(4),
        refreshMs: (spec) => spec.refreshIntervalMs ?? 15000,
        grid,
        onPanel: () => {},
        onTick: () => {},
        timers: clock.timers,
        now: clock.now,
        monotonic: clock.now,
      });
    const first = make("first");
    const second = make("second");
    first.start();
    clock.runNext();
    await flush();
    // The second starts 3.3 s into the first's cadence: its own first tick at once, then on the first's grid
    // (the next grid instant at least half a cadence on: T0 + 10 s, not T0 + 5 s which is 1.7 s away).
    clock.advance(3_300);
    second.start();
    clock.runNext();
    await flush();
    for (let i = 0; i < 4; i++) {
      clock.runNext();
      await flush();
    }
    const at = (name: string) => runs.filter((r) => r.poller === name).map((r) => r.range.at);
    expect(at("first").slice(0, 3)).toEqual([T0, T0 + 5_000, T0 + 10_000]);
    expect(at("second").slice(0, 2)).toEqual([T0 + 3_300, T0 + 10_000]);
    const shared = runs.filter((r) => r.range.at === T0 + 10_000);
    expect(shared).toHaveLength(2);
    expect(shared[0].range).toEqual({ fromMs: T0 + 10_000 - 3_600_000, toMs: T0 + 10_000, at: T0 + 10_000 });
    expect(shared[1].range).toEqual(shared[0].range);
    first.stop();
    second.stop();
  });

  test("ticks never overlap, and a panel never runs twice at once: a tick ends at its bound, the next skips the panel still running", async () => {
    const t = setup({ panels: [panel("a")], refresh: 5000, clockMono: true });
    const start = t.clock.now();
    t.poller.start();
    t.clock.runNext();
    await flush();
    expect(t.runner.calls).toHaveLength(1);
    // Asked for again while running: nothing new starts until this tick ends.
    t.poller.tickNow();
    expect(t.runner.calls).toHaveLength(1);
    // A minute of cadence: the first tick ends at its bound (5 s), every later one skips the panel still out.
    t.clock.advance(60_000);
    await flush();
    expect(t.runner.calls).toHaveLength(1);
    expect(t.poller.inFlight).toBe(1);
    expect(t.ticks[0]).toBe(5);
    expect(t.ticks.slice(1).every((s) => s === 0)).toBe(true);
    expect(t.ticks.length).toBeGreaterThanOrEqual(12);
    expect(t.updates).toHaveLength(0);

    // Its frame goes out as soon as it completes, between ticks; the next tick runs it again.
    t.runner.calls[0].resolve({ rows: [[1]] });
    await flush();
    expect(t.updates).toEqual([{ panelId: "a", at: start + 60_000, result: { rows: [[1]] } }]);
    expect(t.poller.inFlight).toBe(0);
    t.clock.runNext();
    await flush();
    expect(t.runner.calls).toHaveLength(2);
    t.clock.advance(800);
    t.runner.calls[1].resolve({ rows: [[2]] });
    await flush();
    // Next tick 5000 ms after this tick started (it took 800 ms); the bound timer is gone.
    expect(t.clock.pendingDelays()).toEqual([4200]);
    expect(t.ticks.at(-1)).toBe(0.8);
  });

  test("a tick that overran its cadence is followed at once", async () => {
    const t = setup({ panels: [panel("a")], refresh: 2000 });
    t.poller.start();
    t.clock.runNext();
    await flush();
    t.setMono(7000);
    t.runner.calls[0].resolve(1);
    await flush();
    expect(t.clock.pendingDelays()).toEqual([0]);
  });

  test("a failing panel sends its own error and never stops the others", async () => {
    const t = setup({ panels: [panel("a"), panel("b"), panel("c")] });
    t.poller.start();
    t.clock.runNext();
    await flush();
    t.runner.calls[0].resolve({ rows: [[1]] });
    t.runner.calls[1].reject(new AppError("guard_rejected", "function pg_sleep is not allowed", { reason: "function" }));
    t.runner.calls[2].reject(new Error("connect ECONNREFUSED 10.0.0.7:5432 password=hunter2"));
    await flush();
    const byId = Object.fromEntries(t.updates.map((u) => [u.panelId, u]));
    expect(byId.a).toMatchObject({ result: { rows: [[1]] } });
    expect(byId.b).toMatchObject({ error: { code: "function", reason: "function", message: "function pg_sleep is not allowed" } });
    // Unknown errors never reach subscribers: no host, no credentials.
    expect(byId.c).toEqual({ panelId: "c", at: t.clock.now(), error: { code: "internal", message: "The panel's query failed." } });
    expect(JSON.stringify(t.updates)).not.toContain("hunter2");
    expect(t.clock.pendingDelays()).toHaveLength(1);
  });

  test("per-source concurrency: at most `limit` queries of one source run at once, other sources are not held up", async () => {
    const t = setup({ panels: [panel("a1"), panel("a2"), panel("a3"), panel("b1", "src_b")], concurrency: 2 });
    t.poller.start();
    t.clock.runNext();
    await flush();
    expect(t.runner.calls.map((c) => c.panel.id)).toEqual(["a1", "a2", "b1"]);
    t.runner.calls[0].resolve(1);
    await flush();
    expect(t.runner.calls.map((c) => c.panel.id)).toEqual(["a1", "a2", "b1", "a3"]);
  });

  test("after stop() no query starts, not even a panel of the running tick still waiting for a slot", async () => {
    const t = setup({ panels: [panel("a1"), panel("a2")], concurrency: 1 });
    t.poller.start();
    t.clock.runNext();
    await flush();
    expect(t.runner.calls).toHaveLength(1);
    t.poller.stop();
    let idle = false;
    void t.poller.idle().then(() => {
      idle = true;
    });
    await flush();
    expect(idle).toBe(false);
    t.runner.calls[0].resolve(1);
    await flush();
    expect(idle).toBe(true);
    expect(t.runner.calls).toHaveLength(1);
    expect(t.poller.queriesStarted).toBe(1);
    // Results of a stopped poller are not sent, and its tick is not observed (its series are gone).
    expect(t.updates).toHaveLength(0);
    expect(t.ticks).toHaveLength(0);
    expect(t.clock.pending).toBe(0);
  });

  test("a spec change applies at the next tick", async () => {
    const t = setup({ panels: [panel("a")] });
    t.poller.start();
    t.clock.runNext();
    await flush();
    t.runner.calls[0].resolve(1);
    await flush();
    t.setDashboard({ ...dashboard([panel("a"), panel("z")]), version: 2 });
    t.poller.tickNow();
    t.clock.runNext();
    await flush();
    expect(t.runner.calls.map((c) => c.panel.id)).toEqual(["a", "a", "z"]);
  });

  test("a consumer that throws is reported and the poller keeps its cadence", async () => {
    const clock = createManualTimers();
    const faults: unknown[] = [];
    let calls = 0;
    const poller = createPoller({
      current: () => dashboard([panel("a")]),
      runPanel: async () => {
        calls++;
        return { big: 1n } as unknown as QueryResult;
      },
      limiter: createKeyedLimiter(1),
      refreshMs: () => 5000,
      onPanel: (u) => JSON.stringify(u),
      onTick: () => {
        throw new Error("metrics broke");
      },
      onFault: (e) => faults.push(e),
      timers: clock.timers,
      now: clock.now,
      monotonic: clock.now,
    });
    poller.start();
    clock.runNext();
    await flush();
    clock.advance(5000);
    await flush();
    expect(calls).toBe(2);
    expect(faults.length).toBe(4);
    poller.stop();
  });

  test("panelError keeps AppError details, and its code is the most specific one the error carries", () => {
    expect(panelError(new AppError("query_timeout", "The query ran longer than 20 s."))).toEqual({
      code: "query_timeout",
      message: "The query ran longer than 20 s.",
    });
    expect(panelError(new AppError("guard_rejected", "table x is not in the catalog", { reason: "catalog" }))).toEqual({
      code: "catalog",
      reason: "catalog",
      message: "table x is not in the catalog",
    });
    // Why a source was unavailable is in extra.cause (lib/query/errors.ts).
    expect(
      panelError(new AppError("source_unavailable", "Source src_a is unavailable (connection_refused).", { cause: "connection_refused" })),
    ).toEqual({ code: "connection_refused", message: "Source src_a is unavailable (connection_refused)." });
    expect(
      panelError(new AppError("source_unavailable", "Source src_a is unavailable (connect_timeout).", { cause: "connect_timeout" })).code,
    ).toBe("connect_timeout");
    // A config-store failure is coded as such, whatever its own cause (ECONNREFUSED, timeout, stale).
    expect(
      panelError(new AppError("config_store_unavailable", "The configuration store is not answering.", { cause: "ECONNREFUSED" })),
    ).toEqual({
      code: "config_store_unavailable",
      message: "The configuration store is not answering.",
    });
    // A cause that is not a short code never reaches the wire as one.
    expect(panelError(new AppError("source_unavailable", "x", { cause: "connect 10.0.0.7:5432" })).code).toBe("source_unavailable");
    expect(panelError("boom")).toEqual({ code: "internal", message: "The panel's query failed." });
  });
});

const TIMEOUT = () =>
  new AppError("query_timeout", "The query ran longer than QUERY_TIMEOUT_SECONDS (20 s) and was cancelled by the database.", {
    timeoutSeconds: 20,
  });

type Outcome = "ok" | "timeout" | "stalled" | "guard" | "unavailable";

/**
 * Runs `count` ticks one after the other: each fires the poller's timer, settles every query it started
 * with `outcome(panelId, tick)`, and lets the tick end. Returns the tick indices at which each panel was queried.
 */
async function runTicks(t: ReturnType<typeof setup>, count: number, outcome: (panelId: string, tick: number) => Outcome, from = 0) {
  const queried: Record<string, number[]> = {};
  for (let tick = from; tick < from + count; tick++) {
    const before = t.runner.calls.length;
    expect(t.clock.runNext()).toBe(true);
    await flush();
    for (const call of t.runner.calls.slice(before)) {
      queried[call.panel.id] = [...(queried[call.panel.id] ?? []), tick];
      const o = outcome(call.panel.id, tick);
      if (o === "ok") call.resolve({ rows: [[tick]] });
      else if (o === "timeout") call.reject(TIMEOUT());
      else if (o === "stalled") call.reject(new QueryStalledError());
      else if (o === "guard") call.reject(new AppError("guard_rejected", "function pg_sleep is not allowed", { reason: "function" }));
      else call.reject(new AppError("source_unavailable", "Source src_a is unavailable (connection_refused)."));
    }
    await flush();
  }
  return queried;
}

describe("a panel that keeps timing out is backed off", () => {
  test("it sits out 1, 2, 4, 8, 16 … ticks while the other panels keep their cadence", async () => {
    const t = setup({ panels: [panel("slow"), panel("fast")], refresh: 5000 });
    t.poller.start();
    const queried = await runTicks(t, 40, (id) => (id === "slow" ? "timeout" : "ok"));
    expect(queried.slow).toEqual([0, 2, 5, 10, 19, 36]);
    expect(queried.fast).toHaveLength(40);
    expect(t.poller.queriesStarted).toBe(46);
    // Skipped ticks send no frame for the panel: its last frame says when it runs again.
    expect(t.updates.filter((u) => u.panelId === "slow")).toHaveLength(6);
  });

  test("the gap between two attempts is capped at 5 minutes of ticks", async () => {
    const t = setup({ panels: [panel("slow")], refresh: 60_000 });
    t.poller.start();
    const queried = await runTicks(t, 26, () => "timeout");
    // 60 s cadence: at most 4 ticks skipped (5 ticks = 5 minutes between attempts).
    expect(queried.slow).toEqual([0, 2, 5, 10, 15, 20, 25]);
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => timeoutBackoffTicks(n, 15_000))).toEqual([1, 2, 4, 8, 16, 19, 19]);
    expect([1, 2, 10].map((n) => timeoutBackoffTicks(n, 2_000))).toEqual([1, 2, 149]);
    expect([1, 3].map((n) => timeoutBackoffTicks(n, 300_000))).toEqual([1, 1]);
  });

  test("the error frame carries reason query_timeout, the time it runs again, and says so", async () => {
    const t = setup({ panels: [panel("slow")], refresh: 5000 });
    t.poller.start();
    const start = t.clock.now();
    await runTicks(t, 3, () => "timeout");
    const [first, second] = t.updates;
    expect(first).toEqual({
      panelId: "slow",
      at: start,
      error: {
        code: "query_timeout",
        reason: "query_timeout",
        message:
          "The query ran longer than QUERY_TIMEOUT_SECONDS (20 s) and was cancelled by the database. It timed out once, " +
          `so the panel skips the next refresh and runs again at about ${new Date(start + 10_000).toISOString()}.`,
        retryAt: start + 10_000,
      },
    });
    // It ran again exactly then (tick 2), timed out again and now skips two ticks.
    expect(second?.at).toBe(start + 10_000);
    expect(second).toMatchObject({
      error: { reason: "query_timeout", retryAt: start + 10_000 + 15_000 },
    });
    expect("error" in (second as PanelUpdate) && (second as { error: { message: string } }).error.message).toContain(
      "It timed out 2 times in a row, so the panel skips the next 2 refreshes",
    );
  });

  test("a success returns the panel to its cadence; a later timeout starts over at one tick", async () => {
    const t = setup({ panels: [panel("slow")], refresh: 5000 });
    t.poller.start();
    const queried = await runTicks(t, 12, (_id, tick) => (tick < 5 || tick === 7 ? "timeout" : "ok"));
    // Timeouts at 0 and 2 (skip 1, then 2), success at 5, every tick after that until the timeout at 7 (skip 1).
    expect(queried.slow).toEqual([0, 2, 5, 6, 7, 9, 10, 11]);
  });

  test("a spec change (new version) returns every panel to its cadence at once", async () => {
    const t = setup({ panels: [panel("slow")], refresh: 5000 });
    t.poller.start();
    const queried = await runTicks(t, 7, () => "timeout");
    // Timeouts at 0, 2 and 5: it now skips four ticks.
    expect(queried.slow).toEqual([0, 2, 5]);
    t.setDashboard({ ...dashboard([panel("slow")], 5000), version: 2 });
    t.poller.tickNow();
    const after = await runTicks(t, 3, () => "ok", 7);
    expect(after.slow).toEqual([7, 8, 9]);
  });

  test("the runner's stall watchdog counts as a timeout", async () => {
    const t = setup({ panels: [panel("slow")], refresh: 5000 });
    t.poller.start();
    const queried = await runTicks(t, 6, () => "stalled");
    expect(queried.slow).toEqual([0, 2, 5]);
    expect(t.updates[0]).toMatchObject({ error: { reason: "query_timeout" } });
  });

  test.each([
    ["guard rejections", "guard"],
    ["an unavailable source", "unavailable"],
  ] as const)("%s are not backed off", async (_name, outcome) => {
    const t = setup({ panels: [panel("a")], refresh: 5000 });
    t.poller.start();
    const queried = await runTicks(t, 8, () => outcome);
    expect(queried.a).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(t.updates.every((u) => "error" in u && u.error.retryAt === undefined)).toBe(true);
  });

  test("another error ends a run of timeouts", async () => {
    const t = setup({ panels: [panel("a")], refresh: 5000 });
    t.poller.start();
    const queried = await runTicks(t, 7, (_id, tick) => (tick === 2 ? "unavailable" : "timeout"));
    // Timeout at 0 (skip 1), unavailable at 2 (no skip), timeout at 3 counts as the first again (skip 1).
    expect(queried.a).toEqual([0, 2, 3, 5]);
  });
});

describe("keyed limiter", () => {
  test("hands a slot straight to the next waiter in arrival order", async () => {
    const limiter = createKeyedLimiter(1);
    const order: string[] = [];
    const r1 = await limiter.acquire("s");
    const p2 = limiter.acquire("s").then((r) => {
      order.push("2");
      return r;
    });
    const p3 = limiter.acquire("s").then((r) => {
      order.push("3");
      return r;
    });
    expect(limiter.waiting("s")).toBe(2);
    r1();
    r1();
    (await p2)();
    (await p3)();
    expect(order).toEqual(["2", "3"]);
    expect(limiter.running("s")).toBe(0);
  });
});

describe("a hung source costs its own panels, nothing else", () => {
  test("a panel on a source that never answers holds no tick: the dashboard's other panels keep their cadence, and its frame comes when it gives up", async () => {
    const t = setup({ panels: [panel("hung", "src_h"), panel("ok")], refresh: 5000, clockMono: true });
    const start = t.clock.now();
    t.poller.start();
    t.clock.runNext();
    for (let k = 0; k < 6; k++) {
      if (k > 0) t.clock.advance(5000);
      await flush();
      for (const c of t.runner.calls.filter((c) => c.panel.id === "ok")) c.resolve({ rows: [[k]] });
      await flush();
    }
    // One run of the hung panel, six of the healthy one, each at its tick of the cadence, each sent at once.
    expect(t.runner.calls.filter((c) => c.panel.id === "hung")).toHaveLength(1);
    const ok = t.runner.calls.filter((c) => c.panel.id === "ok");
    expect(ok.map((c) => c.range.toMs - start)).toEqual([0, 5000, 10_000, 15_000, 20_000, 25_000]);
    expect(t.updates.map((u) => [u.panelId, u.at - start])).toEqual([
      ["ok", 0],
      ["ok", 5000],
      ["ok", 10_000],
      ["ok", 15_000],
      ["ok", 20_000],
      ["ok", 25_000],
    ]);
    // The first tick ended at its bound with the hung panel still out; the others ended with their panels.
    expect(t.ticks).toEqual([5, 0, 0, 0, 0, 0]);

    // The runner gives it up (the stall watchdog): its frame goes out at once and it is backed off from
    // the ticks that follow, so it runs again at the retryAt its frame announced.
    t.clock.advance(2000);
    t.runner.calls.find((c) => c.panel.id === "hung")!.reject(new QueryStalledError());
    await flush();
    const timeout = t.updates.at(-1);
    expect(timeout).toMatchObject({ panelId: "hung", at: start + 27_000, error: { code: "query_timeout", retryAt: start + 35_000 } });
    for (let k = 0; k < 2; k++) {
      t.clock.advance(k === 0 ? 3000 : 5000);
      await flush();
      for (const c of t.runner.calls.filter((c) => c.panel.id === "ok").slice(6)) c.resolve({ rows: [[k]] });
      await flush();
    }
    const hungRuns = t.runner.calls.filter((c) => c.panel.id === "hung");
    expect(hungRuns.map((c) => c.range.toMs - start)).toEqual([0, 35_000]);
    t.poller.stop();
    hungRuns[1].resolve(null);
    await flush();
  });

  test("a statement held past its timeout: the panel says so at once, keeps its one run (and slot) until it ends, then backs off; nothing after stop", async () => {
    const t = setup({ panels: [panel("hung", "src_h")], refresh: 5000, clockMono: true });
    // The listener the poller hands the run, which the runner tells when a statement is held.
    const listeners: (HeldListener | undefined)[] = [];
    const gated = t.runner.run;
    const poller = createPoller({
      current: () => dashboard([panel("hung", "src_h")], 5000),
      runPanel: (p, d, range, signal, _window, onHeld) => {
        listeners.push(onHeld);
        return gated(p, d, range, signal);
      },
      limiter: createKeyedLimiter(1),
      refreshMs: () => 5000,
      onPanel: (u) => t.updates.push(u),
      onTick: () => {},
      timers: t.clock.timers,
      now: t.clock.now,
      monotonic: t.clock.now,
    });
    const start = t.clock.now();
    poller.start();
    t.clock.runNext();
    await flush();
    expect(listeners).toHaveLength(1);
    const held = new AppError(
      "query_timeout",
      "The query outlived QUERY_TIMEOUT_SECONDS (20 s) and the source has not confirmed that it ended.",
      {
        reason: "query_held",
      },
    );
    t.clock.advance(2000);
    listeners[0]?.(held);
    expect(t.updates).toEqual([
      { panelId: "hung", at: start + 2000, error: { code: "query_held", reason: "query_held", message: held.detail } },
    ]);
    // Still one run: the ticks that follow skip the panel while its statement is held.
    t.clock.advance(20_000);
    await flush();
    expect(t.runner.calls).toHaveLength(1);
    expect(poller.inFlight).toBe(1);
    // It ends: the timeout frame follows and backs the panel off.
    t.runner.calls[0].reject(new QueryStalledError());
    await flush();
    expect(t.updates.at(-1)).toMatchObject({ panelId: "hung", error: { code: "query_timeout", reason: "query_timeout" } });
    // After stop, a late notice of a run still out sends nothing.
    const count = t.updates.length;
    t.clock.advance(20_000);
    await flush();
    poller.stop();
    expect(listeners.length).toBeGreaterThan(1);
    for (const l of listeners.slice(1)) l?.(held);
    expect(t.updates).toHaveLength(count);
    for (const c of t.runner.calls.slice(1)) c.resolve(null);
    await flush();
  });

  test("a run that outlives its tick never overlaps the same panel, even across a stopped and a new poller sharing the runs in flight", async () => {
    const inFlight: PanelRuns = new Set();
    const first = setup({ panels: [panel("a"), panel("b")], refresh: 5000, inFlight });
    first.poller.start();
    first.clock.runNext();
    await flush();
    first.runner.calls.find((c) => c.panel.id === "b")!.resolve(1);
    await flush();
    // The last viewer leaves while "a" is out; a new viewer's poller (same dashboard) starts at once.
    first.poller.stop();
    expect(inFlight.size).toBe(1);
    const second = setup({ panels: [panel("a"), panel("b")], refresh: 5000, inFlight });
    second.poller.start();
    second.clock.runNext();
    await flush();
    expect(second.runner.calls.map((c) => c.panel.id)).toEqual(["b"]);
    second.runner.calls[0].resolve(2);
    await flush();
    // The stopped poller's run completes: its frame goes nowhere, and the new poller runs "a" at its next tick.
    first.runner.calls.find((c) => c.panel.id === "a")!.resolve(1);
    await flush();
    expect(first.updates.map((u) => u.panelId)).toEqual(["b"]);
    expect(inFlight.size).toBe(0);
    second.clock.advance(5000);
    await flush();
    expect(second.runner.calls.map((c) => c.panel.id)).toEqual(["b", "a", "b"]);
    second.poller.stop();
    for (const c of second.runner.calls) c.resolve(null);
    await flush();
  });

  test("a spec change while a run is out: the new spec runs at once without that panel; a frame of a changed query is dropped, one of an unchanged query is sent", async () => {
    const t = setup({ panels: [panel("same"), panel("changed")], refresh: 5000 });
    t.poller.start();
    t.clock.runNext();
    await flush();
    expect(t.runner.calls.map((c) => c.panel.id)).toEqual(["same", "changed"]);
    t.setDashboard({ ...dashboard([panel("same"), { ...panel("changed"), sql: "SELECT 2" }, panel("new")]), version: 2 });
    t.poller.tickNow();
    t.clock.advance(5000);
    await flush();
    // Both earlier runs are still out: only the new panel runs.
    expect(t.runner.calls.map((c) => c.panel.id)).toEqual(["same", "changed", "new"]);
    t.runner.calls[0].resolve("same-v1");
    t.runner.calls[1].resolve("changed-v1");
    t.runner.calls[2].resolve("new-v2");
    await flush();
    expect(t.updates.map((u) => [u.panelId, "result" in u ? u.result : null])).toEqual([
      ["same", "same-v1"],
      ["new", "new-v2"],
    ]);
    t.clock.advance(5000);
    await flush();
    expect(t.runner.calls.slice(3).map((c) => [c.panel.id, c.panel.sql])).toEqual([
      ["same", "SELECT 'same'"],
      ["changed", "SELECT 2"],
      ["new", "SELECT 'new'"],
    ]);
    t.poller.stop();
    for (const c of t.runner.calls) c.resolve(null);
    await flush();
  });

  test("stop while a panel is out on a hung source: no timer, no query and no frame after it; idle() waits for the run, whose signal is aborted", async () => {
    const t = setup({ panels: [panel("hung", "src_h"), panel("ok")], refresh: 5000 });
    t.poller.start();
    t.clock.runNext();
    await flush();
    t.runner.calls.find((c) => c.panel.id === "ok")!.resolve(1);
    await flush();
    t.clock.advance(5000);
    await flush();
    const before = t.updates.length;
    const ticks = t.ticks.length;
    expect(t.poller.ticking).toBe(true);
    t.poller.stop();
    // The tick whose "ok" query is out and the run of the hung panel from the first tick are all that is left.
    expect(t.poller.ticking).toBe(false);
    expect(t.poller.busy).toBe(true);
    expect(t.clock.pending).toBe(0);
    expect(t.runner.calls.every((c) => c.signal.aborted)).toBe(true);
    let idle = false;
    void t.poller.idle().then(() => {
      idle = true;
    });
    for (const c of t.runner.calls.filter((c) => c.panel.id === "ok")) c.resolve(2);
    await flush();
    expect(idle).toBe(false);
    t.runner.calls.find((c) => c.panel.id === "hung")!.reject(TIMEOUT());
    await flush();
    expect(idle).toBe(true);
    expect(t.poller.busy).toBe(false);
    expect(t.updates).toHaveLength(before);
    expect(t.ticks).toHaveLength(ticks);
    expect(t.poller.queriesStarted).toBe(3);
    expect(t.clock.pending).toBe(0);
  });

  test("a wait for a slot given up (aborted) leaves the queue; the next waiter still gets the slot", async () => {
    const limiter = createKeyedLimiter(1);
    const r1 = await limiter.acquire("s");
    const gaveUp = new AbortController();
    const p2 = limiter.acquire("s", gaveUp.signal);
    const p3 = limiter.acquire("s");
    gaveUp.abort();
    await expect(p2).rejects.toBeInstanceOf(SlotWaitAborted);
    expect(limiter.waiting("s")).toBe(1);
    r1();
    (await p3)();
    expect(limiter.running("s")).toBe(0);
    expect(limiter.tryAcquire("s")).not.toBeNull();
    expect(limiter.tryAcquire("s")).toBeNull();
  });

  test("dashboards sharing a source whose slots are all held by hung queries: another dashboard's panel on it waits one refresh at most, then says source_busy; its other panels and ticks go on", async () => {
    const clock = createManualTimers();
    const limiter = createKeyedLimiter(2);
    const hung = gatedRunner();
    const healthy = gatedRunner();
    const updatesB: PanelUpdate[] = [];
    const common = {
      limiter,
      timers: clock.timers,
      now: clock.now,
      monotonic: clock.now,
      refreshMs: (s: DashboardSpec) => s.refreshIntervalMs ?? 15000,
    };
    // Dashboard A: two panels on the source that stopped answering; their queries never settle here.
    const a = createPoller({
      ...common,
      current: () => dashboard([panel("a1"), panel("a2")], 5000),
      runPanel: hung.run,
      onPanel: () => {},
      onTick: () => {},
    });
    // Dashboard B: one panel on the same source, one on another.
    const ticksB: number[] = [];
    const b = createPoller({
      ...common,
      current: () => ({ ...dashboard([panel("b1"), panel("b2", "src_b")], 5000), id: "db_2" }),
      runPanel: (p, d, r, signal) => (p.sourceId === "src_b" ? healthy.run(p, d, r, signal) : hung.run(p, d, r, signal)),
      onPanel: (u) => updatesB.push(u),
      onTick: (s) => ticksB.push(s),
    });
    a.start();
    clock.runNext();
    await flush();
    expect(hung.calls.map((c) => c.panel.id)).toEqual(["a1", "a2"]);
    b.start();
    clock.runNext();
    await flush();
    // b1 waits for a slot A's hung queries hold; b2's source is free.
    expect(healthy.calls.map((c) => c.panel.id)).toEqual(["b2"]);
    expect(limiter.waiting("src_a")).toBe(1);
    healthy.calls[0].resolve({ rows: [[2]] });
    await flush();
    expect(updatesB).toEqual([{ panelId: "b2", at: clock.now(), result: { rows: [[2]] } }]);
    // One refresh later b1 gives its wait up with a coded error, and B's tick ends.
    clock.advance(5000);
    await flush();
    expect(updatesB[1]).toMatchObject({ panelId: "b1", error: { code: "source_busy" } });
    expect(limiter.waiting("src_a")).toBe(0);
    expect(ticksB).toHaveLength(1);
    // B keeps its cadence: the next tick runs b2 again (and b1 waits again, for one refresh at most).
    await flush();
    clock.runNext();
    await flush();
    expect(healthy.calls.map((c) => c.panel.id)).toEqual(["b2", "b2"]);
    expect(hung.calls.map((c) => c.panel.id)).toEqual(["a1", "a2"]);
    a.stop();
    b.stop();
    for (const c of [...hung.calls, ...healthy.calls]) c.resolve(null);
    await flush();
  });
});

describe("the hub with a panel run that outlives its tick", () => {
  test("the healthy panel's frames go out at its cadence, its ticks are observed at their bound; after the drain frame the hung run sends nothing, and idle() waits for it", async () => {
    const clock = createManualTimers();
    const runner = gatedRunner();
    const registry = new Registry();
    const hub = createHub({
      metrics: createMetrics(registry, { defaultCollectors: false }),
      runPanel: runner.run,
      limiter: createKeyedLimiter(4),
      refreshMs: () => 5000,
      timers: clock.timers,
      now: clock.now,
      monotonic: clock.now,
      log: createLogger({ silent: true }),
    });
    const viewer = recordingSink();
    hub.subscribe(dashboard([panel("hung", "src_h"), panel("ok")], 5000), viewer.sink);
    const okFrames = () => viewer.frames.filter((f) => f.includes('"panelId":"ok"')).length;
    clock.runNext();
    for (let k = 0; k < 3; k++) {
      if (k > 0) clock.advance(k === 1 ? 5000 - COALESCE_MS : 5000);
      await flush();
      for (const c of runner.calls.filter((c) => c.panel.id === "ok")) c.resolve({ rows: [[k]] });
      await flush();
      // The first tick waits for its bound (the hung panel): its frame goes out after the 250 ms coalescing
      // at the latest; the later ticks end with their only panel.
      if (k === 0) clock.advance(COALESCE_MS);
      expect(okFrames()).toBe(k + 1);
    }
    const text = await registry.metrics();
    expect(text).toContain('svc_poller_tick_duration_seconds_count{dashboard="db_1"} 3');
    expect(text).toContain('svc_poller_tick_duration_seconds_sum{dashboard="db_1"} 5');

    // Drain with the hung panel's run out.
    hub.stopPollers();
    await hub.closeAll(() => drainingFrame(3000));
    expect(viewer.frames.at(-1)).toContain("event: draining");
    let idle = false;
    void hub.idle().then(() => {
      idle = true;
    });
    await flush();
    expect(idle).toBe(false);
    runner.calls.find((c) => c.panel.id === "hung")!.reject(TIMEOUT());
    for (const c of runner.calls) c.resolve(null);
    await flush();
    expect(idle).toBe(true);
    clock.advance(60_000);
    expect(viewer.writesAfterAnEnd()).toBe(0);
    expect(viewer.frames.at(-1)).toContain("event: draining");
    expect(runner.calls.filter((c) => c.panel.id === "hung")).toHaveLength(1);
    // The stopped poller's series stay dropped.
    expect(await registry.metrics()).not.toContain('dashboard="db_1"');
    expect(clock.pending).toBe(0);
  });
});
