import { Registry } from "prom-client";
import { describe, expect, test } from "vitest";
import type { DashboardSpec, Panel } from "../lib/dashboards/spec.ts";
import { AppError } from "../lib/http/errors.ts";
import type { QueryResult, SnapshotFrame } from "../lib/live/frames.ts";
import { createManualTimers } from "../lib/lifecycle/manual-timers.ts";
import { createLogger } from "../lib/log/logger.ts";
import { createMetrics } from "../lib/metrics/metrics.ts";
import { createHub } from "./hub.ts";
import { createKeyedLimiter } from "./limiter.ts";
import type { LoadedDashboard, TickRange } from "./poller.ts";
import { recordingSink } from "./testing/recording-sink.ts";
import { type View, resolveView } from "./view.ts";

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const flush = () => new Promise<void>((r) => setImmediate(r));

function panel(id: string): Panel {
  return { id, title: id, type: "timeseries", sourceId: "src_a", sql: `SELECT '${id}'` };
}

function dashboard(version = 1): LoadedDashboard {
  const spec: DashboardSpec = {
    title: "D",
    refreshIntervalMs: 5000,
    time: { from: "now-1h", to: "now" },
    panels: [panel("a"), panel("b")],
    variables: [{ name: "service", type: "custom", values: ["checkout", "search"], multi: true }],
  };
  return { id: "db_1", workspaceId: "ws_1", version, spec };
}

const empty: QueryResult = { columns: [], rows: [], truncated: false, elapsedMs: 1 };

const sink = () => recordingSink();

function setup(maxViews = 20) {
  const clock = createManualTimers(NOW);
  const calls: { panel: string; range: TickRange; vars: Record<string, string[]> | undefined; at: number }[] = [];
  const registry = new Registry();
  const hub = createHub({
    metrics: createMetrics(registry, { defaultCollectors: false }),
    runPanel: async (p, d, range) => {
      calls.push({ panel: p.id, range, vars: d.vars, at: clock.now() });
      return empty;
    },
    limiter: createKeyedLimiter(100),
    refreshMs: (spec) => spec.refreshIntervalMs ?? 15000,
    maxViewsPerDashboard: maxViews,
    timers: clock.timers,
    now: clock.now,
    monotonic: clock.now,
    log: createLogger({ silent: true }),
  });
  const view = (q: string): View =>
    resolveView(
      Object.fromEntries(
        [...new URLSearchParams(q)].reduce((m, [k, v]) => m.set(k, [...(m.get(k) ?? []), v]), new Map<string, string[]>()),
      ),
      dashboard().spec,
      {
        savedRefreshMs: 5000,
        minRefreshMs: 2000,
        now: clock.now(),
      },
    );
  return { clock, calls, hub, view, registry };
}

function snapshotOf(frames: string[]): SnapshotFrame {
  const f = frames.find((x) => x.startsWith("event: snapshot"))!;
  return JSON.parse(f.split("\ndata: ")[1]) as SnapshotFrame;
}

