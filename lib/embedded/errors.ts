/** Why the embedded PostgreSQL could not start; each message is one line naming the cause and the fix. */
export type EmbeddedPostgresErrorCode =
  /** Another live PostgreSQL holds the data directory (its lock file names a running server). */
  | "data_dir_in_use"
  /** The system user the server runs as (as root: `postgres`) cannot reach the binaries or the data directory. */
  | "unreachable"
  /** The data directory was made by another PostgreSQL major version. */
  | "incompatible_data"
  /** initdb failed. */
  | "init_failed"
  /** The server exited before it accepted connections. */
  | "server_exited";

/** A coded start-up failure of the embedded PostgreSQL. */
export class EmbeddedPostgresError extends Error {
  constructor(
    readonly code: EmbeddedPostgresErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "EmbeddedPostgresError";
  }
}
