import type { SessionUser } from "../lib/auth/types.ts";
import type { RevocableSession } from "../lib/auth/revocations.ts";
import { type DashboardSpec, MAX_REFRESH_INTERVAL_MS } from "../lib/dashboards/spec.ts";
import { AppError } from "../lib/http/errors.ts";
import type { DashboardSummary, PanelUpdate, ViewSummary } from "../lib/live/frames.ts";
import type { Logger } from "../lib/log/logger.ts";
import type { Metrics } from "../lib/metrics/metrics.ts";
import type { KeyedLimiter } from "./limiter.ts";
import { type IncrementalOptions, createIncrementalPanels } from "./incremental.ts";
import { type LoadedDashboard, type PanelRuns, type PlanPanel, type Poller, type RunPanel, createPoller } from "./poller.ts";
import { HEARTBEAT_FRAME, type Sink, encodeEvent, sessionExpiredFrame } from "./sse.ts";
import type { Timers } from "../lib/lifecycle/timers.ts";
import { createExpiries } from "./expiries.ts";
import { type View, endsInPast, fixedEnd, savedView, viewKey, viewSummary } from "./view.ts";

export type { DashboardSummary };

/** The session a stream was opened with: revocations and role changes are matched against it. */
export type StreamSession = RevocableSession & { user: Pick<SessionUser, "groups" | "token" | "revokedWorkspaces"> };

interface Subscriber {
  sink: Sink;
  channel: Channel;
  left: boolean;
  /** The session's `exp` (epoch ms) while the stream waits for it in `expiries`; null otherwise. */
  expiresAt: number | null;
  /** The session the stream was opened with, checked again whenever sessions are revoked. */
  session?: StreamSession;
}

/** setTimeout's longest delay; a later fixed range end is re-armed when it fires. */
const MAX_TIMER_MS = 2_147_483_647;

/** One dashboard's views on this instance, all at the same spec version. */
interface Group {
  dashboard: LoadedDashboard;
  channels: Map<string, Channel>;
}

/** One view of a dashboard: its subscribers, the latest results and the one poller they share. */
interface Channel {
  group: Group;
  key: string;
  /** The view; null for the saved one, which follows the spec (range and cadence) when it changes. */
  view: View | null;
  /** False for a range ending in the past: queried once, kept, not polled. */
  live: boolean;
  /** While live with a fixed end (`to` an instant) ahead: the timer that asks for the tick at that end. */
  endTimer: unknown;
  subscribers: Set<Subscriber>;
  /** The latest update of every panel, in spec order of first arrival; the snapshot is built from it. */
  latest: Map<string, PanelUpdate>;
  /** The serialized snapshot, built once and reused until a panel or the spec changes. */
  snapshot: Buffer | null;
  poller: Poller;
  /** Panel frames of the running tick not yet written; sent together in one write per subscriber. */
  outbox: Buffer[];
  outboxTimer: unknown;
  /** When (monotonic ms) the channel last wrote to all its subscribers: a channel that writes needs no heartbeat. */
  lastWriteAt: number;
  /** A frame still being written to its subscribers in chunks (FANOUT_CHUNK); null when none is. */
  fanout: Fanout | null;
}

/** A frame's fan-out in progress: the subscribers it goes to (those of the moment it began) and the next one. */
interface Fanout {
  frame: Buffer;
  subs: Subscriber[];
  next: number;
}

/**
 * Subscribers a fan-out writes before it lets the process's next-tick queue run. A socket write that completes at
 * once leaves Node's after-write bookkeeping (an object and a next-tick entry per socket) alive until that queue runs:
 * in one loop over 10,000 sockets about 1.5 MB of young objects, which a scavenge landing in the loop copies (4 to
 * 17 ms at load 4 to 7, in 6 of 10 ticks with the image's 4 MB semi-space). After every chunk the bookkeeping runs
 * and dies young, so a scavenge finds little alive. Each subscriber still gets every frame in order: a write to a
 * view's subscribers outside its fan-out (another frame, a session's end, a drain) first finishes the fan-out.
 */
