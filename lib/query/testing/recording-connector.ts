// Test-only: a source connector that records where each connection was asked to go. Only addresses the test lets
// through are really connected (the loopback test server); every other attempt is refused or held without a packet.
import { Socket } from "node:net";
import type { SourceConnector } from "../pools.ts";

export interface ConnectAttempt {
  host: string;
  port: number;
}

export interface RecordingConnector {
  connector: SourceConnector;
  /** Every connect the runner asked for, in order (passed through or not). */
  attempts: ConnectAttempt[];
  /** Ends every held attempt with ECONNRESET (its connect then fails). */
  releaseHeld(): void;
  /** Attempts currently held open. */
  held(): number;
  /** Resolves once `n` attempts have been recorded. */
  attempted(n: number): Promise<void>;
}

/**
 * `passThrough` decides which attempts really connect; the others are refused at once (ECONNREFUSED, as a closed port
 * would) or, with `hold: true`, left pending until releaseHeld() (as a server that accepts and never answers).
 */
export function createRecordingConnector(opts: { passThrough?: (a: ConnectAttempt) => boolean; hold?: boolean } = {}): RecordingConnector {
  const attempts: ConnectAttempt[] = [];
  const held = new Set<Socket>();
  const waiters: { n: number; resolve: () => void }[] = [];
  const record = (a: ConnectAttempt) => {
    attempts.push(a);
    for (const w of waiters.filter((w) => attempts.length >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };

  class RecordingSocket extends Socket {
    override connect(...args: unknown[]): this {
      const [port, host] = args as [number, string];
      const attempt = { host, port };
      record(attempt);
      if (opts.passThrough?.(attempt)) return super.connect(port, host);
      if (opts.hold) {
        held.add(this);
        this.once("close", () => held.delete(this));
        return this;
      }
      process.nextTick(() => this.destroy(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })));
      return this;
    }
  }

  return {
    connector: () => new RecordingSocket(),
    attempts,
    releaseHeld() {
      for (const s of [...held]) s.destroy(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }));
    },
    held: () => held.size,
    attempted: (n) => (attempts.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve }))),
  };
}
