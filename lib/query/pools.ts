import type { ConnectionOptions } from "node:tls";
import pg from "pg";
import type { SourceCredentials } from "../secrets/resolver.ts";
import type { Source, SslMode } from "../sources/store.ts";
import { type InsecureAuthKind, insecureAuthRefused } from "./errors.ts";

/** What a pool is keyed on: a change of any of these makes a new pool (and drains the old one). */
export function poolKey(source: Pick<Source, "id" | "host" | "port" | "database" | "sslmode" | "secretRef">): string {
  return JSON.stringify([source.id, source.host, source.port, source.database, source.sslmode, source.secretRef]);
}

/** libpq's sslmode as node's TLS options; `allow`/`prefer` start with TLS and fall back when the server has none. */
export function sslOptions(mode: SslMode): false | ConnectionOptions {
  switch (mode) {
    case "disable":
      return false;
    case "allow":
    case "prefer":
    case "require":
      return { rejectUnauthorized: false };
    case "verify-ca":
      // Chain verified, host name not (libpq's verify-ca).
      return { rejectUnauthorized: true, checkServerIdentity: () => undefined };
    case "verify-full":
      return { rejectUnauthorized: true };
  }
}

export interface SourcePoolOptions {
  source: Source;
  /** Called on every new connection, so a rotated secret file takes effect without a restart. */
  credentials: () => Promise<SourceCredentials>;
  max: number;
  timeoutMs: number;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
}

/**
 * Startup parameters of every source connection. They make read-only and the timeout the session default
 * (belt), while each statement still runs inside BEGIN READ ONLY + SET LOCAL statement_timeout (braces):
 * the pipeline costs no extra round trip, and proxies that drop startup options still get both.
 * DateStyle/TimeZone/client_encoding pin the text formats the decoder reads. standard_conforming_strings and
 * search_path pin how the server tokenizes literals and resolves unqualified names to what the SQL guard assumed
 * when it checked the statement (standard strings; unqualified tables in `public`).
 */
export function startupOptions(timeoutMs: number): string {
  return [
    "-c default_transaction_read_only=on",
    `-c statement_timeout=${Math.floor(timeoutMs)}`,
    `-c idle_in_transaction_session_timeout=${Math.floor(timeoutMs) * 2}`,
    "-c DateStyle=ISO",
    "-c TimeZone=UTC",
    "-c client_encoding=UTF8",
    "-c standard_conforming_strings=on",
    "-c search_path=public",
  ].join(" ");
}

/**
 * pg's password handlers (node_modules/pg/lib/client.js, pg 8.x). The Client binds `this._handleAuth…` when it
 * attaches its connection listeners, so a subclass method replaces them for that client. Checked at load: if a pg
 * upgrade renamed them, the override would silently do nothing, so this module refuses to load instead.
 */
interface PgPasswordHandlers {
  _handleAuthCleartextPassword(msg: unknown): void;
  _handleAuthMD5Password(msg: unknown): void;
  _handleAuthSASLContinue(msg: { data: string }): unknown;
}
const pgHandlers = pg.Client.prototype as unknown as PgPasswordHandlers;
if (
  typeof pgHandlers._handleAuthCleartextPassword !== "function" ||
  typeof pgHandlers._handleAuthMD5Password !== "function" ||
  typeof pgHandlers._handleAuthSASLContinue !== "function"
) {
  throw new Error("pg.Client no longer has the auth handlers lib/query/pools.ts overrides; update it");
}

/**
 * Lowest SCRAM iteration count answered without verify-full: PostgreSQL's default. The server picks the count,
 * and a server chosen by whoever edits the source could offer 1, making the client's proof cheap to crack.
 */
export const MIN_SCRAM_ITERATIONS = 4096;

/** The iteration count of a SCRAM server-first-message (`r=…,s=…,i=N`); NaN when absent or malformed. */
export function scramIterations(serverFirstMessage: string): number {
  const part = serverFirstMessage.split(",").find((p) => p.startsWith("i="));
  return part && /^i=\d{1,10}$/.test(part) ? Number(part.slice(2)) : Number.NaN;
}

/**
 * Whether a connection may answer a cleartext or MD5 password request: only over TLS that verified the server's
 * certificate and name (sslmode=verify-full). Anything weaker lets a server chosen by whoever edits the source
 * (or anyone on the path) read the password, or an MD5 hash it can crack offline. SCRAM never reveals either.
 */