export const FANOUT_CHUNK = 256;

/**
 * Longest a panel frame waits for other panels' frames. Writing to a socket costs a system call however
 * small the frame, so a tick's frames go out in one write per subscriber when it ends; a slow panel
 * holds the others for at most this long, and a frame of a run that outlived its tick waits no longer.
 */
export const COALESCE_MS = 250;

/** Default of MAX_VIEWS_PER_DASHBOARD. */
export const DEFAULT_MAX_VIEWS_PER_DASHBOARD = 20;

/** Cadences whose tick grid the hub remembers at once. */
const MAX_GRIDS = 1000;

/** How long a viewer refused with too_many_views is told to wait (Retry-After, seconds). */
export const TOO_MANY_VIEWS_RETRY_S = 30;

export interface HubOptions {
  metrics: Metrics;
  /** Views per dashboard besides the saved one (MAX_VIEWS_PER_DASHBOARD); default DEFAULT_MAX_VIEWS_PER_DASHBOARD. */
  maxViewsPerDashboard?: number;
  runPanel: RunPanel;
  /**
   * Incremental ticks (stream-host/incremental.ts): how a panel's statement is planned, and the options.
   * Absent: every tick runs every panel's full query.
   */
  incremental?: { plan: PlanPanel; options: IncrementalOptions };
  limiter: KeyedLimiter;
  /**
   * Pollers of one cadence tick together (PollerOptions.grid), so panels with the same query on different
   * dashboards and views ask for it at the same instant and the runner shares it (COALESCE_PANEL_QUERIES).
   */
  coalesce?: boolean;
  refreshMs(spec: DashboardSpec): number;
  timers: Timers;
  now(): number;
  monotonic(): number;
  log: Logger;
}

/**
 * Every view with subscribers on this instance: one channel each (keyed by dashboard, range
 * expressions, cadence and variable values), holding the subscribers, the latest results and the one
 * poller they all share. Each frame is serialized once and the same buffer is written to every
 * subscriber of the view. A dashboard has at most `maxViewsPerDashboard` views besides its saved one.
 */
