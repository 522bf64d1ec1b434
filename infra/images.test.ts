// The Dockerfiles cannot be built here (no Docker engine), so this checks what they promise and then runs the
// final stage's layout for real: the same build command into dist/, the image's ENV and its exec-form CMD,
// from a folder with no node_modules, in production mode.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

import { freePort } from "../lib/embedded/postgres.ts";
import { createDatabase } from "../lib/testing/pg.ts";
import {
  HANDLERS_PORT,
  HEALTH_PATH,
  LIVENESS_COMMAND,
  SERVICE_DISCOVERY_NAMESPACE,
  STREAM_HOST_DISCOVERY_NAME,
  STREAM_HOST_PORT,
} from "./cdk/constants.ts";
import { DOCKER_CONTEXT_EXCLUDES } from "./cdk/images.ts";
import { type Instruction, envOf, execForm, finalStage, imageNodeFlags, parseDockerfile } from "./dockerfile.ts";

// Builds bundles and starts them as processes: tens of seconds each on a busy machine.
vi.setConfig({ testTimeout: 120_000 });

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { build } = (await import(pathToFileURL(join(ROOT, "esbuild.config.mjs")).href)) as {
  build(opts: { outdir: string; only: string[]; log?: (l: string) => void }): Promise<unknown>;
};

function buildTargets(ins: Instruction[]): string[] {
  const run = ins.find((i) => i.op === "RUN" && i.args.includes("esbuild.config.mjs"));
  expect(run).toBeDefined();
  return /--only\s+(\S+)/.exec(run!.args)![1].split(",");
}

const handlers = parseDockerfile("Dockerfile.handlers");
const streamHost = parseDockerfile("Dockerfile.stream-host");

describe("Dockerfile.handlers", () => {
  const stage = finalStage(handlers);

  it("copies the Lambda Web Adapter extension into /opt/extensions from the public ECR image", () => {
    const from = handlers.find((i) => i.op === "FROM" && i.args.includes("public.ecr.aws/awsguru/aws-lambda-adapter"));
    expect(from?.args).toMatch(/ AS lambda-adapter$/);
    expect(stage).toContainEqual({ op: "COPY", args: "--from=lambda-adapter /lambda-adapter /opt/extensions/lambda-adapter" });
  });

  it("runs on a Node 22 LTS base image with the adapter's readiness check on /api/health and PORT 8080", () => {
    expect(handlers.find((i) => i.op === "ARG" && i.args.startsWith("NODE_VERSION="))?.args).toBe("NODE_VERSION=22");
    expect(stage[0].args).toContain("public.ecr.aws/docker/library/node:$" + "{NODE_VERSION}-bookworm-slim");
    expect(envOf(stage)).toMatchObject({
      NODE_ENV: "production",
      PORT: String(HANDLERS_PORT),
      AWS_LWA_READINESS_CHECK_PATH: HEALTH_PATH,
    });
    expect(execForm(stage, "CMD")).toEqual(["node", "dist/handlers/main.mjs"]);
    expect(buildTargets(handlers)).toContain("handlers");
  });

  it("holds only what the function runs: no migrate bundle, no npm, no source maps", () => {
    expect(buildTargets(handlers)).not.toContain("migrate");
    const rm = stage.find((i) => i.op === "RUN" && i.args.startsWith("rm -rf"));
    for (const path of ["/usr/local/lib/node_modules/npm", "/usr/local/bin/npm", "/usr/local/bin/npx"]) {
      expect(rm?.args.split(/\s+/)).toContain(path);
    }
  });
});

