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

/** Who holds a connection slot: the source and its workspace (fairness is decided between them). */
export interface SlotHolder {
  sourceId: string;
  workspaceId: string;
}

/** One slot of a server's budget, held from before the connection opens until it closes. */
export interface ConnectionLease {
  /** Gives the slot back (idempotent). */
  release(): void;
  /**
   * Makes the slot reclaimable once its connection is open: `closeIfIdle` closes the connection and answers true
   * when it sits idle in its pool, or answers false (running a statement, or already closing).
   */
  bind(closeIfIdle: () => boolean): void;
}

/** Why a slot was refused: the server's cap is held by running or opening connections, or the workspace's share is. */
export type BudgetRefusal = "host" | "workspace";

/**
 * Open connections per source server (address and port) across every pool of a process: a cap no number of
 * sources pointed at one server can get past, shared fairly between the sources and workspaces using it.
 *
 * - A workspace holds at most its share of a server's cap (never the whole cap when the cap is above 1), so one
 *   workspace's sources leave room for every other workspace's.
 * - An idle pooled connection does not keep its slot from another source: when the cap (or the workspace's
 *   share) is reached, an idle connection of another source is closed and its slot handed over, taken from the
 *   workspace holding the most slots on that server and, within it, the source holding the most. A source never
 *   waits for an idle connection to time out, so a connection is refused only while every slot it could take is
 *   held by a running statement or a connection being opened.
 */
export interface ConnectionBudget {
  /** Takes a slot on server `key` for `holder`, reclaiming an idle one if needed; the refusal says which cap. */
  acquire(key: string, holder: SlotHolder): ConnectionLease | BudgetRefusal;
  /** Slots held on server `key` (by `workspaceId` when given). */
  held(key: string, workspaceId?: string): number;
}

/** The slots one workspace may hold on a server of cap `max`: `percent` of it, at least 1, below `max` when `max` > 1. */
export function workspaceShare(max: number, percent: number): number {
  if (max <= 1) return max;
  return Math.max(1, Math.min(max - 1, Math.floor((max * percent) / 100)));
}

interface Slot {
  holder: SlotHolder;
  closeIfIdle: (() => boolean) | null;
  released: boolean;
}

/** A budget of `max` connections per server, `workspaceSharePercent` of which one workspace may hold. */
export function createConnectionBudget(max: number, workspaceSharePercent = 50): ConnectionBudget {
  const share = workspaceShare(max, workspaceSharePercent);
  const servers = new Map<string, Set<Slot>>();

  const count = (slots: Set<Slot>, pick: (s: Slot) => boolean) => {
    let n = 0;
    for (const s of slots) if (pick(s)) n++;
    return n;
  };

  function free(key: string, slot: Slot): void {
    if (slot.released) return;
    slot.released = true;
    const slots = servers.get(key);
    slots?.delete(slot);
    if (slots && slots.size === 0) servers.delete(key);
  }

  /** Closes one idle connection among `candidates` (busiest workspace, then busiest source first); true if it did. */
  function reclaim(key: string, slots: Set<Slot>, candidates: Slot[]): boolean {
    const byWorkspace = new Map<string, number>();
    const bySource = new Map<string, number>();
    for (const s of slots) {
      byWorkspace.set(s.holder.workspaceId, (byWorkspace.get(s.holder.workspaceId) ?? 0) + 1);
      bySource.set(s.holder.sourceId, (bySource.get(s.holder.sourceId) ?? 0) + 1);
    }
    const weight = (s: Slot) => [byWorkspace.get(s.holder.workspaceId) ?? 0, bySource.get(s.holder.sourceId) ?? 0];
    const ordered = candidates
      .filter((s) => s.closeIfIdle)
      .sort((a, b) => {
        const [wa, sa] = weight(a);
        const [wb, sb] = weight(b);
        return wb - wa || sb - sa;
      });
    for (const victim of ordered) {
      if (victim.closeIfIdle?.()) {
        free(key, victim);
        return true;
      }
    }
    return false;
  }

  return {
    acquire(key, holder) {
      let slots = servers.get(key);
      if (!slots) {
        slots = new Set();
        servers.set(key, slots);
      }
      const own = count(slots, (s) => s.holder.workspaceId === holder.workspaceId);
      const others = (s: Slot) => s.holder.sourceId !== holder.sourceId;
      if (own >= share) {
        // At its share: only another of the workspace's own sources can give up an idle connection.
        const mine = [...slots].filter((s) => s.holder.workspaceId === holder.workspaceId && others(s));
        if (!reclaim(key, slots, mine)) {
          if (slots.size === 0) servers.delete(key);
          return "workspace";
        }
      } else if (slots.size >= max) {
        if (!reclaim(key, slots, [...slots].filter(others))) return "host";
      }
      const slot: Slot = { holder, closeIfIdle: null, released: false };
      // A reclaim that freed the server's last slot dropped its entry: the new slot must be counted in the map's set.
      servers.set(key, slots);
      slots.add(slot);
      return {
        release: () => free(key, slot),
        bind(closeIfIdle) {
          if (!slot.released) slot.closeIfIdle = closeIfIdle;
        },
      };
    },
    held(key, workspaceId) {
      const slots = servers.get(key);
      if (!slots) return 0;
      return workspaceId === undefined ? slots.size : count(slots, (s) => s.holder.workspaceId === workspaceId);
    },
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
 * pg-pool's idle list and removal (node_modules/pg-pool/index.js, 3.x), used to close one idle connection for
 * another source. Checked at load, as the pg handlers above are.
 */
interface PgPoolInternals {
  _idle: { client: unknown }[];
  _remove(client: unknown): void;
}
if (typeof (pg.Pool.prototype as unknown as Partial<PgPoolInternals>)._remove !== "function") {
  throw new Error("pg.Pool no longer has the _remove lib/query/pools.ts uses; update it");
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
        let lease: ConnectionLease | null = null;
        const release = () => lease?.release();
        const prepare = async (): Promise<SourceCredentials> => {
          const checked = await opts.target();
          if (settled || stream.destroyed) throw new Error("timeout expired while checking the host");
          const granted = budget.acquire(`${checked.address}|${source.port}`, { sourceId: source.id, workspaceId: source.workspaceId });
          if (typeof granted === "string") {
            const why =
              granted === "workspace"
                ? "its workspace already holds its share of the connections this instance may open to that server"
                : "this instance's connections to that server are all running statements or opening";
            throw new AppError("source_unavailable", `Source ${source.id} is unavailable (host_connection_limit): ${why}.`, {
              cause: "host_connection_limit",
            });
          }
          lease = granted;
          const self = this as unknown as MutableClient & { host: string };
          self.host = checked.address;
          self.connectionParameters.host = checked.address;
          return credentials();
        };
        prepare().then(
          (creds) => {
            if (settled) return release();
            if (stream.destroyed) {
              release();
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
            this.once("end", release);
            super.connect((err: Error | null) => {
              // Open: another source may now close it while it sits idle in this pool and take its slot.
              if (!err) lease?.bind(() => closeIfIdle(this));
              cb(err);
            });
          },
          (err: Error) => {
            release();
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

  /** Closes `client` when it sits idle in this pool (pg-pool's own removal: off the idle list, then ended). */
  const closeIfIdle = (client: pg.Client): boolean => {
    const internals = pool as unknown as PgPoolInternals;
    if (pool.ending || !Array.isArray(internals._idle) || !internals._idle.some((item) => item.client === client)) return false;
    internals._remove(client);
    return true;
  };

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
