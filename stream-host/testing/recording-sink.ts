import type { Sink } from "../sse.ts";

/**
 * A subscriber's stream for hub and poller tests: records, as text, every frame it is sent until it ends (the
 * terminal frame included), and counts the writes that came after its end. `onWrite` sees each recorded write.
 */
export function recordingSink(opts: { onWrite?: (frame: string) => void } = {}) {
  const frames: string[] = [];
  let ended = false;
  let writesAfterEnd = 0;
  const listeners: (() => void)[] = [];
  const close = () => {
    ended = true;
    for (const l of listeners.splice(0)) l();
  };
  const sink: Sink = {
    write(frame) {
      if (ended) {
        writesAfterEnd++;
        return true;
      }
      const text = Buffer.from(frame).toString();
      frames.push(text);
      opts.onWrite?.(text);
      return true;
    },
    async end(frame) {
      if (frame) frames.push(Buffer.from(frame).toString());
      close();
    },
    destroy: close,
    onClose: (l) => void listeners.push(l),
    get closed() {
      return ended;
    },
  };
  return { sink, frames, close, writesAfterAnEnd: () => writesAfterEnd };
}
