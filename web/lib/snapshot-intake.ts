import { type PanelUpdate, readSnapshotStart, type SnapshotFrame, type SplitSnapshot } from "../../lib/live/frames.ts";

/**
 * Takes in a split snapshot's panel updates (lib/live/frames.ts, splitSnapshot) so that the first chart is drawn before
 * the other panels' results are parsed: the first panel of `order` (the panels as laid out: the one drawn first) that
 * has an update is parsed and applied at once, the others in `later` (after the frame that draws the first), in
 * `order`, then any the order does not name. When a piece does not parse, every panel is taken from the whole parse.
 * `flush()` takes the others at once if they are still waiting: a frame that follows the snapshot (a panel-delta
 * applies to the snapshot's result) or a reader of every panel's data must find them all taken.
 */
export function takeSnapshotPanels(
  split: SplitSnapshot,
  order: readonly string[],
  opts: { apply(u: PanelUpdate): void; later(fn: () => void): void },
  /** Panels already taken from the event while it arrived (takeFirstPanelEarly): not taken again; the others later. */
  taken: ReadonlySet<string> = new Set(),
): { flush(): void } {
  const index = new Map(split.ids.map((id, i) => [id, i]));
  const named = new Set(order);
  const sequence = [...order.filter((id) => index.has(id)), ...split.ids.filter((id) => !named.has(id))].filter((id) => !taken.has(id));
  const done = { flush() {} };
  if (sequence.length === 0) return done;
  const whole = () => {
    for (const u of split.whole() ?? []) if (!taken.has(u.panelId)) opts.apply(u);
  };
  // The first chart's panel is taken now, unless it was taken while the event arrived.
  const now = taken.size === 0 ? 1 : 0;
  if (now === 1) {
    const first = split.panel(index.get(sequence[0]!)!);
    if (!first) {
      whole();
      return done;
    }
    opts.apply(first);
    if (sequence.length === 1) return done;
  }
  let pending: (() => void) | null = () => {
    const rest: PanelUpdate[] = [];
    for (const id of sequence.slice(now)) {
      const u = split.panel(index.get(id)!);
      if (!u) {
        whole();
        return;
      }
      rest.push(u);
    }
    for (const u of rest) opts.apply(u);
  };
  const flush = () => {
    const take = pending;
    pending = null;
    take?.();
  };
  opts.later(flush);
  return { flush };
}

/** How many chunks of a snapshot event are read for its first panel before it is left to the whole event. */
export const MAX_EARLY_READS = 16;

/**
 * Reads a snapshot event while it arrives (the stream client's onPartial) and takes the first panel in layout order as
 * soon as its update is complete, before the rest of the event (megabytes for a large dashboard) has arrived: the
 * first chart is drawn from the first bytes. `head` gets the snapshot's dashboard and view first (once: the page lays
 * out its panels from it, which gives `order`). When the whole event is delivered, `finish()` says which panels were
 * taken (for takeSnapshotPanels) and gets ready for the next event; `reset()` forgets an event that will not end (the
 * connection dropped). Only the first panel is taken early: the data is read again on each chunk until then, and
 * not at all after it.
 */
export function createEarlySnapshotIntake(opts: {
  head(head: Omit<SnapshotFrame, "panels">): void;
  order(): readonly string[];
  apply(u: PanelUpdate): void;
}): {
  /** Reads the event so far; true when it took the first panel now (the page will draw it). */
  partial(event: string, data: () => string): boolean;
  finish(): ReadonlySet<string>;
  reset(): void;
} {
  let headTaken = false;
  let taken = new Set<string>();
  /** Whether this event is settled: its first panel taken, or not to be taken early (a piece did not parse). */
  let settled = false;
  let reads = 0;
  const reset = () => {
    headTaken = false;
    taken = new Set();
    settled = false;
    reads = 0;
  };
  return {
    partial(event, data) {
      if (event !== "snapshot" || settled) return false;
      // Each read scans all that has arrived: a first panel that is late in the event (or has no update in it) is
      // left to the whole event rather than read again on every chunk.
      if (++reads > MAX_EARLY_READS) {
        settled = true;
        return false;
      }
      const start = readSnapshotStart(data());
      if (!start) return false;
      if (!headTaken) {
        headTaken = true;
        opts.head(start.head);
      }
      const first = opts.order()[0];
      const i = first === undefined ? -1 : start.ids.indexOf(first);
      if (i === -1) return false;
      settled = true;
      const u = start.panel(i);
      if (!u) return false;
      taken.add(u.panelId);
      opts.apply(u);
      return true;
    },
    finish() {
      const done = taken;
      reset();
      return done;
    },
    reset,
  };
}

/** Runs `fn` once the next frame is painted: a task posted from an animation-frame callback. */
export function afterNextPaint(fn: () => void): void {
  requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      fn();
    };
    channel.port2.postMessage(null);
  });
}