describe.each([
  ["Dockerfile.handlers", handlers],
  ["Dockerfile.stream-host", streamHost],
])("%s: source maps beside the image, not in it", (_file, dockerfile) => {
  it("compiles for the image's Node (esbuild's server target matches NODE_VERSION)", async () => {
    const { SERVER_NODE_TARGET } = (await import(pathToFileURL(join(ROOT, "esbuild.config.mjs")).href)) as {
      SERVER_NODE_TARGET: string;
    };
    const version = dockerfile.find((i) => i.op === "ARG" && i.args.startsWith("NODE_VERSION="))!.args.split("=")[1];
    expect(SERVER_NODE_TARGET).toBe(`node${version}`);
    expect(Number(version) % 2, "an LTS (even) release").toBe(0);
    expect(Number(version)).toBeGreaterThanOrEqual(22);
  });

  it("moves every .map out of dist/ in the build stage and exports them from a `sourcemaps` stage", () => {
    const buildRun = dockerfile.findIndex((i) => i.op === "RUN" && i.args.includes("esbuild.config.mjs"));
    const move = dockerfile.slice(buildRun + 1).find((i) => i.op === "RUN");
    expect(move?.args).toContain("find . -name '*.map'");
    expect(move?.args).toContain('mv "$1" "/maps/$1"');
    const from = dockerfile.findIndex((i) => i.op === "FROM" && i.args === "scratch AS sourcemaps");
    expect(from).toBeGreaterThan(buildRun);
    expect(dockerfile[from + 1]).toEqual({ op: "COPY", args: "--from=build /maps/ /" });
    // The image's final stage is the last one (a plain `docker build` builds it).
    expect(finalStage(dockerfile)[0].args).toContain("node:");
  });
});

describe("Dockerfile.stream-host", () => {
  const stage = finalStage(streamHost);

  it("stops with SIGTERM delivered to node, which drains because FRAMEWORK_MANUAL_SIG_HANDLE is on", () => {
    expect(stage).toContainEqual({ op: "STOPSIGNAL", args: "SIGTERM" });
    expect(envOf(stage)).toMatchObject({
      NODE_ENV: "production",
      FRAMEWORK_MANUAL_SIG_HANDLE: "true",
      STREAM_PORT: String(STREAM_HOST_PORT),
    });
    expect(execForm(stage, "CMD")).toEqual(["node", "--heap-growing-percent=30", "dist/stream-host/main.mjs"]);
  });

  it("sets the memory tunables that the fan-out bench starts the bundle with (glibc's mmap threshold, V8's young space and heap growth)", () => {
    expect(envOf(stage)).toMatchObject({
      GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=32768",
      NODE_OPTIONS: "--max-semi-space-size=4",
    });
    // A V8 flag NODE_OPTIONS refuses, so it rides on the CMD; the bench reads it from there.
    expect(imageNodeFlags("Dockerfile.stream-host")).toEqual(["--heap-growing-percent=30"]);
  });

  it("carries the migrate, provision and app-role bundles that the task's containers of those names run", () => {
    expect(buildTargets(streamHost)).toEqual(expect.arrayContaining(["stream-host", "migrate", "provision", "app-role"]));
  });
});

describe("build context and scrape config", () => {
  it("both .dockerignore files list what the CDK asset excludes", () => {
    for (const file of ["Dockerfile.handlers.dockerignore", "Dockerfile.stream-host.dockerignore"]) {
      const entries = readFileSync(join(ROOT, "infra", file), "utf8")
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith("#"));
      expect(entries, file).toEqual(DOCKER_CONTEXT_EXCLUDES);
    }
  });

  it("Prometheus scrapes every stream host task by its Cloud Map name, with the bearer token file", () => {
    const yml = readFileSync(join(ROOT, "infra/prometheus/scrape.yml"), "utf8");
    expect(yml).toMatch(/^\s+metrics_path: \/api\/metrics$/m);
    expect(yml).toMatch(/^\s+type: Bearer$/m);
    expect(yml).toMatch(/^\s+credentials_file: \/\S+$/m);
    expect(yml).toContain(`- ${STREAM_HOST_DISCOVERY_NAME}.${SERVICE_DISCOVERY_NAMESPACE}\n`);
    expect(yml).toMatch(new RegExp(`^\\s+port: ${STREAM_HOST_PORT}$`, "m"));
    expect(yml).not.toMatch(/\t/);
  });
});

