/** One thing an SSE stream said, in order: a dispatched event, a `retry:` hint, or a comment (heartbeat). */
export type SseMessage =
  | { kind: "event"; event: string; data: string; id?: string }
  | { kind: "retry"; ms: number }
  | { kind: "comment"; text: string };

/**
 * An incremental parser for the text/event-stream format (WHATWG HTML "server-sent events"): chunks
 * may split anywhere, including between the CR and LF of a line ending. Events without data are not
 * dispatched, the event name defaults to "message", one space after the colon is dropped, and
 * `retry:` is honoured only when it is all digits. Pure, so it runs under vitest in node.
 */
export function createSseParser() {
  /** The pieces of a line not ended yet (no CR or LF in them). */
  let partial: string[] = [];
  /** The previous chunk ended with CR: a leading LF of the next one belongs to that line ending. */
  let pendingCr = false;
  let data: string[] = [];
  let event = "";
  let id: string | undefined;
  let sawData = false;

  function line(text: string, out: SseMessage[]): void {
    if (text === "") {
      if (sawData) {
        out.push({ kind: "event", event: event || "message", data: data.join("\n"), ...(id !== undefined ? { id } : {}) });
      }
      data = [];
      event = "";
      sawData = false;
      return;
    }
    if (text.startsWith(":")) {
      out.push({ kind: "comment", text: text.slice(1).replace(/^ /, "") });
      return;
    }
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        data.push(value);
        sawData = true;
        break;
      case "event":
        event = value;
        break;
      case "id":
        if (!value.includes("\0")) id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) out.push({ kind: "retry", ms: Number(value) });
        break;
      default:
        break; // unknown fields are ignored
    }
  }

  return {
    /**
     * Feeds decoded text; returns what became complete, in stream order. Linear in the text fed: a line that spans
     * many chunks (a snapshot of megabytes on one `data:` line) is kept as its pieces and joined once, when it ends,
     * and each chunk is scanned once.
     */
    feed(chunk: string): SseMessage[] {
      const out: SseMessage[] = [];
      let text = chunk;
      if (pendingCr && text.startsWith("\n")) text = text.slice(1);
      pendingCr = false;
      let start = 0;
      let lf = text.indexOf("\n");
      let cr = text.indexOf("\r");
      while (lf !== -1 || cr !== -1) {
        let i = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
        let piece = text.slice(start, i);
        if (partial.length > 0) {
          partial.push(piece);
          piece = partial.join("");
          partial = [];
        }
        line(piece, out);
        if (i === cr) {
          if (i + 1 === text.length) pendingCr = true;
          else if (text.charCodeAt(i + 1) === 10) i++;
        }
        start = i + 1;
        if (lf !== -1 && lf < start) lf = text.indexOf("\n", start);
        if (cr !== -1 && cr < start) cr = text.indexOf("\r", start);
      }
      if (start < text.length) partial.push(start === 0 ? text : text.slice(start));
      return out;
    },
    /**
     * The event being read, when it has data so far: its name and a function giving its data up to the last byte
     * fed (the line in progress included), which a reader may use before the event ends (a snapshot of megabytes on
     * one line: its first panels are complete long before the rest arrives). Null when no data field has started.
     * `data()` joins the pieces received so far once per call: a caller stops calling it once it has what it needs.
     */
    pending(): { event: string; data(): string } | null {
      // The line's field name may span pieces: they are joined when the first is shorter than "data:".
      if (partial.length > 1 && partial[0]!.length < 5) partial = [partial.join("")];
      const inDataLine = partial.length > 0 && /^data(:|$)/.test(partial[0]!.slice(0, 5));
      if (!sawData && !inDataLine) return null;
      return {
        event: event || "message",
        data() {
          if (!inDataLine) return data.join("\n");
          if (partial.length > 1) partial = [partial.join("")];
          let value = partial[0]!.slice(5);
          if (value.startsWith(" ")) value = value.slice(1);
          return sawData ? `${data.join("\n")}\n${value}` : value;
        },
      };
    },
    /** Forgets a partial event, e.g. when the connection dropped mid-frame. */
    reset(): void {
      partial = [];
      pendingCr = false;
      data = [];
      event = "";
      sawData = false;
    },
    /** The last event id seen (for Last-Event-ID on reconnect). */
    get lastEventId(): string | undefined {
      return id;
    },
  };
}

export type SseParser = ReturnType<typeof createSseParser>;
