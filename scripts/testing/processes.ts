import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createServer } from "node:net";

/** The checkout the process tests run in. */
export const root = fileURLToPath(new URL("../../", import.meta.url));

/** A child process and everything it has written so far (stdout and stderr interleaved). */
export interface Running {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** Resolves when the output contains `text`; rejects (with the output) if the process exits first. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
}

/** Runs `node --import tsx <script>` in the checkout (or `cwd`) with exactly `env` (plus PATH and HOME). */
export function runScript(
  script: string,
  env: Record<string, string | undefined>,
  args: string[] = [],
  cwd: string = root,
  /** Its own process group, as a terminal gives a command: `process.kill(-pid, sig)` then reaches its children too. */
  detached = false,
): Running {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
    cwd,
    detached,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return track(child);
}

/**
 * How long one `node --import tsx` command may run in a process test before it is killed: a real process starts and
 * tsx compiles its imports, which took over 10 s on a loaded 2-core machine. A generous bound so that a hung command
 * fails with its output instead of the test's timeout; never an assertion of speed.
 */
export const PROCESS_BUDGET_MS = 90_000;

/** The timeout of a test that runs `processes` commands one after another (each within PROCESS_BUDGET_MS). */
export function processTestTimeout(processes: number): number {
  return processes * PROCESS_BUDGET_MS + 10_000;
}

/** What a finished command printed and its exit code. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node --import tsx <script> ...args` in the checkout to its end with exactly `env` (plus PATH). A command
 * still running after PROCESS_BUDGET_MS is killed and the call rejects with what it printed.
 */
export function runCli(script: string, args: string[], env: Record<string, string | undefined>, cwd: string = root): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", script, ...args],
      { cwd, env: { PATH: process.env.PATH ?? "", ...env }, timeout: PROCESS_BUDGET_MS, killSignal: "SIGKILL" },
      (err, stdout, stderr) => {
        if (err?.killed) {
          reject(new Error(`${script} ${args.join(" ")} was still running after ${PROCESS_BUDGET_MS} ms:\n${stdout}${stderr}`));
          return;
        }
        resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

/** Follows a spawned child's output and exit. */
export function track(child: ChildProcess): Running {
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return {
    child,
    output: () => out,
    exited,
    async waitFor(text, timeoutMs = 150_000) {
      const deadline = Date.now() + timeoutMs;
      const seen = () => (typeof text === "string" ? out.includes(text) : text.test(out));
      while (!seen()) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited before ${text}:\n${out}`);
        if (Date.now() > deadline) throw new Error(`no ${text} in time:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/** A stack trace line ("    at fn (file:line:col)") or an uncaught error banner anywhere in the output. */
export function hasStackTrace(output: string): boolean {
  return /^\s+at .+[:(]/m.test(output) || /Uncaught|ERR_[A-Z_]+|node:internal/.test(output);
}

/** The output's lines without the oidc-provider runtime notice (docs/auth.md explains it). */
export function meaningfulLines(output: string): string[] {
  return output
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("oidc-provider WARNING: Unsupported runtime"));
}

/** PostgreSQL server processes whose command line names `dir`. */
export function postgresProcessesUsing(dir: string): string[] {
  try {
    return execFileSync("pgrep", ["-af", "postgres"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.includes(dir) && !l.includes("pgrep"));
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** Addresses (as `a.b.c.d`) on which something listens on TCP `port`, read from /proc/net/tcp. */
export function ipv4ListenAddresses(port: number): string[] {
  const rows = readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1);
  const out: string[] = [];
  for (const row of rows) {
    const [, local, , state] = row.trim().split(/\s+/);
    if (!local || state !== "0A") continue;
    const [hexAddr, hexPort] = local.split(":");
    if (Number.parseInt(hexPort!, 16) !== port) continue;
    const bytes = hexAddr!.match(/../g)!.map((b) => Number.parseInt(b, 16));
    out.push(bytes.reverse().join("."));
  }
  return out;
}

/** Whether anything listens on TCP `port` over IPv6 (including the dual-stack wildcard). */
export function listensOnIpv6(port: number): boolean {
  const rows = readFileSync("/proc/net/tcp6", "utf8").split("\n").slice(1);
  return rows.some((row) => {
    const [, local, , state] = row.trim().split(/\s+/);
    return state === "0A" && !!local && Number.parseInt(local.split(":")[1]!, 16) === port;
  });
}

/**
 * A free TCP port below the kernel's ephemeral range (32768+), for a process under test to listen on. A port from
 * `listen(0)` is ephemeral: after it is released, the embedded PostgreSQL that the same process starts (which also
 * asks for `listen(0)`) can be handed the very same port first.
 */
export async function listenerPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once("error", () => resolve(false));
      srv.listen(port, "0.0.0.0", () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error("no free port below the ephemeral range");
}