// The final stage, run as the image would run it.
describe.each([
  { name: "handlers", dockerfile: handlers, entry: "handlers/main.ts", portVar: "PORT" },
  { name: "stream-host", dockerfile: streamHost, entry: "stream-host/main.ts", portVar: "STREAM_PORT" },
])("$name image layout", ({ dockerfile, portVar }) => {
  let workdir: string;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    workdir = await mkdtemp(join(tmpdir(), "pulseboard-image-"));
  });
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    await rm(workdir, { recursive: true, force: true });
  });

  it("starts from its CMD with its ENV in production, answers its health check and exits 0 on SIGTERM", async () => {
    const stage = finalStage(dockerfile);
    await build({ outdir: join(workdir, "dist"), only: buildTargets(dockerfile), log: () => {} });
    // What the build stage does before the final stage copies dist/: the source maps leave.
    for (const f of await readdir(join(workdir, "dist"), { recursive: true })) {
      if (f.endsWith(".map")) await rm(join(workdir, "dist", f));
    }
    const { url } = await createDatabase("image");
    const port = await freePort();
    const imageEnv = envOf(stage);
    // The RDS CA bundle is downloaded during a real image build; node only warns when it is absent.
    delete imageEnv.NODE_EXTRA_CA_CERTS;
    const [cmd, ...args] = execForm(stage, "CMD");
    expect(cmd).toBe("node");
    child = spawn(process.execPath, args, {
      cwd: workdir,
      env: {
        PATH: process.env.PATH ?? "",
        ...imageEnv,
        // What the CDK stack adds at deploy time (the secrets come from Secrets Manager there).
        DATABASE_URL: url,
        SESSION_SECRET: "s".repeat(64),
        SOURCE_SECRET_REFS: "DEMO:*",
        [portVar]: String(port),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (d) => {
      output += d;
    });
    child.stderr?.on("data", (d) => {
      output += d;
    });

    // The image's own health check command, when it has one, else a plain request.
    const healthcheck = stage.find((i) => i.op === "HEALTHCHECK");
    const probe = healthcheck
      ? () => runHealthcheck(healthcheck.args, String(port))
      : () =>
          fetch(`http://127.0.0.1:${port}${HEALTH_PATH}`).then(
            (r) => r.status === 200,
            () => false,
          );
    let healthy = false;
    for (let attempt = 0; attempt < 200 && !healthy; attempt++) {
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}:\n${output}`);
      healthy = await probe();
      if (!healthy) await new Promise((r) => setTimeout(r, 50));
    }
    expect(healthy, output).toBe(true);
    const res = await fetch(`http://127.0.0.1:${port}${HEALTH_PATH}`);
    expect(await res.json()).toMatchObject({ status: "ok" });
    if (portVar === "STREAM_PORT") {
      // The ECS task's container health check, as the agent runs it (through /bin/sh).
      expect(await runShell(LIVENESS_COMMAND.replaceAll(String(STREAM_HOST_PORT), String(port)))).toBe(true);
    }

    // The orchestrator's stop: SIGTERM to node (exec-form CMD), which handles it and exits 0, not 143.
    const exited = new Promise<number | null>((r) => child!.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited, output).toBe(0);
  });
});

function runShell(command: string): Promise<boolean> {
  return new Promise((resolve) => {
    const p = spawn("/bin/sh", ["-c", command], { stdio: "ignore", env: { PATH: process.env.PATH ?? "" } });
    p.once("exit", (code) => resolve(code === 0));
  });
}

/** Runs a HEALTHCHECK's exec-form command (after its options) against `port`; true when it exits 0. */
function runHealthcheck(args: string, port: string): Promise<boolean> {
  const json = args.slice(args.indexOf("CMD ") + 4);
  const [cmd, ...rest] = JSON.parse(json) as string[];
  expect(cmd).toBe("node");
  const patched = rest.map((a) => a.replaceAll(String(STREAM_HOST_PORT), port));
  return new Promise((resolve) => {
    const p = spawn(process.execPath, patched, { stdio: "ignore" });
    p.once("exit", (code) => resolve(code === 0));
  });
}