export function createHub(opts: HubOptions) {
  const maxViews = opts.maxViewsPerDashboard ?? DEFAULT_MAX_VIEWS_PER_DASHBOARD;
  const groups = new Map<string, Group>();
  /** Every channel of every group (for the process-wide loops). */
  const channels = new Set<Channel>();
  /** Pollers that were stopped while a tick still ran; drain awaits them. */
  const stopping = new Set<Poller>();
  /**
   * Panel runs in flight across every poller, so a dashboard reopened while its stopped poller's run of a
   * panel (say on a hung source) is still out waits for that run instead of starting a second.
   */
  const inFlight: PanelRuns = new Set();
  let subscriberCount = 0;
  /** Every stream's session expiry, on one timer (a timer per stream costs a Timeout and a timer list each). */
  const expiries = createExpiries<Subscriber>({
    timers: opts.timers,
    now: opts.now,
    onDue: (sub, at) => endSession(sub, sessionExpiredFrame(at)),
  });
  /** The tick grid of each cadence: its origin, set by the first tick that asked (PollerOptions.grid). */
  const grids = new Map<number, number>();
  function gridOf(refreshMs: number, at: number): number {
    let origin = grids.get(refreshMs);
    if (origin === undefined) {
      // Cadences come from view URLs; a process that saw very many forgets them (alignment resumes at once).
      if (grids.size >= MAX_GRIDS) grids.clear();
      origin = at;
      grids.set(refreshMs, origin);
    }
    return origin;
  }

  function summary(d: LoadedDashboard): DashboardSummary {
    return {
      id: d.id,
      version: d.version,
      title: d.spec.title,
      refreshIntervalMs: opts.refreshMs(d.spec),
      time: d.spec.time,
      panels: d.spec.panels.map((p) => ({
        id: p.id,
        title: p.title,
        type: p.type,
        ...(p.unit !== undefined ? { unit: p.unit } : {}),
        ...(p.options !== undefined ? { options: p.options } : {}),
        ...(p.gridPos !== undefined ? { gridPos: p.gridPos } : {}),
      })),
      ...(d.spec.variables !== undefined
        ? {
            // A query variable's SQL and source stay on the server.
            variables: d.spec.variables.map(({ sql: _sql, sourceId: _source, ...v }) => v),
          }
        : {}),
    };
  }

  /** The view a channel serves now (the saved one as the current spec says). */
  function resolvedView(ch: Channel): View {
    const d = ch.group.dashboard;
    return ch.view ?? savedView(d.spec, opts.refreshMs(d.spec));
  }

  function viewOf(ch: Channel): ViewSummary {
    return viewSummary(resolvedView(ch), { live: ch.live, saved: ch.view === null });
  }

  /** The dashboard as the channel's poller runs it: the spec with the view's range, cadence and variables. */
  function asViewed(ch: Channel): LoadedDashboard {
    const d = ch.group.dashboard;
    // A range in the past is queried once: its poller is stopped after the first tick, and a cadence of a
    // day keeps a second from starting meanwhile.
    const refreshIntervalMs = ch.live ? (ch.view?.refreshMs ?? d.spec.refreshIntervalMs) : MAX_REFRESH_INTERVAL_MS;
    const saved = { time: d.spec.time, refreshIntervalMs: d.spec.refreshIntervalMs };
    if (!ch.view) return ch.live ? d : { ...d, spec: { ...d.spec, refreshIntervalMs }, saved };
    return { ...d, spec: { ...d.spec, time: { from: ch.view.from, to: ch.view.to }, refreshIntervalMs }, vars: ch.view.vars, saved };
  }

  function snapshotOf(ch: Channel): Buffer {
    ch.snapshot ??= encodeEvent("snapshot", {
      dashboard: summary(ch.group.dashboard),
      view: viewOf(ch),
      panels: [...ch.latest.values()],
    });
    return ch.snapshot;
  }

  function setGauge(g: Group) {
    let n = 0;
    for (const ch of g.channels.values()) n += ch.subscribers.size;
    opts.metrics.setSseSubscribers(g.dashboard.id, n);
  }

  function newChannel(group: Group, key: string, view: View | null): Channel {
    const ch = {
      group,
      key,
      view,
      live: !endsInPast(view ?? group.dashboard.spec.time, opts.now()),
      endTimer: null,
      subscribers: new Set<Subscriber>(),
      latest: new Map<string, PanelUpdate>(),
      snapshot: null,
      outbox: [],
      outboxTimer: null,
      fanout: null,
      lastWriteAt: opts.monotonic(),
    } as unknown as Channel;
    // Each view keeps its own panels' last results: an incremental tick splices into the view's own range.
    const incremental = opts.incremental
      ? createIncrementalPanels({ run: opts.runPanel, plan: opts.incremental.plan }, opts.incremental.options)
      : null;
    ch.poller = createPoller({
      current: () => asViewed(ch),
      runPanel: incremental?.run ?? opts.runPanel,
      limiter: opts.limiter,
      inFlight,
      runKey: key,
      refreshMs: opts.refreshMs,
      ...(opts.coalesce ? { grid: gridOf } : {}),
      timers: opts.timers,
      now: opts.now,
      monotonic: opts.monotonic,
      onPanel: (update) => {
        ch.latest.set(update.panelId, update);
        ch.snapshot = null;
        const delta = incremental?.deltaFor(update);
        ch.outbox.push(delta ? encodeEvent("panel-delta", delta) : encodeEvent("panel", update));
        if (ch.outboxTimer === null) ch.outboxTimer = opts.timers.setTimeout(() => flush(ch), COALESCE_MS);
      },
      onTick: (seconds, startedAt) => {
        flush(ch);
        opts.metrics.observePollerTick(ch.group.dashboard.id, seconds);
        if (ch.live) endIfPassed(ch, startedAt);
        if (!ch.live) settle(ch);
      },
      onFault: (err) =>
        opts.log.error("poller tick failed", { dashboard: ch.group.dashboard.id, error: err instanceof Error ? err.name : "error" }),
    });
    return ch;
  }

  /**
   * A live view whose range has a fixed end still ahead: at that end its poller ticks once more (without waiting
   * for its cadence), and that tick, which started at or after the end and so saw every row up to it, is its last
   * (endIfPassed). A delay beyond setTimeout's longest is re-armed when it fires.
   */
  function armEnd(ch: Channel) {
    if (ch.endTimer !== null) opts.timers.clearTimeout(ch.endTimer);
    ch.endTimer = null;
    const end = ch.live ? fixedEnd(resolvedView(ch)) : null;
    if (end === null) return;
    const delay = end - opts.now();
    ch.endTimer = opts.timers.setTimeout(
      () => {
        ch.endTimer = null;
        if (!channels.has(ch) || !ch.live) return;
        if (opts.now() < end) armEnd(ch);
        else ch.poller.tickNow();
      },
      Math.max(0, Math.min(delay, MAX_TIMER_MS)),
    );
  }

  /**
   * After a tick of a live view: when that tick started at or after the range's fixed end, it queried the whole
   * range once every row up to the end could be there, so the view stops being live: its viewers get
   * `event: view` with `live: false`, and its poller stops once the tick's runs are in (settle). Its results stay.
   */
  function endIfPassed(ch: Channel, startedAt: number) {
    const end = fixedEnd(resolvedView(ch));
    if (end === null || startedAt < end) return;
    ch.live = false;
    if (ch.endTimer !== null) opts.timers.clearTimeout(ch.endTimer);
    ch.endTimer = null;
    ch.snapshot = null;
    flush(ch);
    broadcast(ch, encodeEvent("view", viewOf(ch)));
  }

  /** A range in the past has had its tick: once its runs are in, its poller stops and its results are kept. */
  function settle(ch: Channel) {
    void ch.poller.idle().then(() => {
      if (ch.live || !channels.has(ch)) return;
      ch.poller.stop();
      flush(ch);
      opts.metrics.setPollersActive(countRunning());
    });
  }

  /** Writes the frames waiting in the outbox as one buffer to every subscriber. */
  function flush(ch: Channel) {
    if (ch.outboxTimer !== null) opts.timers.clearTimeout(ch.outboxTimer);
    ch.outboxTimer = null;
    if (ch.outbox.length === 0) return;
    const frames = ch.outbox.length === 1 ? ch.outbox[0] : Buffer.concat(ch.outbox);
    ch.outbox = [];
    broadcast(ch, frames);
  }

  /** Writes `frame` to every subscriber of the view: at once up to FANOUT_CHUNK of them, else chunk by chunk. */
  function broadcast(ch: Channel, frame: Buffer) {
    finishFanout(ch);
    ch.lastWriteAt = opts.monotonic();
    if (ch.subscribers.size <= FANOUT_CHUNK) {
      for (const sub of ch.subscribers) writeTo(sub, frame);
      return;
    }
    const f: Fanout = { frame, subs: [...ch.subscribers], next: 0 };
    ch.fanout = f;
    fanoutStep(ch, f);
  }

  /** Writes the next chunk of a fan-out and, while subscribers remain, queues the next step behind the writes' bookkeeping. */
  function fanoutStep(ch: Channel, f: Fanout) {
    if (ch.fanout !== f) return;
    const end = Math.min(f.subs.length, f.next + FANOUT_CHUNK);
    for (let i = f.next; i < end; i++) writeTo(f.subs[i]!, f.frame);
    f.next = end;
    if (end < f.subs.length) process.nextTick(fanoutStep, ch, f);
    else if (ch.fanout === f) ch.fanout = null;
  }

  /** Writes the rest of the view's fan-out in progress, if any, at once: before anything else is written to its subscribers. */
  function finishFanout(ch: Channel) {
    const f = ch.fanout;
    if (f === null) return;
    ch.fanout = null;
    for (let i = f.next; i < f.subs.length; i++) writeTo(f.subs[i]!, f.frame);
    f.next = f.subs.length;
  }

  function writeTo(sub: Subscriber, frame: Buffer) {
    // A subscriber that left since the fan-out began (closed, ended, dropped) is not written to.
    if (sub.left) return;
    if (!sub.sink.write(frame)) drop(sub, "backpressure");
  }

  function drop(sub: Subscriber, reason: string) {
    const id = sub.channel.group.dashboard.id;
    leave(sub);
    sub.sink.destroy();
    opts.log.warn("subscriber dropped", { dashboard: id, reason });
  }

  function leave(sub: Subscriber) {
    if (sub.left) return;
    sub.left = true;
    if (sub.expiresAt !== null) expiries.remove(sub, sub.expiresAt);
    sub.expiresAt = null;
    const ch = sub.channel;
    if (!ch.subscribers.delete(sub)) return;
    subscriberCount--;
    if (!channels.has(ch)) return;
    if (ch.subscribers.size === 0) stopChannel(ch);
    else setGauge(ch.group);
  }

  /** The last subscriber of a view left (or the dashboard is gone): stop its poller; the dashboard's last view drops its series. */
  function stopChannel(ch: Channel) {
    ch.poller.stop();
    if (ch.endTimer !== null) opts.timers.clearTimeout(ch.endTimer);
    ch.endTimer = null;
    if (ch.outboxTimer !== null) opts.timers.clearTimeout(ch.outboxTimer);
    ch.outboxTimer = null;
    if (ch.poller.busy) {
      stopping.add(ch.poller);
      void ch.poller.idle().then(() => stopping.delete(ch.poller));
    }
    channels.delete(ch);
    const g = ch.group;
    g.channels.delete(ch.key);
    if (g.channels.size === 0) {
      if (groups.get(g.dashboard.id) === g) groups.delete(g.dashboard.id);
      opts.metrics.dropDashboard(g.dashboard.id);
    } else setGauge(g);
    opts.metrics.setPollersActive(countRunning());
  }

  function countRunning(): number {
    let n = 0;
    for (const ch of channels) if (ch.poller.running) n++;
    return n;
  }

  /** The key of a view in its group: the saved view (or one equal to it) has the fixed key of the dashboard. */
  function keyOf(d: LoadedDashboard, view: View | undefined): { key: string; view: View | null } {
    const saved = JSON.stringify([d.id]);
    if (!view) return { key: saved, view: null };
    const k = viewKey(d.id, view);
    return k === viewKey(d.id, savedView(d.spec, opts.refreshMs(d.spec))) ? { key: saved, view: null } : { key: k, view };
  }

  /** Null when the view may be opened; else the 429 that refuses it (the view cap is full). */
  function refusal(d: LoadedDashboard, view: View | undefined): AppError | null {
    const g = groups.get(d.id);
    if (!g) return null;
    const { key, view: v } = keyOf(g.dashboard, view);
    if (v === null || g.channels.has(key)) return null;
    let others = 0;
    for (const ch of g.channels.values()) if (ch.view !== null) others++;
    if (others < maxViews) return null;
    return new AppError(
      "too_many_views",
      `This dashboard already has ${maxViews} views open on this instance besides its saved one (MAX_VIEWS_PER_DASHBOARD); open the saved view, or try again later.`,
      {},
      { "retry-after": String(TOO_MANY_VIEWS_RETRY_S) },
    );
  }

  /** Ends the stream with `event: session_expired` once `expiresAt` (epoch ms) has passed. */
  function armExpiry(sub: Subscriber, expiresAt: number) {
    if (expiresAt <= opts.now()) {
      endSession(sub, sessionExpiredFrame(expiresAt));
      return;
    }
    sub.expiresAt = expiresAt;
    expiries.add(sub, expiresAt);
  }

  function endSession(sub: Subscriber, frame: Buffer) {
    finishFanout(sub.channel);
    leave(sub);
    void sub.sink.end(frame);
  }

  function panelKey(d: LoadedDashboard, panelId: string): string | undefined {
    const p = d.spec.panels.find((x) => x.id === panelId);
    return p ? `${p.sourceId}\u0000${p.sql}` : undefined;
  }

  return {
    /** Null when `view` (absent: the saved one) may be opened now; else the 429 `too_many_views` refusing it. */
    refusal,

    /**
     * Attaches a subscriber to a view (absent: the saved one): sends the snapshot of the latest results
     * at once (no new query) and starts the view's poller when it is the first. Throws the 429 of
     * `refusal` when the dashboard's view cap is full. With `expiresAt` (the session's `exp`, epoch ms)
     * the stream gets `event: session_expired` and is closed when that time passes; with `session`,
     * also when endRevoked finds that session revoked.
     */
    subscribe(dashboard: LoadedDashboard, sink: Sink, session: { expiresAt?: number; session?: StreamSession } = {}, view?: View): void {
      const refused = refusal(dashboard, view);
      if (refused) throw refused;
      let g = groups.get(dashboard.id);
      if (!g) {
        g = { dashboard, channels: new Map() };
        groups.set(dashboard.id, g);
      }
      const { key, view: v } = keyOf(g.dashboard, view);
      let ch = g.channels.get(key);
      const first = !ch;
      if (!ch) {
        ch = newChannel(g, key, v);
        g.channels.set(key, ch);
        channels.add(ch);
      }
      const sub: Subscriber = { sink, channel: ch, left: false, expiresAt: null, session: session.session };
      ch.subscribers.add(sub);
      subscriberCount++;
      sink.onClose(() => leave(sub));
      if (sub.left) return;
      if (!sink.write(snapshotOf(ch))) {
        drop(sub, "backpressure");
        return;
      }
      setGauge(g);
      if (first) {
        ch.poller.start();
        armEnd(ch);
        opts.metrics.setPollersActive(countRunning());
      }
      if (session.expiresAt !== undefined) armExpiry(sub, session.expiresAt);
    },

    /**
     * Ends, with `event: session_expired` (reason `revoked`), every stream whose session `isRevoked`
     * says is revoked; called whenever the process learns of revocations. Returns how many ended.
     */
    endRevoked(isRevoked: (session: RevocableSession) => boolean): number {
      let ended = 0;
      for (const ch of [...channels]) {
        for (const sub of [...ch.subscribers]) {
          if (sub.session && isRevoked(sub.session)) {
            endSession(sub, sessionExpiredFrame(sub.session.expiresAt, "revoked"));
            ended++;
          }
        }
      }
      return ended;
    },

    /**
     * Ends every stream `frameFor` gives a terminal frame for, judged by its dashboard's workspace and the session it
     * was opened with (stream-host/access.ts: people who lost their role in a workspace). Returns how many ended.
     */
    endWhere(frameFor: (stream: { workspaceId: string; session?: StreamSession }) => Buffer | null): number {
      let ended = 0;
      for (const ch of [...channels]) {
        for (const sub of [...ch.subscribers]) {
          const frame = frameFor({ workspaceId: ch.group.dashboard.workspaceId, session: sub.session });
          if (!frame) continue;
          endSession(sub, frame);
          ended++;
        }
      }
      return ended;
    },

    /** The dashboard as the running views know it (kept current by change notifications). */
    current(id: string): LoadedDashboard | undefined {
      return groups.get(id)?.dashboard;
    },

    /**
     * A changed spec: every view's subscribers get `event: dashboard`, and each view runs the new spec
     * at once (a range in the past is queried once more).
     */
    applyDashboard(dashboard: LoadedDashboard): void {
      const g = groups.get(dashboard.id);
      if (!g || g.dashboard.version === dashboard.version) return;
      const before = g.dashboard;
      g.dashboard = dashboard;
      for (const ch of g.channels.values()) {
        // The saved view follows the spec's range: an end moved into the past (or back to now) changes whether it is live.
        ch.live = !endsInPast(resolvedView(ch), opts.now());
        armEnd(ch);
        // A panel keeps its last result only while it still runs the same query.
        for (const panelId of [...ch.latest.keys()]) {
          const key = panelKey(dashboard, panelId);
          if (key === undefined || key !== panelKey(before, panelId)) ch.latest.delete(panelId);
        }
        ch.snapshot = null;
        flush(ch);
        broadcast(ch, encodeEvent("dashboard", { ...summary(dashboard), view: viewOf(ch) }));
        if (ch.poller.running) ch.poller.tickNow();
        else ch.poller.start();
      }
      opts.metrics.setPollersActive(countRunning());
    },

    /** The dashboard was deleted: tell every view's subscribers, close their streams and stop the pollers. */
    removeDashboard(id: string): void {
      const g = groups.get(id);
      if (!g) return;
      const frame = encodeEvent("dashboard", { id, deleted: true });
      for (const ch of [...g.channels.values()]) {
        finishFanout(ch);
        stopChannel(ch);
        for (const sub of [...ch.subscribers]) {
          leave(sub);
          void sub.sink.end(frame);
        }
      }
    },

    /**
     * Writes the comment heartbeat to the subscribers of every view that wrote nothing in the last `quietMs` (0: to
     * every view); one that stopped draining is dropped. A view whose ticks write to its sockets needs none: its frames
     * keep proxies from timing the stream out and surface dead sockets, and a heartbeat loop over every socket in
     * the middle of a tick's would only delay that tick's frames.
     */
    heartbeat(quietMs = 0): void {
      const now = opts.monotonic();
      for (const ch of [...channels]) {
        if (now - ch.lastWriteAt < quietMs) continue;
        flush(ch);
        broadcast(ch, HEARTBEAT_FRAME);
      }
    },

    /** Drain step 2: stops every poller synchronously so no new metric query starts. */
    stopPollers(): void {
      for (const ch of channels) {
        ch.poller.stop();
        if (ch.poller.busy) {
          stopping.add(ch.poller);
          void ch.poller.idle().then(() => stopping.delete(ch.poller));
        }
      }
      opts.metrics.setPollersActive(0);
    },

    /**
     * Drain step 3: ends every stream with its own terminal frame. Resolves when every frame has
     * been handed to the socket (or the socket closed).
     */
    closeAll(frameFor: () => Uint8Array): Promise<void> {
      const ends: Promise<void>[] = [];
      for (const ch of [...channels]) {
        // Results already in go out before the terminal frame.
        finishFanout(ch);
        const pending = ch.outbox.length > 0 ? Buffer.concat(ch.outbox) : null;
        ch.outbox = [];
        stopChannel(ch);
        for (const sub of [...ch.subscribers]) {
          leave(sub);
          if (pending) sub.sink.write(pending);
          ends.push(sub.sink.end(frameFor()));
        }
      }
      return Promise.all(ends).then(() => {});
    },

    /** Resolves when no poller has a tick or a panel run (and so a metric query of its own) in flight. */
    async idle(): Promise<void> {
      await Promise.all([...[...channels].map((ch) => ch.poller.idle()), ...[...stopping].map((p) => p.idle())]);
    },

    /** Dashboards with subscribers on this instance. */
    activeIds(): string[] {
      return [...groups.keys()];
    },

    get subscribers(): number {
      return subscriberCount;
    },
    get dashboards(): number {
      return groups.size;
    },
    /** Subscribers of one dashboard on this instance, over all its views. */
    subscribersOf(id: string): number {
      let n = 0;
      for (const ch of groups.get(id)?.channels.values() ?? []) n += ch.subscribers.size;
      return n;
    },
    /** Views of one dashboard open on this instance (the saved one included). */
    viewsOf(id: string): number {
      return groups.get(id)?.channels.size ?? 0;
    },
    /** The poller of a dashboard's saved view, else of its first view (tests and the bench). */
    pollerOf(id: string): Poller | undefined {
      const g = groups.get(id);
      if (!g) return undefined;
      return (g.channels.get(JSON.stringify([id])) ?? g.channels.values().next().value)?.poller;
    },
    /** The pollers of every view of a dashboard (tests and the bench). */
    pollersOf(id: string): Poller[] {
      return [...(groups.get(id)?.channels.values() ?? [])].map((ch) => ch.poller);
    },
  };
}

export type Hub = ReturnType<typeof createHub>;
