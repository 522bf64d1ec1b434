// The README's runnable examples, executed as written (README, "Try it from a shell" and "Running each process
// alone"), so a command that stops working as documented fails the suite. They run in a copy of the checkout
// (sharing its node_modules) so that the files they write (`.data/`, `dist/`, `catalog.json`, …) stay out of
// the work tree; the one rewrite is `localhost:3000` to a free port.
import { spawn } from "node:child_process";
import { chmod, cp, mkdtemp, readFile, readdir, rm, symlink } from "node:fs/promises";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort } from "../lib/embedded/postgres.ts";
import { createDatabase } from "../lib/testing/pg.ts";
import { type Running, hasStackTrace, listenerPort, meaningfulLines, root, runScript, track } from "./testing/processes.ts";
import { type ReadmeStep, matchesDocumented, missingOutput, readmeBlock, splitStepOutput, stepsScript } from "./testing/readme-blocks.ts";

// The last line npm start prints once it serves (the lines before it may arrive in earlier chunks).
const SERVING = "Ctrl-C drains and stops";

const MARKER = "::readme-step-exit::";
// Not copied: what the examples create, and what only the real checkout needs.
const NOT_COPIED = /(^|\/)(\.git|\.data|dist|cdk\.out|coverage|\.scratch|catalog\.json|dashboard\.json)$/;

let readme: string;
let view: string;

beforeAll(async () => {
  readme = await readFile(join(root, "README.md"), "utf8");
  view = await mkdtemp(join(tmpdir(), "pulseboard-readme-"));
  // The embedded server may run as the postgres system user (tests run as root): it must enter this folder.
  await chmod(view, 0o755);
  for (const entry of await readdir(root)) {
    if (NOT_COPIED.test(entry)) continue;
    if (entry === "node_modules") await symlink(join(root, entry), join(view, entry));
    else
      await cp(join(root, entry), join(view, entry), {
        recursive: true,
        filter: (src) => !NOT_COPIED.test(src) && !src.includes("/node_modules"),
      });
  }
});
afterAll(async () => {
  if (view) await rm(view, { recursive: true, force: true });
});

/** Runs one README block in one bash shell in the view and checks each step's documented output and exit status. */
async function runBlock(name: string, env: Record<string, string>, port?: number): Promise<void> {
  const steps = readmeBlock(readme, name).map((s) => ({
    ...s,
    command: port ? s.command.replaceAll("localhost:3000", `localhost:${port}`) : s.command,
  }));
  expect(steps.length).toBeGreaterThan(0);
  const shell = track(
    spawn("bash", ["-c", stepsScript(steps, MARKER)], {
      cwd: view,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  await shell.exited;
  const results = splitStepOutput(shell.output(), MARKER);
  expect(results.length, shell.output()).toBe(steps.length);
  steps.forEach((step: ReadmeStep, i) => {
    const { output, exitCode } = results[i]!;
    const where = `README block "${name}", step ${i + 1}: ${step.command}\n--- output ---\n${output}`;
    expect(exitCode, where).toBe(step.exitCode);
    expect(missingOutput(output, step.expected), where).toEqual([]);
  });
}

describe("the README's demo examples against a running npm start", () => {
  let demo: Running;
  let port: number;

  beforeAll(async () => {
    port = await listenerPort();
    demo = runScript("scripts/start.ts", { PORT: String(port), PULSEBOARD_DATA_DIR: join(view, ".data") }, [], view);
    await demo.waitFor(SERVING);
  }, 240_000);
  afterAll(async () => {
    if (!demo) return;
    demo.child.kill("SIGINT");
    expect(await demo.exited).toBe(0);
  });

  test("probes, a minted session, and the guard CLI on the demo dashboard and catalog saved from the API", async () => {
    await runBlock("demo", {}, port);
  }, 180_000);
});

describe("the README's build, migrate and configuration examples", () => {
  let busy: Server;
  let busyPort: number;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = (await createDatabase("readme")).url;
    busyPort = await freePort();
    busy = createServer();
    await new Promise<void>((r) => busy.listen(busyPort, () => r()));
  });
  afterAll(() => {
    busy?.close();
  });

  test("migrate twice on an empty database, build, and a bad configuration named variable by variable", async () => {
    await runBlock("operate", { DATABASE_URL: databaseUrl });
  }, 300_000);

  // The bundles just built: a port in use ends them in one line naming the port and its variable.
  test.each([
    ["dist/handlers/main.mjs", "PORT", "handlers"],
    ["dist/stream-host/main.mjs", "STREAM_PORT", "stream host"],
  ])("%s with %s in use", async (bundle, variable, prefix) => {
    const run = track(
      spawn(process.execPath, [join(view, bundle)], {
        cwd: view,
        env: { PATH: process.env.PATH ?? "", DATABASE_URL: databaseUrl, SESSION_SECRET: "s".repeat(32), [variable]: String(busyPort) },
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    expect(await run.exited).toBe(1);
    const out = run.output();
    expect(hasStackTrace(out), out).toBe(false);
    const line = `${prefix}: port ${busyPort} is already in use by another process; stop it, or set ${variable} to a free port`;
    expect(
      meaningfulLines(out).filter((l) => l === line),
      out,
    ).toHaveLength(1);
  });
});

describe("the README block format", () => {
  const sample = [
    "<!-- readme-test: t -->",
    "```sh",
    "# an explanation",
    "echo a \\",
    "  b",
    "# a b",
    "false",
    "# [exit 1]",
    "",
    "# another explanation",
    "printf '{\"x\":1}'",
    '# {"x":…}',
    "```",
  ].join("\n");

  test("commands, continuations, documented output, exit statuses; explanations ignored", () => {
    expect(readmeBlock(sample, "t")).toEqual([
      { command: "echo a \\\n  b", expected: ["a b"], exitCode: 0 },
      { command: "false", expected: [], exitCode: 1 },
      { command: "printf '{\"x\":1}'", expected: ['{"x":…}'], exitCode: 0 },
    ]);
    expect(() => readmeBlock(sample, "missing")).toThrow("README has no");
  });

  test("… matches any text, the rest literally, and lines must come in order", () => {
    expect(matchesDocumented('{"status":"ok","version":"0.1.0"}', '{"status":"ok","version":"…"}')).toBe(true);
    expect(matchesDocumented('{"status":"bad"}', '{"status":"ok"}')).toBe(false);
    expect(matchesDocumented("a.b", "a…b")).toBe(true);
    expect(matchesDocumented("axb", "a.b")).toBe(false);
    expect(missingOutput("one\ntwo\nthree", ["one", "three"])).toEqual([]);
    expect(missingOutput("one\ntwo\nthree", ["three", "one"])).toEqual(["one"]);
  });

  test("a step's output without a final newline still ends at its marker", () => {
    expect(splitStepOutput(`x\n{"a":1}${MARKER} 0\n${MARKER} 3\n`, MARKER)).toEqual([
      { output: 'x\n{"a":1}', exitCode: 0 },
      { output: "", exitCode: 3 },
    ]);
  });
});
