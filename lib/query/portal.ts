import type { Socket } from "node:net";
import { type Cell, type RowDecoder, createRowDecoder } from "./decode.ts";
import { type FixedMessages, encodePipeline } from "./wire.ts";

/** The subset of pg's Connection the portal uses (pg's documented custom-query interface passes it in). */
export interface WireConnection {
  stream: Socket;
  sendCopyFail(message: string): void;
}

export interface PortalOptions {
  text: string;
  values: readonly (string | null)[];
  /** Parameter type OIDs for Parse (0 lets the server infer). */
  paramTypes: readonly number[];
  /** Rows kept; one more is requested so a longer result is known to be truncated. */
  maxRows: number;
  /** Serialized JSON size at which the read stops at once. */
  maxBytes: number;
  /** BEGIN READ ONLY, SET LOCAL statement_timeout and work_mem, the session reset and ROLLBACK, encoded (see fixedMessages). */
  fixed: FixedMessages;
  /** Ends the connection at once; the portal then fails with its own stop reason. */
  abort: () => void;
  /**
   * Connections that already hold the fixed statements (BEGIN READ ONLY, SET LOCAL, the session reset,
   * ROLLBACK) as named prepared statements. A connection not in the set gets them parsed first.
   */
  prepared: WeakSet<object>;
}

export interface PortalResult {
  columns: { name: string; type: string }[];
  rows: Cell[][];
  truncated: boolean;
}

/** The read stopped because the result passed MAX_RESULT_BYTES. */
export class ResultTooLargeError extends Error {
  readonly code = "result_too_large";
  constructor(
    readonly limit: number,
    readonly rowsRead: number,
  ) {
    super(`result exceeds MAX_RESULT_BYTES (${limit} bytes)`);
    this.name = "ResultTooLargeError";
  }
}

/** The client-side watchdog fired: the database did not answer within the timeout plus grace. */
export class QueryStalledError extends Error {
  readonly code = "query_stalled";
  constructor() {
    super("the database did not answer in time");
    this.name = "QueryStalledError";
  }
}

/**
 * A wire-level backstop for a single huge value: pg buffers a whole DataRow before we see it, so the raw
 * bytes received are counted too. No row's wire size exceeds 3x its JSON size (a one-digit integer column:
 * 12 bytes on the wire, 4 in JSON), so past this many bytes the JSON cap is certainly exceeded.
 */
function wireLimit(maxBytes: number): number {
  return maxBytes * 3 + 65_536;
}

/**
 * One guarded statement as a single pipelined round trip on the extended protocol:
 *
 *   BEGIN READ ONLY · SET LOCAL statement_timeout · Parse/Bind/Describe/Execute(maxRows + 1) ·
 *   SELECT pg_advisory_unlock_all() · ROLLBACK · Sync
 *
 * (the four fixed statements as named prepared statements; the session reset is SESSION_RESET in wire.ts)
 *
 * The server runs them in order; nothing waits on a reply in between, so the read-only transaction, the
 * timeout and the reset cost no extra round trip. After an error the server skips to Sync, so neither the
 * reset nor the ROLLBACK runs on a failed statement and the caller destroys the connection; it also destroys
 * one whose statement was not a SELECT (`reusable`). Rows are decoded and their JSON size counted as each
 * DataRow arrives; past the byte cap the portal stops keeping rows and calls `abort` at once.
 */
export class ReadOnlyPortal {
  /** Settles when the pipeline finished (ReadyForQuery) or failed. */
  readonly done: Promise<PortalResult>;
  /** DataRow messages seen (kept or not): what a test asserts to prove the read stopped early. */
  rowsRead = 0;
  /** Serialized JSON size counted so far. */
  bytes = 0;
  /** Raw bytes received on the socket during this statement. */
  wireBytes = 0;
  /**
   * The statement was a SELECT (its command tag), or was cut at the row limit: only then does its connection
   * go back to the pool. Anything else (a utility statement the guard should never have let through) may have
   * left session state a ROLLBACK keeps, so its connection is destroyed.
   */
  reusable = false;
  /** CommandComplete messages seen: BEGIN's and the two SETs' come before the statement's own. */
  private completions = 0;
  /** The statement's own reply has ended (the release's row and completion follow). */
  private statementDone = false;

