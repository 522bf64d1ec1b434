// Test-only: a real handlers process (handlers/main.ts through tsx), started with only the environment given
// and PATH, and awaited until it logs that it listens.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort } from "../../lib/embedded/postgres.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

export interface HandlersProcess {
  child: ChildProcess;
  port: number;
  base: string;
  /** Resolves with the exit code when the process exits. */
  exited: Promise<number | null>;
}

/** Starts handlers/main.ts on a free PORT (unless `env` sets one); throws with its output if it does not listen within 30 s. */
export async function spawnHandlers(env: Record<string, string>): Promise<HandlersProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "handlers/main.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", PORT: String(port), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const deadline = Date.now() + 30_000;
  while (!out.includes("handlers listening")) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`handlers did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, port, base: `http://127.0.0.1:${port}`, exited };
}
