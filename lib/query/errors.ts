import { AppError } from "../http/errors.ts";
import { QueryStalledError, ResultTooLargeError } from "./portal.ts";

/** Why a source could not be reached: a short code that is safe in a message (never a host or credential). */
export type SourceFailure =
  | "auth_failed"
  | "database_missing"
  | "too_many_connections"
  | "starting_up"
  | "connection_refused"
  | "host_not_found"
  | "connect_timeout"
  | "connection_lost"
  | "ssl_unsupported"
  | "ssl_failed"
  | "insecure_auth"
  | "server_error";

const CONNECT_SQLSTATE: Record<string, SourceFailure> = {
  "28P01": "auth_failed",
  "28000": "auth_failed",
  "3D000": "database_missing",
  "53300": "too_many_connections",
  "57P03": "starting_up",
};

function sqlstateOf(err: unknown): string | undefined {
  const e = err as { code?: unknown; severity?: unknown };
  return typeof e?.code === "string" && typeof e.severity === "string" && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined;
}

/** Classifies a failure to connect (or a lost connection) without echoing its text, which names hosts. */
export function classifySourceFailure(err: unknown): SourceFailure {
  const sqlstate = sqlstateOf(err);
  if (sqlstate) return CONNECT_SQLSTATE[sqlstate] ?? "server_error";
  const code = (err as { code?: unknown })?.code;
  const message = err instanceof Error ? err.message : String(err);
  switch (code) {
    case "ECONNREFUSED":
      return "connection_refused";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host_not_found";
    case "ETIMEDOUT":
      return "connect_timeout";
    case "ECONNRESET":
    case "EPIPE":
      return "connection_lost";
  }
  if (/does not support SSL/i.test(message)) return "ssl_unsupported";
  if (/SSL|TLS|certificate|self[- ]signed/i.test(message) || (typeof code === "string" && /CERT|SSL|TLS/.test(code))) return "ssl_failed";
  if (/timeout/i.test(message)) return "connect_timeout";
  return "connection_lost";
}

/**
 * What to change, for the failures a source's own settings cause (an operator reads the message in a provisioning
 * run, the sources page or a panel): never a host, role or server text.
 */
export const SOURCE_FAILURE_HINTS: Partial<Record<SourceFailure, string>> = {
  ssl_unsupported:
    "the server does not accept TLS connections; set the source's sslmode to disable (or prefer) for a server without TLS, or enable TLS on the server",
  ssl_failed: "TLS could not be established; check the server's certificate, or the source's sslmode",
  auth_failed: "authentication failed; check the credentials of the source's secretRef (<SECRET_REF>_USERNAME / _PASSWORD)",
  database_missing: "the source's database does not exist on that server",
};

/** A source connection failure as the coded error callers see. */
export function sourceUnavailable(sourceId: string, err: unknown): AppError {
  const cause = classifySourceFailure(err);
  const hint = SOURCE_FAILURE_HINTS[cause];
  return new AppError("source_unavailable", `Source ${sourceId} is unavailable (${cause})${hint ? `: ${hint}` : ""}.`, { cause });
}

/**
 * The source asked for a password exchange that would hand the password (cleartext) or crackable material (MD5)
 * to whoever answers, without TLS that verifies the server. The detail names neither the host nor the role.
 */
/** Password exchanges a source server may not ask for unless sslmode=verify-full. */
export type InsecureAuthKind = "cleartext" | "MD5" | "weak SCRAM";

export function insecureAuthRefused(sourceId: string, kind: InsecureAuthKind): AppError {
  const asked = kind === "weak SCRAM" ? "SCRAM password authentication with fewer than 4096 iterations" : `${kind} password authentication`;
  return new AppError(
    "source_unavailable",
    `Source ${sourceId} is unavailable (insecure_auth): the server asked for ${asked}, ` +
      "which Pulseboard refuses unless sslmode=verify-full. Use SCRAM (password_encryption=scram-sha-256 and a " +
      "scram-sha-256 pg_hba.conf entry) or connect with sslmode=verify-full.",
    { cause: "insecure_auth" },
  );
}

/** SQLSTATE classes that describe the server or connection rather than the statement. */
const SERVER_CLASSES = ["08", "53", "57P", "58", "XX"];

/** Maps a failed guarded statement to the coded error callers see. */
export function queryError(err: unknown, ctx: { sourceId: string; timeoutSeconds: number; maxBytes: number }): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ResultTooLargeError) {
    return new AppError(
      "result_too_large",
      `The result exceeds MAX_RESULT_BYTES (${err.limit} bytes); aggregate more or narrow the time range.`,
      { limit: err.limit },
    );
  }
  if (err instanceof QueryStalledError) {
    const kept =
      err.keptRunningMs !== null && err.keptRunningMs > 0
        ? ` The source kept running it, ignoring the cancel, for ${Math.ceil(err.keptRunningMs / 1000)} s more; its query slot was held until the statement ended.`
        : "";
    return new AppError(
      "query_timeout",
      `The source did not answer within QUERY_TIMEOUT_SECONDS (${ctx.timeoutSeconds} s); the connection was closed.${kept}`,
      { timeoutSeconds: ctx.timeoutSeconds },
    );
  }
  const sqlstate = sqlstateOf(err);
  if (sqlstate === "57014") {
    return new AppError(
      "query_timeout",
      `The query ran longer than QUERY_TIMEOUT_SECONDS (${ctx.timeoutSeconds} s) and was cancelled by the database.`,
      { timeoutSeconds: ctx.timeoutSeconds },
    );
  }
  if (sqlstate && !SERVER_CLASSES.some((c) => sqlstate.startsWith(c))) {
    // PostgreSQL's own message about the statement (syntax, types, permissions, read-only transaction).
    // It names objects of the user's own query, never the host or credentials.
    const message = err instanceof Error ? err.message : "error";
    return new AppError("query_failed", `The database refused the query: ${message}`, { sqlstate });
  }
  return sourceUnavailable(ctx.sourceId, err);
}
