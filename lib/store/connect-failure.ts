/**
 * What a config-store failure means, in words an operator acts on, for the command-line tools (`npm run migrate`,
 * `npm run provision`, `npm start`): the code, what it means and which setting to look at (DATABASE_URL), never the
 * connection string or the server's own text (which names hosts).
 */
const MEANINGS: Record<string, string> = {
  ECONNREFUSED: "nothing is listening at the host and port DATABASE_URL names (is PostgreSQL running there, on that port?)",
  ENOTFOUND: "the host name in DATABASE_URL does not resolve",
  EAI_AGAIN: "the host name in DATABASE_URL could not be resolved now (DNS did not answer)",
  ETIMEDOUT: "the host DATABASE_URL names did not answer (a firewall, or the wrong address)",
  EHOSTUNREACH: "the host DATABASE_URL names is unreachable from here",
  ENETUNREACH: "the network of the host DATABASE_URL names is unreachable from here",
  ECONNRESET: "the server closed the connection (it may require TLS: add ?sslmode=require to DATABASE_URL)",
  connect_timeout: "the host DATABASE_URL names did not answer in time (a firewall, or the wrong address)",
  "28P01": "authentication failed: the user or password in DATABASE_URL is wrong",
  "28000":
    "the server refused the login: pg_hba.conf has no entry for this client, user and database (or requires TLS: add ?sslmode=require to DATABASE_URL)",
  "3D000": "the database DATABASE_URL names does not exist (create it first, for example with createdb)",
  "42501": "the user DATABASE_URL names lacks a privilege the migrations need (it must be able to create tables in the database)",
  "42P01": "the config store has no Pulseboard tables: run npm run migrate first",
  "53300": "the server has no connection slots left (max_connections)",
  "57P01": "the server is shutting down",
  "57P03": "the server is starting up; try again in a moment",
  "08P01": "the server at DATABASE_URL did not speak the PostgreSQL protocol as expected (is it PostgreSQL?)",
  ssl_unsupported:
    "the server does not accept TLS: remove sslmode=require from DATABASE_URL (or set sslmode=disable) or enable TLS on the server",
  ssl_failed: "TLS could not be established with the server at DATABASE_URL (its certificate, or the sslmode in DATABASE_URL)",
};

/** The code of a config-store failure: a SQLSTATE, a Node network code, or a short code of our own. */
export function configStoreFailureCode(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === "string" && code !== "") return code;
  if (/does not support SSL/i.test(message)) return "ssl_unsupported";
  if (/SSL|TLS|certificate|self[- ]signed/i.test(message)) return "ssl_failed";
  if (/timeout/i.test(message)) return "connect_timeout";
  return "unknown";
}

/** `ECONNREFUSED: nothing is listening at the host and port DATABASE_URL names (…)`: one line, no secrets. */
export function describeConfigStoreFailure(err: unknown): string {
  const code = configStoreFailureCode(err);
  const meaning = MEANINGS[code];
  if (meaning) return `${code}: ${meaning}`;
  const sqlstate = typeof (err as { severity?: unknown })?.severity === "string";
  // A statement's own error (a migration that failed): PostgreSQL's message names objects of our SQL, not hosts.
  if (sqlstate && err instanceof Error) return `${code}: ${err.message.split("\n")[0]} (DATABASE_URL's database)`;
  return `${code} (the config store at DATABASE_URL)`;
}
