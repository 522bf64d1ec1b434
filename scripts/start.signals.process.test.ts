// `npm start` run as a person runs it, through npm, in its own process group as a terminal gives a command, and
// signalled as a terminal (Ctrl-C: SIGINT to the whole group) or an init system (SIGTERM to npm alone) does, at
// several points of the start: every time it ends with everything it started stopped (no process of the group
// left, no PostgreSQL on its data), with one line before it serves and after the drain once it serves.
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDatabase } from "../lib/testing/pg.ts";
import { type Running, hasStackTrace, listenerPort, meaningfulLines, postgresProcessesUsing, root, track } from "./testing/processes.ts";

const SERVING = "Ctrl-C drains and stops";
const INTERRUPTED = /^start interrupted \(Ctrl-C\) before (the demo|Pulseboard) was serving; everything it started is stopped$/;

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "pulseboard-start-signals-"));
  // The embedded server may run as the postgres system user (tests run as root): it must enter this folder.
  await chmod(scratch, 0o755);
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** `npm start` in its own process group (npm's pid is the group id), with `env` on top of PATH and HOME. */
async function npmStart(env: Record<string, string>): Promise<Running> {
  const child = spawn("npm", ["start"], {
    cwd: root,
    detached: true,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: String(await listenerPort()), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return track(child);
}

/** Live (not zombie) processes of process group `pgid`, read from /proc. */
function liveProcessesOfGroup(pgid: number): string[] {
  const out: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its closing parenthesis.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) === pgid && state !== "Z") out.push(`${entry} ${stat.slice(0, stat.lastIndexOf(")") + 1)}`);
  }
  return out;
}

/** Our own lines: without npm's banner (`> pulseboard@… start`, `> exec node …`) and the oidc-provider notice. */
const ownLines = (output: string) => meaningfulLines(output).filter((l) => !l.startsWith(">"));

async function expectEverythingStopped(run: Running, dataDir?: string) {
  const pgid = run.child.pid!;
  expect(liveProcessesOfGroup(pgid)).toEqual([]);
  if (dataDir) expect(postgresProcessesUsing(dataDir)).toEqual([]);
  expect(hasStackTrace(run.output()), run.output()).toBe(false);
  expect(run.output()).not.toContain("start failed");
}

describe("the demo (no DATABASE_URL): Ctrl-C to the process group", () => {
  test("as node starts (npm's banner just printed): it ends, with at most the one line, and nothing left", async () => {
    const dataDir = join(scratch, "demo");
    const run = await npmStart({ PULSEBOARD_DATA_DIR: dataDir });
    await run.waitFor("> exec node");
    process.kill(-run.child.pid!, "SIGINT");
    // Before its handler is installed node ends by the signal itself (nothing was started), and npm then ends
    // itself by the same signal (a shell shows 130 for both); after, the start says so and exits 130.
    const code = await run.exited;
    expect(code === 130 || (code === null && run.child.signalCode === "SIGINT"), `${code} ${run.child.signalCode}`).toBe(true);
    const lines = ownLines(run.output()).filter((l) => !l.startsWith("oidc-provider"));
    if (lines.length > 0) expect(lines.at(-1), run.output()).toMatch(INTERRUPTED);
    expect(lines.filter((l) => INTERRUPTED.test(l)).length).toBeLessThanOrEqual(1);
    await expectEverythingStopped(run, dataDir);
  }, 240_000);

  test.each([
    ["while the embedded PostgreSQL starts", "starting embedded PostgreSQL"],
    ["while migrating and seeding", "migrating the config store and seeding the demo"],
  ])(
    "%s: one line, exit 130, nothing left",
    async (_when, text) => {
      const dataDir = join(scratch, "demo");
      const run = await npmStart({ PULSEBOARD_DATA_DIR: dataDir });
      await run.waitFor(text);
      process.kill(-run.child.pid!, "SIGINT");
      expect(await run.exited).toBe(130);
      const lines = ownLines(run.output());
      expect(
        lines.filter((l) => INTERRUPTED.test(l)),
        run.output(),
      ).toEqual(["start interrupted (Ctrl-C) before the demo was serving; everything it started is stopped"]);
      // Nothing after the line, and nothing but progress lines before it.
      expect(lines.at(-1)).toMatch(INTERRUPTED);
      await expectEverythingStopped(run, dataDir);
    },
    240_000,
  );

  test("once serving: it drains (streams get the frame), exits 0 and stops the embedded PostgreSQL", async () => {
    const dataDir = join(scratch, "demo");
    const run = await npmStart({ PULSEBOARD_DATA_DIR: dataDir });
    await run.waitFor(SERVING);
    expect(run.output()).toContain("Ctrl-C drains and stops (embedded PostgreSQL included).");
    process.kill(-run.child.pid!, "SIGINT");
    expect(await run.exited).toBe(0);
    // One Ctrl-C is one signal although npm forwards a copy: a drain to its end, not an exit at once.
    expect(run.output()).toMatch(/"msg":"draining","signal":"SIGINT"/);
    expect(run.output()).toMatch(/"msg":"exiting","code":0,"why":"drained"/);
    expect(run.output()).not.toContain("second signal");
    await expectEverythingStopped(run, dataDir);
  }, 240_000);

  test("SIGTERM to the npm process alone (as a service manager sends it): forwarded, drained, nothing orphaned", async () => {
    const dataDir = join(scratch, "demo");
    const run = await npmStart({ PULSEBOARD_DATA_DIR: dataDir });
    await run.waitFor(SERVING);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    expect(run.output()).toMatch(/"msg":"draining","signal":"SIGTERM"/);
    await expectEverythingStopped(run, dataDir);
  }, 240_000);
});

describe("with DATABASE_URL: messages say what really happens", () => {
  let databaseUrl: string;
  beforeAll(async () => {
    databaseUrl = (await createDatabase("start_signals")).url;
  });

  test("serving: no demo seeded and no embedded PostgreSQL claimed; Ctrl-C drains", async () => {
    const run = await npmStart({ DATABASE_URL: databaseUrl, PULSEBOARD_DATA_DIR: join(scratch, "own-db") });
    await run.waitFor(SERVING);
    const out = run.output();
    expect(out).toContain("migrating the config store (DATABASE_URL) ...");
    expect(out).not.toContain("seeding");
    expect(out).not.toContain("embedded PostgreSQL");
    expect(out).not.toContain("demo dashboard");
    expect(ownLines(out)).toContain("Ctrl-C drains and stops.");
    process.kill(-run.child.pid!, "SIGINT");
    expect(await run.exited).toBe(0);
    await expectEverythingStopped(run);
  }, 240_000);

  test("Ctrl-C while migrating: one line naming Pulseboard, exit 130", async () => {
    const run = await npmStart({ DATABASE_URL: databaseUrl, PULSEBOARD_DATA_DIR: join(scratch, "own-db") });
    await run.waitFor("migrating the config store (DATABASE_URL)");
    process.kill(-run.child.pid!, "SIGINT");
    expect(await run.exited).toBe(130);
    expect(ownLines(run.output()).at(-1)).toBe(
      "start interrupted (Ctrl-C) before Pulseboard was serving; everything it started is stopped",
    );
    expect(ownLines(run.output()).filter((l) => INTERRUPTED.test(l))).toHaveLength(1);
    await expectEverythingStopped(run);
  }, 240_000);
});