export function passwordAuthAllowed(sslmode: SslMode, stream: { encrypted?: boolean; authorized?: boolean }): boolean {
  return sslmode === "verify-full" && stream.encrypted === true && stream.authorized === true;
}

type PgStream = { encrypted?: boolean; authorized?: boolean; destroy(): void };

interface MutableClient {
  user?: string;
  password?: string | null;
  connectionParameters: { user?: string; password?: string | null };
}

/**
 * A pg.Pool for one source whose clients resolve credentials when they connect (never at pool creation):
 * the pool's Client subclass fills in user and password, then connects.
 */
export function createSourcePool(opts: SourcePoolOptions): pg.Pool {
  const { source, credentials } = opts;

  type ConnectCallback = ((err: Error) => void) | ((err: null, c: pg.Client) => void);

  class SourceClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.Client> | undefined {
      const start = (cb: (err: Error | null) => void) => {
        // pg-pool's connect timeout destroys the (not yet connected) socket; a secret lookup slower than
        // that must fail the connect at once and never connect afterwards.
        const stream = (this as unknown as { connection: { stream: NodeJS.EventEmitter & { destroyed: boolean } } })
          .connection.stream;
        let settled = false;
        const fail = (err: Error) => {
          if (settled) return;
          settled = true;
          stream.removeListener("close", onClose);
          cb(err);
        };
        const onClose = () => fail(new Error("timeout expired while resolving credentials"));
        stream.once("close", onClose);
        credentials().then(
          (creds) => {
            if (settled) return;
            if (stream.destroyed) return onClose();
            settled = true;
            stream.removeListener("close", onClose);
            const self = this as unknown as MutableClient;
            self.user = creds.username;
            self.connectionParameters.user = creds.username;
            self.password = creds.password;
            self.connectionParameters.password = creds.password;
            super.connect((err: Error | null) => cb(err));
          },
          (err: Error) => fail(err),
        );
      };
      if (callback) {
        const cb = callback as (err: Error | null, c?: pg.Client) => void;
        start((err) => (err ? cb(err) : cb(null, this)));
        return undefined;
      }
      return new Promise<pg.Client>((resolve, reject) => start((err) => (err ? reject(err) : resolve(this))));
    }

    /** Cleartext password request: answered only under verify-full, else the connection fails before any write. */
    _handleAuthCleartextPassword(msg: unknown): void {
      if (!this.refuseInsecureAuth("cleartext")) pgHandlers._handleAuthCleartextPassword.call(this, msg);
    }

    /** MD5 password request: same rule (the salted hash is crackable offline by the server that asked). */
    _handleAuthMD5Password(msg: unknown): void {
      if (!this.refuseInsecureAuth("MD5")) pgHandlers._handleAuthMD5Password.call(this, msg);
    }

    /** SCRAM server-first-message: a weak iteration count is refused (same rule) before the proof is sent. */
    _handleAuthSASLContinue(msg: { data: string }): unknown {
      if (!(scramIterations(msg.data) >= MIN_SCRAM_ITERATIONS) && this.refuseInsecureAuth("weak SCRAM")) return undefined;
      return pgHandlers._handleAuthSASLContinue.call(this, msg);
    }

    /** True when the request was refused: the connect fails with a coded error and the socket is destroyed. */
    private refuseInsecureAuth(kind: InsecureAuthKind): boolean {
      const connection = (this as unknown as { connection: NodeJS.EventEmitter & { stream: PgStream } }).connection;
      if (passwordAuthAllowed(source.sslmode, connection.stream)) return false;
      // pg's connection error path fails the pending connect with this error (once); destroying the socket
      // afterwards only ends the server's wait. Nothing derived from the password was written.
      connection.emit("error", insecureAuthRefused(source.id, kind));
      connection.stream.destroy();
      return true;
    }
  }

  const pool = new pg.Pool({
    Client: SourceClient as unknown as new () => pg.ClientBase,
    host: source.host,
    port: source.port,
    database: source.database,
    ssl: sslOptions(source.sslmode),
    max: opts.max,
    idleTimeoutMillis: opts.idleTimeoutMs,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    keepAlive: true,
    application_name: "pulseboard",
    options: startupOptions(opts.timeoutMs),
  });
  // An idle connection that dies must not crash the process; the next checkout reconnects.
  pool.on("error", () => {});
  return pool;
}
