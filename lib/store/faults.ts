import { AppError } from "../http/errors.ts";

/**
 * Config-store faults: a connection that cannot be made, is lost or stops answering, or a statement the
 * server gave up on. Errors raised by the config-store pool and its clients are marked, so the HTTP edge
 * can tell them from a metrics source's failure (which the query runner codes itself) and answer 503
 * `config_store_unavailable` instead of a 500, and so logs can carry a code instead of pg's message
 * (which names the server's host and port).
 */

const MARK = Symbol.for("pulseboard.configStoreError");

/** Seconds a client is told to wait before retrying a request that failed on the config store. */
export const CONFIG_STORE_RETRY_AFTER_SECONDS = 5;

/** The message pg gives a query that the client-side timeout (query_timeout) gave up on. */
const CLIENT_TIMEOUT_MESSAGE = "Query read timeout";

/** Marks `err` as raised by the config store's pool or one of its clients; returns it. */
export function markConfigStoreError<T>(err: T): T {
  if (err && typeof err === "object" && !Object.hasOwn(err, MARK)) {
    Object.defineProperty(err, MARK, { value: true, enumerable: false });
  }
  return err;
}

function isMarked(err: unknown): boolean {
  return !!err && typeof err === "object" && Object.hasOwn(err, MARK);
}

/** Whether pg's client-side query timeout (query_timeout) raised `err`: the server never answered. */
export function isClientQueryTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === CLIENT_TIMEOUT_MESSAGE;
}

/** Node's network error codes: the connection could not be made or was lost. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs that describe the server or the connection, not the statement: connection exceptions (08),
 * too many connections (53300), the server shutting down or starting (57P01-57P05), and a statement
 * cancelled by statement_timeout (57014), which on the config store means it is overloaded or locked.
 */
function isServerSqlstate(code: string): boolean {
  return code.startsWith("08") || code === "53300" || /^57P0[1-5]$/.test(code) || code === "57014";
}

/**
 * The short code of a config-store fault (`ECONNREFUSED`, `57014`, `connect_timeout`, `query_timeout`,
 * `connection_lost`), or undefined when `err` is not one: an error the store raised about the statement
 * itself (a unique violation, a bug in our SQL) is not an outage.
 */
export function configStoreFaultCode(err: unknown): string | undefined {
  if (err instanceof AppError) return err.code === "config_store_unavailable" ? String(err.extra.cause ?? err.code) : undefined;
  if (!isMarked(err)) return undefined;
  return faultCodeOf(err, 0);
}

function faultCodeOf(err: unknown, depth: number): string | undefined {
  if (!(err instanceof Error) || depth > 3) return undefined;
  const code = (err as { code?: unknown }).code;
  const severity = (err as { severity?: unknown }).severity;
  if (typeof code === "string") {
    if (typeof severity === "string") return isServerSqlstate(code) ? code : undefined;
    if (NETWORK_CODES.has(code)) return code;
  }
  if (isClientQueryTimeout(err)) return "query_timeout";
  const message = err.message;
  // pg-pool's own messages: waiting for a pooled client, or a connection attempt, ran out of time.
  if (message === "timeout exceeded when trying to connect" || /connection timeout/i.test(message)) return "connect_timeout";
  if (/^Connection terminated/.test(message) || /not queryable/.test(message)) return "connection_lost";
  const cause = (err as { cause?: unknown }).cause;
  return cause ? faultCodeOf(cause, depth + 1) : undefined;
}

/** Whether `err` is a config-store fault (see configStoreFaultCode). */
export function isConfigStoreFault(err: unknown): boolean {
  return configStoreFaultCode(err) !== undefined;
}

/** The coded error a caller sees when the config store is down or hung; 503 with Retry-After at the edge. */
export function configStoreUnavailable(cause: string): AppError {
  return new AppError(
    "config_store_unavailable",
    "The configuration store is not answering; try again shortly.",
    { cause },
    { "retry-after": String(CONFIG_STORE_RETRY_AFTER_SECONDS) },
  );
}

/**
 * A config-store fault as the HTTP edge answers it (onError in lib/http/problem.ts): the coded 503 with
 * Retry-After, and the fault's short code for the log; undefined when `err` is not a config-store fault.
 */
export function configStoreFault(err: unknown): { error: AppError; cause: string } | undefined {
  const cause = configStoreFaultCode(err);
  if (cause === undefined) return undefined;
  const unavailable = configStoreUnavailable(cause);
  if (!(err instanceof AppError)) return { error: unavailable, cause };
  // A coded error raised elsewhere keeps its detail; the Retry-After is added when it has none.
  return { error: new AppError(err.code, err.detail, err.extra, { ...unavailable.headers, ...err.headers }), cause };
}

/** A config-store fault as the coded error callers see; anything else is returned unchanged. */
export function asConfigStoreError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const code = configStoreFaultCode(err);
  return code === undefined ? err : configStoreUnavailable(code);
}
