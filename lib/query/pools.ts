import type { Socket } from "node:net";
import type { ConnectionOptions } from "node:tls";
import pg from "pg";
import { AppError } from "../http/errors.ts";
import { parseAddress } from "../net/cidr.ts";
import type { SourceCredentials } from "../secrets/resolver.ts";
import type { CheckedTarget } from "../sources/host-policy.ts";
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

/**
 * Makes the socket of one source connection (pg's `stream` option). The default is a plain TCP socket; tests pass
 * one that records where it was asked to connect and never sends a packet.
 */
export type SourceConnector = () => Socket;

/**
 * Open connections per source server (address and port) across every pool of a process: a cap no number of
 * sources pointed at one server can get past.
 */
export interface ConnectionBudget {
  /** Takes a slot for `key`; returns its release (idempotent), or null when the server's slots are all taken. */
  acquire(key: string): (() => void) | null;
  /** Slots held for `key`. */
  held(key: string): number;
}

/** A budget of `max` connections per key. */
export function createConnectionBudget(max: number): ConnectionBudget {
  const counts = new Map<string, number>();
  return {
    acquire(key) {
      const n = counts.get(key) ?? 0;
      if (n >= max) return null;
      counts.set(key, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(key) ?? 1) - 1;
        if (left <= 0) counts.delete(key);
        else counts.set(key, left);
      };
    },
    held: (key) => counts.get(key) ?? 0,
  };
}

/** TLS options naming `host` as the server (SNI and certificate identity) when it is a name, not an address. */
export function withServername(ssl: false | ConnectionOptions, host: string): false | ConnectionOptions {
  if (!ssl || parseAddress(host)) return ssl;
  return { ...ssl, servername: host.trim().replace(/\.$/, "") };
}

export interface SourcePoolOptions {
  source: Source;
  /** Called on every new connection, so a rotated secret file takes effect without a restart. */
  credentials: () => Promise<SourceCredentials>;
  /**
   * The host policy's verdict, asked on every new connection before credentials: the connection goes to the
   * checked address (never to the name again), so a name re-pointed after the check is never reached.
   */
  target: () => Promise<CheckedTarget>;
  /** Per-server connection cap shared by every pool of the runner. */
  budget: ConnectionBudget;
  connector?: SourceConnector;
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
  connectionParameters: { user?: string; password?: string | null; host?: string };
}

/**
 * A pg.Pool for one source whose clients resolve credentials when they connect (never at pool creation):
 * the pool's Client subclass fills in user and password, then connects.
 */
export function createSourcePool(opts: SourcePoolOptions): pg.Pool {
  const { source, credentials } = opts;
  const budget = opts.budget;

  type ConnectCallback = ((err: Error) => void) | ((err: null, c: pg.Client) => void);

  class SourceClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.Client> | undefined {
      const start = (cb: (err: Error | null) => void) => {
        // pg-pool's connect timeout destroys the (not yet connected) socket; a secret lookup slower than
        // that must fail the connect at once and never connect afterwards.
        const stream = (this as unknown as { connection: { stream: NodeJS.EventEmitter & { destroyed: boolean } } }).connection.stream;
        let settled = false;
        const fail = (err: Error) => {
          if (settled) return;
          settled = true;
          stream.removeListener("close", onClose);
          cb(err);
        };
        const onClose = () => fail(new Error("timeout expired while resolving credentials"));
        stream.once("close", onClose);
        let release: (() => void) | null = null;
        const prepare = async (): Promise<SourceCredentials> => {
          const checked = await opts.target();
          if (settled || stream.destroyed) throw new Error("timeout expired while checking the host");
          release = budget.acquire(`${checked.address}|${source.port}`);
          if (!release) {
            throw new AppError(
              "source_unavailable",
              `Source ${source.id} is unavailable (host_connection_limit): this instance already holds its most connections to that server.`,
              { cause: "host_connection_limit" },
            );
          }
          const self = this as unknown as MutableClient & { host: string };
          self.host = checked.address;
          self.connectionParameters.host = checked.address;
          return credentials();
        };
        prepare().then(
          (creds) => {
            if (settled) return release?.();
            if (stream.destroyed) {
              release?.();
              return onClose();
            }
            settled = true;
            stream.removeListener("close", onClose);
            const self = this as unknown as MutableClient;
            self.user = creds.username;
            self.connectionParameters.user = creds.username;
            self.password = creds.password;
            self.connectionParameters.password = creds.password;
            // The slot is held until the connection closes, however it ends (pg emits `end` once, failed connects too).
            const held = release;
            if (held) this.once("end", held);
            super.connect((err: Error | null) => cb(err));
          },
          (err: Error) => {
            release?.();
            fail(err);
          },
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
    // The checked address replaces the host at connect time; a name stays the TLS server name and identity.
    ssl: withServername(sslOptions(source.sslmode), source.host),
    ...(opts.connector ? { stream: opts.connector } : {}),
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