describe("views on shared pollers", () => {
  test("3 views x 100 viewers: one poller per view, one query per panel per view per tick", async () => {
    const { clock, calls, hub, view } = setup();
    const views = [undefined, view("from=now-6h"), view("var-service=checkout")];
    for (const v of views) for (let i = 0; i < 100; i++) hub.subscribe(dashboard(), sink().sink, {}, v);
    expect(hub.viewsOf("db_1")).toBe(3);
    expect(hub.subscribersOf("db_1")).toBe(300);
    for (let tick = 1; tick <= 3; tick++) {
      clock.runNext();
      await flush();
      // Every poller runs its first tick at once, then every 5 s.
      if (tick === 1) for (let k = 0; k < 2; k++) clock.runNext();
      await flush();
      expect(calls.length).toBe(tick * 3 * 2);
      if (tick < 3) clock.advance(5000);
    }
    const sixHours = calls.filter((c) => c.range.toMs - c.range.fromMs === 6 * 3_600_000);
    expect(sixHours.length).toBe(3 * 2);
    expect(calls.filter((c) => c.vars?.service?.[0] === "checkout").length).toBe(3 * 2);
  });

  test("a view equal to the saved one is the saved view; a snapshot says which view it serves", async () => {
    const { hub, view } = setup();
    const a = sink();
    const b = sink();
    hub.subscribe(dashboard(), a.sink);
    hub.subscribe(dashboard(), b.sink, {}, view("from=now-1h&to=now&refresh=5s"));
    expect(hub.viewsOf("db_1")).toBe(1);
    expect(snapshotOf(b.frames).view).toEqual({ from: "now-1h", to: "now", refreshMs: 5000, vars: {}, live: true, saved: true });
    const c = sink();
    hub.subscribe(dashboard(), c.sink, {}, view("from=now-6h&refresh=1m"));
    expect(snapshotOf(c.frames).view).toMatchObject({ from: "now-6h", refreshMs: 60_000, live: true, saved: false });
  });

  test("past the view cap a new view is refused with 429 too_many_views; open views and the saved one are unaffected", async () => {
    const { hub, view } = setup(2);
    const open = [sink(), sink()];
    hub.subscribe(dashboard(), open[0].sink, {}, view("from=now-2h"));
    hub.subscribe(dashboard(), open[1].sink, {}, view("from=now-3h"));
    const refused = hub.refusal(dashboard(), view("from=now-4h"));
    expect(refused).toBeInstanceOf(AppError);
    expect(refused?.status).toBe(429);
    expect(refused?.code).toBe("too_many_views");
    expect(refused?.headers["retry-after"]).toMatch(/^\d+$/);
    expect(() => hub.subscribe(dashboard(), sink().sink, {}, view("from=now-4h"))).toThrow(AppError);
    // An open view and the saved view still admit viewers.
    expect(hub.refusal(dashboard(), view("from=now-2h"))).toBeNull();
    hub.subscribe(dashboard(), sink().sink, {}, view("from=now-2h"));
    hub.subscribe(dashboard(), sink().sink);
    expect(hub.viewsOf("db_1")).toBe(3);
    // A view closed frees its place.
    open[1].close();
    expect(hub.refusal(dashboard(), view("from=now-4h"))).toBeNull();
  });

  test("1,000 distinct views at once: the cap holds, the rest are 429", () => {
    const { hub, view } = setup(20);
    let refused = 0;
    for (let i = 1; i <= 1000; i++) {
      try {
        hub.subscribe(dashboard(), sink().sink, {}, view(`from=now-${i}m`));
      } catch (err) {
        expect((err as AppError).code).toBe("too_many_views");
        refused++;
      }
    }
    expect(hub.viewsOf("db_1")).toBe(20);
    expect(refused).toBe(980);
  });

  test("a range ending in the past is queried once, kept, and served without a query; frames say it is not live", async () => {
    const { clock, calls, hub, view } = setup();
    const past = view("from=2026-11-26T00:00:00Z&to=2026-11-26T06:00:00Z");
    const first = sink();
    hub.subscribe(dashboard(), first.sink, {}, past);
    clock.runNext();
    await flush();
    await flush();
    expect(calls.length).toBe(2);
    expect(hub.pollersOf("db_1").every((p) => !p.running)).toBe(true);
    clock.advance(3_600_000);
    await flush();
    expect(calls.length).toBe(2);
    const later = sink();
    hub.subscribe(dashboard(), later.sink, {}, past);
    const snap = snapshotOf(later.frames);
    expect(snap.view.live).toBe(false);
    expect(snap.panels.map((p) => p.panelId).sort()).toEqual(["a", "b"]);
    expect(calls.length).toBe(2);
    // A new spec version queries it once more.
    hub.applyDashboard(dashboard(2));
    clock.runNext();
    await flush();
    await flush();
    expect(calls.length).toBe(4);
  });

  test("a range whose fixed end is ahead polls live; at its end it is queried once more, then kept and no longer live", async () => {
    const { clock, calls, hub, view } = setup();
    // NOW is 12:00; the range ends at 12:12:32.5, between two 5 s ticks.
    const end = NOW + 12 * 60_000 + 32_500;
    const ending = view(`from=2026-11-27T11:00:00Z&to=${new Date(end).toISOString()}`);
    const first = sink();
    hub.subscribe(dashboard(), first.sink, {}, ending);
    expect(snapshotOf(first.frames).view.live).toBe(true);
    const tickTo = async (until: number) => {
      while (clock.now() < until) {
        clock.advance(Math.min(500, until - clock.now()));
        await flush();
        await flush();
      }
    };
    await tickTo(end - 1);
    // Live: a query per panel every 5 s up to the end, each over the whole fixed range.
    const before = calls.length;
    expect(before).toBe(2 * Math.ceil((end - NOW) / 5000));
    expect(calls.every((c) => c.range.toMs === end && c.at < end)).toBe(true);
    expect(hub.pollersOf("db_1")[0].running).toBe(true);
    expect(first.frames.some((f) => f.startsWith("event: view\n"))).toBe(false);
    // The end's own tick comes at the end, not at the next 5 s tick.
    await tickTo(end);
    expect(calls.slice(before).map((c) => c.at)).toEqual([end, end]);
    await flush();
    expect(hub.pollersOf("db_1")[0].running).toBe(false);
    const viewFrames = first.frames.filter((f) => f.startsWith("event: view\n"));
    expect(viewFrames).toHaveLength(1);
    expect(JSON.parse(viewFrames[0].split("\ndata: ")[1])).toMatchObject({ to: ending.to, live: false });
    // Kept: no query an hour later, and a new viewer gets the results with live: false, without a query.
    clock.advance(3_600_000);
    await flush();
    expect(calls.length).toBe(before + 2);
    const later = sink();
    hub.subscribe(dashboard(), later.sink, {}, ending);
    const snap = snapshotOf(later.frames);
    expect(snap.view.live).toBe(false);
    expect(snap.panels.map((p) => p.panelId).sort()).toEqual(["a", "b"]);
    expect(calls.length).toBe(before + 2);
  });

  test("a tick running when the end comes is followed at once by the end's tick", async () => {
    const clock = createManualTimers(NOW);
    let release: (() => void) | null = null;
    const started: number[] = [];
    const hub = createHub({
      metrics: createMetrics(new Registry(), { defaultCollectors: false }),
      runPanel: async () => {
        started.push(clock.now());
        // The tick that starts just before the end hangs until released.
        if (started.length === 3) await new Promise<void>((r) => (release = r));
        return empty;
      },
      limiter: createKeyedLimiter(100),
      refreshMs: (spec) => spec.refreshIntervalMs ?? 15000,
      timers: clock.timers,
      now: clock.now,
      monotonic: clock.now,
      log: createLogger({ silent: true }),
    });
    const oneaPanel: LoadedDashboard = { ...dashboard(), spec: { ...dashboard().spec, panels: [panel("a")] } };
    const end = NOW + 11_000;
    const v = resolveView({ to: [new Date(end).toISOString()] }, oneaPanel.spec, { savedRefreshMs: 5000, minRefreshMs: 2000, now: NOW });
    const s = sink();
    hub.subscribe(oneaPanel, s.sink, {}, v);
    for (let i = 0; i < 3; i++) {
      clock.runNext();
      await flush();
    }
    // The third tick (at 12:00:10) still runs when the end (12:00:11) comes.
    expect(started).toEqual([NOW, NOW + 5000, NOW + 10_000]);
    clock.advance(1000);
    await flush();
    expect(started).toHaveLength(3);
    release!();
    await flush();
    clock.advance(0);
    await flush();
    expect(started).toEqual([NOW, NOW + 5000, NOW + 10_000, end]);
    await flush();
    expect(hub.pollersOf("db_1")[0].running).toBe(false);
    expect(s.frames.some((f) => f.startsWith("event: view\n") && f.includes('"live":false'))).toBe(true);
  });

  test("the saved view follows its spec's range: moved into the past it is queried once and kept; back to now it polls again", async () => {
    const { clock, calls, hub } = setup();
    const s = sink();
    hub.subscribe(dashboard(), s.sink);
    clock.runNext();
    await flush();
    await flush();
    expect(calls.length).toBe(2);
    const past = dashboard(2);
    past.spec = { ...past.spec, time: { from: "2026-11-26T00:00:00Z", to: "2026-11-26T06:00:00Z" } };
    hub.applyDashboard(past);
    clock.runNext();
    await flush();
    await flush();
    await flush();
    expect(calls.length).toBe(4);
    expect(hub.pollersOf("db_1")[0].running).toBe(false);
    clock.advance(60_000);
    await flush();
    expect(calls.length).toBe(4);
    const live = dashboard(3);
    hub.applyDashboard(live);
    expect(hub.pollersOf("db_1")[0].running).toBe(true);
    clock.runNext();
    await flush();
    clock.advance(5000);
    await flush();
    expect(calls.length).toBe(8);
  });

  test("metric labels carry the dashboard id only, never view text", async () => {
    const { clock, hub, view, registry } = setup();
    hub.subscribe(dashboard(), sink().sink, {}, view("from=now-6h&var-service=checkout"));
    clock.runNext();
    await flush();
    await flush();
    const text = await registry.metrics();
    expect(text).not.toContain("now-6h");
    expect(text).not.toContain("checkout");
    expect(text).toContain('svc_sse_subscribers{dashboard="db_1"} 1');
  });
});
