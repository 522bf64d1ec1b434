import { AppError } from "../lib/http/errors.ts";

/**
 * Streams open per session on this instance, at most `max` each (STREAMS_PER_SESSION_MAX): one session cannot hold
 * thousands of sockets, file descriptors and subscriber buffers on a stream host. A browser opens one per tab.
 */
export interface SessionStreams {
  /** Counts one more stream of `sessionId` and returns its release (idempotent), or throws 429 `rate_limited`. */
  open(sessionId: string): () => void;
  /** Streams `sessionId` holds open. */
  count(sessionId: string): number;
}

export function createSessionStreams(max: number): SessionStreams {
  const open = new Map<string, number>();
  return {
    open(sessionId) {
      const n = open.get(sessionId) ?? 0;
      if (n >= max) {
        throw new AppError(
          "rate_limited",
          `This session already has ${max} live dashboards open (STREAMS_PER_SESSION_MAX); close one and try again.`,
          { retryAfterSeconds: 5 },
          { "Retry-After": "5" },
        );
      }
      open.set(sessionId, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (open.get(sessionId) ?? 1) - 1;
        if (left <= 0) open.delete(sessionId);
        else open.set(sessionId, left);
      };
    },
    count: (sessionId) => open.get(sessionId) ?? 0,
  };
}
