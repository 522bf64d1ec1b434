import type { RevocableSession } from "../lib/auth/revocations.ts";
import type { DashboardSpec } from "../lib/dashboards/spec.ts";
import type { Logger } from "../lib/log/logger.ts";
import type { Metrics } from "../lib/metrics/metrics.ts";
import type { KeyedLimiter } from "./limiter.ts";
import { type LoadedDashboard, type PanelRuns, type PanelUpdate, type Poller, type RunPanel, createPoller } from "./poller.ts";
import { HEARTBEAT_FRAME, type Sink, encodeEvent, sessionExpiredFrame } from "./sse.ts";
import type { Timers } from "../lib/lifecycle/timers.ts";

/** What subscribers learn about a dashboard: layout and cadence, never the panels' SQL. */
export interface DashboardSummary {
  id: string;
  version: number;
  title: string;
  refreshIntervalMs: number;
  time: DashboardSpec["time"];
  panels: { id: string; title: string; type: string; unit?: string; options?: Record<string, unknown> }[];
}

/** The session a stream was opened with: revocations and role changes are matched against it. */
export type StreamSession = RevocableSession & { user: { groups: readonly string[]; revokedWorkspaces?: readonly string[] } };

interface Subscriber {
  sink: Sink;
  channel: Channel;
  left: boolean;
  /** The timer that ends the stream when its session expires. */
  expiry: unknown;
  /** The session the stream was opened with, checked again whenever sessions are revoked. */
  session?: StreamSession;
}

/** setTimeout's longest delay; a later expiry is re-armed when it fires. */
const MAX_TIMER_MS = 2_147_483_647;

interface Channel {
  dashboard: LoadedDashboard;
  subscribers: Set<Subscriber>;
  /** The latest update of every panel, in spec order of first arrival; the snapshot is built from it. */
  latest: Map<string, PanelUpdate>;
  /** The serialized snapshot, built once and reused until a panel or the spec changes. */
  snapshot: Buffer | null;
  poller: Poller;
  /** Panel frames of the running tick not yet written; sent together in one write per subscriber. */
  outbox: Buffer[];
  outboxTimer: unknown;
}

/**
 * Longest a panel frame waits for other panels' frames. Writing to a socket costs a system call however
 * small the frame, so a tick's frames go out in one write per subscriber when it ends; a slow panel
 * holds the others for at most this long, and a frame of a run that outlived its tick waits no longer.
 */
export const COALESCE_MS = 250;

export interface HubOptions {
  metrics: Metrics;
  runPanel: RunPanel;
  limiter: KeyedLimiter;
  refreshMs(spec: DashboardSpec): number;
  timers: Timers;
  now(): number;
  monotonic(): number;
  log: Logger;
}

/**
 * Every dashboard with subscribers on this instance: one channel each, holding the subscribers,
 * the latest results and the one poller they all share. Each frame is serialized once and the
 * same buffer is written to every subscriber.
 */
