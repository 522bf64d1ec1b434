// npm run bench -- coldstart: the handlers bundle as the image ships it (minified, source map beside it) against
// the unminified build, side by side in one run: bundle size, and the median of 5 cold starts of
// `node dist/handlers/main.mjs` (what the Lambda Web Adapter starts) to the first 200 on /api/health.
import { type ChildProcess, spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { freePort } from "../lib/embedded/postgres.ts";
import { startBenchDatabases } from "../stream-host/testing/bench-env.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const RUNS = 5;
const TARGET_BYTES = 1.5 * 1024 * 1024;

type Build = (opts: { outdir: string; only: string[]; minifyServer?: boolean; log?: (l: string) => void }) => Promise<unknown>;

const kb = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Spawns the bundle and resolves with the milliseconds from spawn to the first 200 on /api/health. */
async function coldStart(bundle: string, env: Record<string, string>): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  const child: ChildProcess = spawn(process.execPath, [bundle], {
    env: { PATH: process.env.PATH ?? "", ...env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the bundle exited with ${child.exitCode}:\n${stderr.slice(-2000)}`);
      const ok = await fetch(`http://127.0.0.1:${port}/api/health`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 2));
    }
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
  }
}

export async function run(): Promise<void> {
  const { build } = (await import(pathToFileURL(join(ROOT, "esbuild.config.mjs")).href)) as { build: Build };
  const dir = await mkdtemp(join(tmpdir(), "pulseboard-coldstart-"));
  const db = await startBenchDatabases();
  try {
    const variants = [
      { name: "minified (image)", outdir: join(dir, "min"), minifyServer: true },
      { name: "unminified (before)", outdir: join(dir, "plain"), minifyServer: false },
    ];
    for (const v of variants) await build({ outdir: v.outdir, only: ["handlers"], minifyServer: v.minifyServer, log: () => {} });
    const env = {
      NODE_ENV: "production",
      DATABASE_URL: db.configUrl,
      SESSION_SECRET: "coldstart-session-secret-0123456789abcdef",
      SOURCE_SECRET_REFS: "DEMO:*",
      SOURCE_SECRET_HOSTS: "DEMO:db.internal",
    };
    // One warm-up each (the file system cache), then the runs interleaved so both see the same machine.
    const times = variants.map(() => [] as number[]);
    for (const v of variants) await coldStart(join(v.outdir, "handlers", "main.mjs"), env);
    for (let i = 0; i < RUNS; i++) {
      for (const [j, v] of variants.entries()) times[j].push(await coldStart(join(v.outdir, "handlers", "main.mjs"), env));
    }
    const sizes = await Promise.all(variants.map((v) => stat(join(v.outdir, "handlers", "main.mjs")).then((s) => s.size)));
    const maps = await Promise.all(
      variants.map((v) => stat(join(v.outdir, "handlers", "main.mjs.map")).then((s) => s.size, () => 0)),
    );
    const medians = times.map(median);
    console.log(`${"build".padEnd(22)}${"main.mjs".padStart(12)}${"map beside".padStart(12)}${`median of ${RUNS} cold starts`.padStart(28)}`);
    for (const [j, v] of variants.entries()) {
      console.log(
        `${v.name.padEnd(22)}${kb(sizes[j]).padStart(12)}${kb(maps[j]).padStart(12)}${`${medians[j].toFixed(0)} ms`.padStart(28)}` +
          `   (runs: ${times[j].map((t) => t.toFixed(0)).join(", ")} ms)`,
      );
    }
    console.log(
      `ratio minified/unminified     size ${(sizes[0] / sizes[1]).toFixed(2)}x, cold start ${(medians[0] / medians[1]).toFixed(2)}x ` +
        `(targets: bundle <= ${kb(TARGET_BYTES)}: ${sizes[0] <= TARGET_BYTES ? "met" : "missed"}; cold start <= 0.7x: ${medians[0] <= 0.7 * medians[1] ? "met" : "missed"})`,
    );
  } finally {
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
