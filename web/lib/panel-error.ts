/**
 * Words for the machine-readable code of a panel's error frame (docs/stream-host.md, "When a
 * dependency fails"): what happened, said for a viewer. The frame's own message stays the detail.
 */
const WORDS: Record<string, string> = {
  // The metrics store behind the panel's source.
  connection_refused: "The metrics database refused the connection (it is down or restarting).",
  connect_timeout: "The metrics database did not answer the connection in time.",
  connection_lost: "The connection to the metrics database was lost.",
  host_not_found: "The metrics database's host name could not be resolved.",
  auth_failed: "The metrics database refused the source's credentials.",
  database_missing: "The metrics database does not exist.",
  too_many_connections: "The metrics database has no connection slots left.",
  starting_up: "The metrics database is starting up.",
  ssl_unsupported: "The metrics database does not support the source's TLS setting.",
  ssl_failed: "The TLS connection to the metrics database failed.",
  insecure_auth: "The metrics database asked for an insecure password exchange, which is refused.",
  server_error: "The metrics database reported an error.",
  host_connection_limit: "This instance already holds its most connections to that database server.",
  pool_limit: "This instance is connected to as many busy sources as it may.",
  source_busy: "Every connection slot of this source is taken by panels that are not finishing; it retries on the next refresh.",
  runner_unavailable: "Queries cannot run on this instance.",
  draining: "This instance is shutting down; the page reconnects to another one.",
  query_timeout: "The query did not finish within the time limit.",
  query_failed: "The metrics database refused the query.",
  result_too_large: "The result is larger than the limit.",
  // The stream host's own store of dashboards and sources.
  config_store_unavailable: "The configuration store is not answering, for too long to keep showing this panel.",
  not_found: "The panel's source no longer exists.",
  time_range_invalid: "The dashboard's time range is invalid.",
  // Refusals of the SQL guard.
  empty: "The panel has no query.",
  comment: "The query contains a comment, which is not allowed.",
  structure: "The query could not be parsed, or is more than one statement.",
  keyword: "The query does something other than read.",
  function: "The query uses a function that is not allowed.",
  catalog: "The query reads a table or column outside the source's catalog.",
  time: "The query is not restricted to the dashboard's time range.",
  internal: "The panel failed unexpectedly.",
};

/** The words for `code`; an unknown code (a newer server) is shown as it is. */
export function panelErrorWords(code: string | undefined): string | null {
  if (!code) return null;
  return Object.hasOwn(WORDS, code) ? WORDS[code]! : `Failed (${code}).`;
}
