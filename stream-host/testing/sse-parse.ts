/** One parsed SSE block: a dispatched event, a comment, or a retry hint (fields of one frame together). */
export interface SseFrame {
  event?: string;
  data?: string;
  retry?: number;
  comment?: string;
}

/** Incremental SSE parser for tests and the bench: feed text chunks, get complete frames back. */
export function createSseParser() {
  let buffer = "";
  return {
    push(chunk: string): SseFrame[] {
      buffer += chunk;
      const frames: SseFrame[] = [];
      let idx = buffer.indexOf("\n\n");
      while (idx !== -1) {
        const block = buffer.slice(0, idx);
        buffer = buffer.slice(idx + 2);
        const frame: SseFrame = {};
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) frame.comment = line.slice(1).trim();
          else {
            const colon = line.indexOf(":");
            const field = colon === -1 ? line : line.slice(0, colon);
            const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "event") frame.event = value;
            else if (field === "data") frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
            else if (field === "retry") frame.retry = Number(value);
          }
        }
        frames.push(frame);
        idx = buffer.indexOf("\n\n");
      }
      return frames;
    },
  };
}

/** Reads frames from a web response body until `until` says stop (or the stream ends). */
export function webStreamReader(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = createSseParser();
  const queue: SseFrame[] = [];
  let ended = false;
  return {
    /** The next frame that is not a comment unless `comments`; null when the stream ended first. */
    async next(opts: { comments?: boolean } = {}): Promise<SseFrame | null> {
      for (;;) {
        const i = queue.findIndex((f) => opts.comments || f.comment === undefined);
        if (i !== -1) return queue.splice(0, i + 1).pop()!;
        if (ended) return null;
        const { value, done } = await reader.read();
        if (done) ended = true;
        else queue.push(...parser.push(decoder.decode(value, { stream: true })));
      }
    },
    async cancel() {
      await reader.cancel();
    },
    get ended() {
      return ended;
    },
  };
}