  private resolveDone!: (r: PortalResult) => void;
  private rejectDone!: (e: Error) => void;
  private settled = false;
  private decoder: RowDecoder | null = null;
  private readonly rows: Cell[][] = [];
  private truncated = false;
  private stopReason: Error | null = null;
  private stream: Socket | null = null;
  private readonly limitWire: number;
  private readonly onWire: (chunk: Buffer) => void;

  constructor(private readonly opts: PortalOptions) {
    this.limitWire = wireLimit(opts.maxBytes);
    // Assigned, not a class field: the bundles keep function names, and a named field costs a defineProperty per portal.
    this.onWire = (chunk: Buffer) => {
      this.wireBytes += chunk.length;
      if (this.wireBytes > this.limitWire && !this.stopReason) this.stop(new ResultTooLargeError(this.opts.maxBytes, this.rowsRead));
    };
    this.done = new Promise<PortalResult>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    // The owner awaits `done`; an early failure before that must not count as unhandled.
    this.done.catch(() => {});
  }

  /** Ends the read with `reason`, whatever the server sends next. */
  stop(reason: Error): void {
    if (this.stopReason || this.settled) return;
    this.stopReason = reason;
    this.opts.abort();
  }

  submit(connection: WireConnection): null {
    const { opts } = this;
    const stream = connection.stream;
    this.stream = stream;
    stream.on("data", this.onWire);
    // The four fixed statements are named: they are parsed on a fresh connection before any user statement
    // runs, so no user statement can precede or replace them; one that deallocates them only makes its own
    // reset or ROLLBACK fail, and a failed client is destroyed.
    const parseFixed = !opts.prepared.has(connection);
    if (parseFixed) opts.prepared.add(connection);
    // The whole pipeline in one buffer and one write (one TCP segment for small statements). Execute's row
    // limit is an int32 on the wire; anything larger means "all rows" anyway.
    stream.write(
      encodePipeline(opts.fixed, parseFixed, opts.text, opts.paramTypes, opts.values, Math.min(opts.maxRows + 1, 2_147_483_647)),
    );
    return null;
  }

  handleRowDescription(msg: { fields: { name: string; dataTypeID: number }[] }): void {
    this.decoder = createRowDecoder(msg.fields);
    // {"columns":...,"rows":[],"truncated":false,"elapsedMs":...}: the envelope around the rows.
    this.bytes += this.decoder.headerBytes + 64;
  }

  handleDataRow(msg: { fields: (string | null)[]; length: number }): void {
    if (this.stopReason || this.statementDone) return;
    this.rowsRead++;
    const decoder = this.decoder;
    if (!decoder) return;
    if (this.rows.length >= this.opts.maxRows) {
      this.truncated = true;
      return;
    }
    const out: Cell[] = new Array(decoder.columns.length);
    this.bytes += decoder.decode(msg.fields, msg.length, out);
    if (this.bytes > this.opts.maxBytes) {
      this.stop(new ResultTooLargeError(this.opts.maxBytes, this.rowsRead));
      return;
    }
    this.rows.push(out);
  }

  handlePortalSuspended(): void {
    // More rows than maxRows + 1: the next Bind to the unnamed portal closes it.
    this.truncated = true;
    this.statementDone = true;
    this.reusable = true;
  }

  handleCommandComplete(msg: { text: string }): void {
    if (++this.completions !== 4 || this.statementDone) return;
    this.statementDone = true;
    this.reusable = msg.text.startsWith("SELECT ");
  }

  handleEmptyQuery(): void {
    this.statementDone = true;
  }

  handleCopyInResponse(connection: WireConnection): void {
    connection.sendCopyFail("COPY FROM STDIN is not supported");
  }

  handleCopyData(): void {}

  handleReadyForQuery(): void {
    if (this.stopReason) {
      this.fail(this.stopReason);
      return;
    }
    if (!this.finish()) return;
    this.resolveDone({ columns: this.decoder?.columns ?? [], rows: this.rows, truncated: this.truncated });
  }

  handleError(err: Error): void {
    this.fail(this.stopReason ?? err);
  }

  private fail(err: Error): void {
    if (this.finish()) this.rejectDone(err);
  }

  private finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.stream?.removeListener("data", this.onWire);
    return true;
  }
}
