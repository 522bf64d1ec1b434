import type { PanelUpdate, SplitSnapshot } from "../../lib/live/frames.ts";

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
): { flush(): void } {
  const index = new Map(split.ids.map((id, i) => [id, i]));
  const named = new Set(order);
  const sequence = [...order.filter((id) => index.has(id)), ...split.ids.filter((id) => !named.has(id))];
  const done = { flush() {} };
  if (sequence.length === 0) return done;
  const whole = () => {
    for (const u of split.whole() ?? []) opts.apply(u);
  };
  const first = split.panel(index.get(sequence[0]!)!);
  if (!first) {
    whole();
    return done;
  }
  opts.apply(first);
  if (sequence.length === 1) return done;
  let pending: (() => void) | null = () => {
    const rest: PanelUpdate[] = [];
    for (const id of sequence.slice(1)) {
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
