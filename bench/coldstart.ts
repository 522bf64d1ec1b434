// npm run bench -- coldstart: the handlers bundle as the image ships it against the bundle as it was built
// before (one unminified file that loads every SDK at start), side by side in one run: what each start reads,
// and the median of 5 cold starts of `node dist/handlers/main.mjs` (what the Lambda Web Adapter starts) to the
// first 200 on /api/health, and to the answer of the first API request sent right after it.
//
// Fairness: every variant is built from the same source in this run and started by the same `node` binary with
// no flags and the same environment (nothing inherited, NODE_OPTIONS included); one warm-up start each (file
// system cache), then rounds in rotating order, so no variant always follows the same one on a machine whose
// load changes. Besides wall time it reports the process's CPU time (all threads, from /proc) at the first
// 200, which load on a shared machine disturbs much less. Load averages are printed before and after.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Plugin } from "esbuild";
import { freePort } from "../lib/embedded/postgres.ts";
import { startBenchDatabases } from "../stream-host/testing/bench-env.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const RUNS = 5;
const TARGET_BYTES = 1.5 * 1024 * 1024;
const TARGET_RATIO = 0.7;

interface StartLoad {
  entryBytes: number;
  startBytes: number;
  totalBytes: number;
  files: number;
}
type Build = (opts: {
  outdir: string;
  only: string[];
  minifyServer?: boolean;
  splitServer?: boolean;
  awsSdkEsm?: boolean;
  plugins?: readonly Plugin[];
  log?: (l: string) => void;
}) => Promise<{ built: { name: string; load?: StartLoad }[] }>;

/**
 * The earlier bundle loaded the AI SDK, its providers, the AWS SDK and openid-client at start (static
 * imports). The loaders that now import them on first use (lib/ai/sdk.ts, lib/secrets/sdk.ts,
 * lib/oidc/sdk.ts) are replaced, for the "before" builds only, by modules that import the same re-exports
 * statically and hand them out at once.
 */
const EAGER_SDKS: Record<string, string> = {
  "lib/ai/sdk.ts": [
    'import * as sdk from "./sdk-exports.ts";',
    'import * as openai from "./openai-exports.ts";',
    "export const loadAiSdk = () => Promise.resolve(sdk);",
    "export const loadOpenAiProvider = () => Promise.resolve(openai);",
  ].join("\n"),
  "lib/secrets/sdk.ts": ['import * as sdk from "./sdk-exports.ts";', "export const loadSecretsManager = () => Promise.resolve(sdk);"].join(
    "\n",
  ),
  "lib/oidc/sdk.ts": ['import * as sdk from "./sdk-exports.ts";', "export const loadOpenIdClient = () => Promise.resolve(sdk);"].join("\n"),
};
const eagerSdks: Plugin = {
  name: "eager-sdks",
  setup(b) {
    b.onLoad({ filter: /[\\/]lib[\\/](ai|secrets|oidc)[\\/]sdk\.ts$/ }, (args) => {
      const key = Object.keys(EAGER_SDKS).find((k) => args.path.endsWith(k));
      return key ? { contents: EAGER_SDKS[key], loader: "ts", resolveDir: dirname(args.path) } : undefined;
    });
  },
};

/**
 * The earlier start also loaded the SQL parser before the listener opened; the image's opens the listener
 * while it loads (lib/service/query-services.ts). For the "before" builds, handlers/main.ts awaits it first.
 */
const PARSER_MARKER = "const services = buildAppServices(deps);";
const eagerParser: Plugin = {
  name: "eager-parser",
  setup(b) {
    b.onLoad({ filter: /[\\/]handlers[\\/]main\.ts$/ }, async (args) => {
      const source = readFileSync(args.path, "utf8");
      if (!source.includes(PARSER_MARKER)) throw new Error(`handlers/main.ts no longer contains "${PARSER_MARKER}"`);
      const awaited = `await (await import("../lib/sql-guard/index.ts")).loadGuardParser();\n  ${PARSER_MARKER}`;
      return { contents: source.replace(PARSER_MARKER, awaited), loader: "ts", resolveDir: dirname(args.path) };
    });
  },
};

const VARIANTS = [
  {
    name: "before: one file",
    note: "unminified, every SDK and the SQL parser loaded before the listener opens (the build the images shipped before)",
    opts: { minifyServer: false, splitServer: false, awsSdkEsm: false, plugins: [eagerSdks, eagerParser] },
  },
  {
    name: "minified one file",
    note: "the same, minified (what minifying alone gives)",
    opts: { minifyServer: true, splitServer: false, awsSdkEsm: false, plugins: [eagerSdks, eagerParser] },
  },
  {
    name: "image",
    note: "minified, SDKs in chunks loaded on first use, the SQL parser loading while the listener opens (npm run build)",
    opts: {},
  },
] as const;