export function createHub(opts: HubOptions) {
  const channels = new Map<string, Channel>();
  /** Pollers that were stopped while a tick still ran; drain awaits them. */
  const stopping = new Set<Poller>();
  /**
   * Panel runs in flight across every poller, so a dashboard reopened while its stopped poller's run of a
   * panel (say on a hung source) is still out waits for that run instead of starting a second.
   */
  const inFlight: PanelRuns = new Set();
  let subscriberCount = 0;

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
      })),
    };
  }

  function snapshotOf(ch: Channel): Buffer {
    ch.snapshot ??= encodeEvent("snapshot", { dashboard: summary(ch.dashboard), panels: [...ch.latest.values()] });
    return ch.snapshot;
  }

  function setGauge(ch: Channel) {
    opts.metrics.setSseSubscribers(ch.dashboard.id, ch.subscribers.size);
  }

  function newChannel(dashboard: LoadedDashboard): Channel {
    const ch = {
      dashboard,
      subscribers: new Set<Subscriber>(),
      latest: new Map<string, PanelUpdate>(),
      snapshot: null,
      outbox: [],
      outboxTimer: null,
    } as unknown as Channel;
    ch.poller = createPoller({
      current: () => ch.dashboard,
      runPanel: opts.runPanel,
      limiter: opts.limiter,
      inFlight,
      refreshMs: opts.refreshMs,
      timers: opts.timers,
      now: opts.now,
      monotonic: opts.monotonic,
      onPanel: (update) => {
        ch.latest.set(update.panelId, update);
        ch.snapshot = null;
        ch.outbox.push(encodeEvent("panel", update));
        if (ch.outboxTimer === null) ch.outboxTimer = opts.timers.setTimeout(() => flush(ch), COALESCE_MS);
      },
      onTick: (seconds) => {
        flush(ch);
        opts.metrics.observePollerTick(ch.dashboard.id, seconds);
      },
      onFault: (err) =>
        opts.log.error("poller tick failed", { dashboard: ch.dashboard.id, error: err instanceof Error ? err.name : "error" }),
    });
    return ch;
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

  function broadcast(ch: Channel, frame: Buffer) {
    for (const sub of ch.subscribers) {
      if (!sub.sink.write(frame)) drop(sub, "backpressure");
    }
  }

  function drop(sub: Subscriber, reason: string) {
    const id = sub.channel.dashboard.id;
    leave(sub);
    sub.sink.destroy();
    opts.log.warn("subscriber dropped", { dashboard: id, reason });
  }

  function leave(sub: Subscriber) {
    if (sub.left) return;
    sub.left = true;
    if (sub.expiry !== null) opts.timers.clearTimeout(sub.expiry);
    sub.expiry = null;
    const ch = sub.channel;
    if (!ch.subscribers.delete(sub)) return;
    subscriberCount--;
    if (channels.get(ch.dashboard.id) !== ch) return;
    if (ch.subscribers.size === 0) stopChannel(ch);
    else setGauge(ch);
  }

  /** The last subscriber left (or the dashboard is gone): stop its poller and drop its series. */
  function stopChannel(ch: Channel) {
    ch.poller.stop();
    if (ch.outboxTimer !== null) opts.timers.clearTimeout(ch.outboxTimer);
    ch.outboxTimer = null;
    if (ch.poller.busy) {
      stopping.add(ch.poller);
      void ch.poller.idle().then(() => stopping.delete(ch.poller));
    }
    channels.delete(ch.dashboard.id);
    opts.metrics.dropDashboard(ch.dashboard.id);
    opts.metrics.setPollersActive(countRunning());
  }

  function countRunning(): number {
    let n = 0;
    for (const ch of channels.values()) if (ch.poller.running) n++;
    return n;
  }

  /** Ends the stream with `event: session_expired` once `expiresAt` (epoch ms) has passed. */
  function armExpiry(sub: Subscriber, expiresAt: number) {
    const delay = expiresAt - opts.now();
    if (delay <= 0) {
      endSession(sub, sessionExpiredFrame(expiresAt));
      return;
    }
    sub.expiry = opts.timers.setTimeout(() => armExpiry(sub, expiresAt), Math.min(delay, MAX_TIMER_MS));
  }

  function endSession(sub: Subscriber, frame: Buffer) {
    leave(sub);
    void sub.sink.end(frame);
  }

  function panelKey(d: LoadedDashboard, panelId: string): string | undefined {
    const p = d.spec.panels.find((x) => x.id === panelId);
    return p ? `${p.sourceId}\u0000${p.sql}` : undefined;
  }

  return {
    /**
     * Attaches a subscriber: sends the snapshot of the latest results at once (no new query) and
     * starts the dashboard's poller when it is the first. With `expiresAt` (the session's `exp`, epoch
     * ms) the stream gets `event: session_expired` and is closed when that time passes; with
     * `session`, also when endRevoked finds that session revoked.
     */
    subscribe(dashboard: LoadedDashboard, sink: Sink, session: { expiresAt?: number; session?: StreamSession } = {}): void {
      let ch = channels.get(dashboard.id);
      const first = !ch;
      if (!ch) {
        ch = newChannel(dashboard);
        channels.set(dashboard.id, ch);
      }
      const sub: Subscriber = { sink, channel: ch, left: false, expiry: null, session: session.session };
      ch.subscribers.add(sub);
      subscriberCount++;
      sink.onClose(() => leave(sub));
      if (sub.left) return;
      if (!sink.write(snapshotOf(ch))) {
        drop(sub, "backpressure");
        return;
      }
      setGauge(ch);
      if (first) {
        ch.poller.start();
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
      for (const ch of [...channels.values()]) {
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
      for (const ch of [...channels.values()]) {
        for (const sub of [...ch.subscribers]) {
          const frame = frameFor({ workspaceId: ch.dashboard.workspaceId, session: sub.session });
          if (!frame) continue;
          endSession(sub, frame);
          ended++;
        }
      }
      return ended;
    },

    /** The dashboard as the running channel knows it (kept current by change notifications). */
    current(id: string): LoadedDashboard | undefined {
      return channels.get(id)?.dashboard;
    },

    /** A changed spec: subscribers get `event: dashboard`, the poller runs the new spec at once. */
    applyDashboard(dashboard: LoadedDashboard): void {
      const ch = channels.get(dashboard.id);
      if (!ch || ch.dashboard.version === dashboard.version) return;
      const before = ch.dashboard;
      ch.dashboard = dashboard;
      // A panel keeps its last result only while it still runs the same query.
      for (const panelId of [...ch.latest.keys()]) {
        const key = panelKey(dashboard, panelId);
        if (key === undefined || key !== panelKey(before, panelId)) ch.latest.delete(panelId);
      }
      ch.snapshot = null;
      flush(ch);
      broadcast(ch, encodeEvent("dashboard", summary(dashboard)));
      ch.poller.tickNow();
    },

    /** The dashboard was deleted: tell subscribers, close their streams and stop its poller. */
    removeDashboard(id: string): void {
      const ch = channels.get(id);
      if (!ch) return;
      const frame = encodeEvent("dashboard", { id, deleted: true });
      stopChannel(ch);
      for (const sub of [...ch.subscribers]) {
        leave(sub);
        void sub.sink.end(frame);
      }
    },

    /** Writes the comment heartbeat to every subscriber; one that stopped draining is dropped. */
    heartbeat(): void {
      for (const ch of [...channels.values()]) {
        flush(ch);
        broadcast(ch, HEARTBEAT_FRAME);
      }
    },

    /** Drain step 2: stops every poller synchronously so no new metric query starts. */
    stopPollers(): void {
      for (const ch of channels.values()) {
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
      for (const ch of [...channels.values()]) {
        // Results already in go out before the terminal frame.
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
      await Promise.all([...[...channels.values()].map((ch) => ch.poller.idle()), ...[...stopping].map((p) => p.idle())]);
    },

    /** Dashboards with subscribers on this instance. */
    activeIds(): string[] {
      return [...channels.keys()];
    },

    get subscribers(): number {
      return subscriberCount;
    },
    get dashboards(): number {
      return channels.size;
    },
    /** Subscribers of one dashboard on this instance. */
    subscribersOf(id: string): number {
      return channels.get(id)?.subscribers.size ?? 0;
    },
    /** The poller of a dashboard with subscribers (tests and the bench). */
    pollerOf(id: string): Poller | undefined {
      return channels.get(id)?.poller;
    },
  };
}

export type Hub = ReturnType<typeof createHub>;