const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** utime + stime of a process in milliseconds (Linux), or NaN where /proc is not there. */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    // Fields 14 and 15 of proc(5), in clock ticks of 10 ms on Linux.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

function status(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
  });
}

/**
 * Spawns the bundle; resolves with the milliseconds from spawn to the first 200 on /api/health and its CPU time
 * then, and the milliseconds to the answer of the API request sent right after it (GET /api/me, a 401 without a
 * session), which waits for the SQL parser to load where the parser loads after the listener opens.
 */
async function coldStart(bundle: string, env: Record<string, string>): Promise<{ ms: number; cpu: number; apiMs: number }> {
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
      if ((await status(port, "/api/health")) === 200) {
        const ms = performance.now() - t0;
        const cpu = cpuMs(child.pid!);
        const me = await status(port, "/api/me");
        if (me !== 401) throw new Error(`GET /api/me answered ${me}, expected 401:\n${stderr.slice(-2000)}`);
        return { ms, cpu, apiMs: performance.now() - t0 };
      }
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
    const built = [];
    for (const [i, v] of VARIANTS.entries()) {
      const outdir = join(dir, String(i));
      const result = await build({ outdir, only: ["handlers"], ...v.opts, log: () => {} });
      built.push({ ...v, bundle: join(outdir, "handlers", "main.mjs"), load: result.built[0].load! });
    }
    const env = {
      NODE_ENV: "production",
      DATABASE_URL: db.configUrl,
      SESSION_SECRET: "coldstart-session-secret-0123456789abcdef",
      SOURCE_SECRET_REFS: "DEMO:*",
      SOURCE_SECRET_HOSTS: "DEMO:db.internal",
    };
    console.log(`load average before: ${load()}`);
    for (const b of built) await coldStart(b.bundle, env);
    const runs = built.map(() => [] as { ms: number; cpu: number; apiMs: number }[]);
    for (let round = 0; round < RUNS; round++) {
      for (let k = 0; k < built.length; k++) {
        const j = (round + k) % built.length;
        runs[j].push(await coldStart(built[j].bundle, env));
      }
    }
    console.log(`load average after:  ${load()}`);
    const wall = runs.map((r) => median(r.map((x) => x.ms)));
    const cpu = runs.map((r) => median(r.map((x) => x.cpu)));
    const api = runs.map((r) => median(r.map((x) => x.apiMs)));
    console.log(
      `${"build".padEnd(20)}${"main.mjs".padStart(10)}${"at start".padStart(10)}${"all files".padStart(16)}` +
        `${`wall, median of ${RUNS}`.padStart(20)}${"CPU".padStart(8)}${"first API answer".padStart(18)}`,
    );
    for (const [j, b] of built.entries()) {
      console.log(
        `${b.name.padEnd(20)}${kib(b.load.entryBytes).padStart(10)}${kib(b.load.startBytes).padStart(10)}` +
          `${`${kib(b.load.totalBytes)} in ${b.load.files}`.padStart(16)}${`${wall[j].toFixed(0)} ms`.padStart(20)}` +
          `${`${cpu[j].toFixed(0)} ms`.padStart(8)}${`${api[j].toFixed(0)} ms`.padStart(18)}   (runs: ${runs[j].map((x) => x.ms.toFixed(0)).join(", ")} ms; ${b.note})`,
      );
    }
    const [before, , image] = built.map((b, j) => ({ ...b, wall: wall[j], cpu: cpu[j], api: api[j] }));
    const ratio = image.wall / before.wall;
    console.log(
      `image / before: read at start ${(image.load.startBytes / before.load.startBytes).toFixed(2)}x, ` +
        `cold start ${ratio.toFixed(2)}x wall, ${(image.cpu / before.cpu).toFixed(2)}x CPU, ` +
        `first API answer ${(image.api / before.api).toFixed(2)}x ` +
        `(targets: bundle read at start <= ${kib(TARGET_BYTES)}: ${image.load.startBytes <= TARGET_BYTES ? "met" : "missed"}` +
        ` (all chunks ${kib(image.load.totalBytes)}: ${image.load.totalBytes <= TARGET_BYTES ? "met" : "missed"});` +
        ` cold start <= ${TARGET_RATIO}x: ${ratio <= TARGET_RATIO ? "met" : "missed"})`,
    );
  } finally {
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
