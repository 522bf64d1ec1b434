import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { EmbeddedPostgresError } from "./errors.ts";
import { ancestors, assertCompatibleData, clearDataDirLock, failureFromLog, inspectLock } from "./preflight.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pulseboard-preflight-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("ancestors lists every directory from the root down", () => {
  expect(ancestors("/a/b/c")).toEqual(["/", "/a", "/a/b", "/a/b/c"]);
  expect(ancestors("/")).toEqual(["/"]);
});

describe("failureFromLog: one line out of a server's or initdb's log", () => {
  test.each([
    [
      "a second server on the same data directory",
      [
        '2026-11-24 20:00:00.000 UTC [123] FATAL:  lock file "postmaster.pid" already exists\n',
        '2026-11-24 20:00:00.000 UTC [123] HINT:  Is another postmaster (PID 99) running in data directory "/x/pg"?\n',
      ],
      'lock file "postmaster.pid" already exists Is another postmaster (PID 99) running in data directory "/x/pg"?',
    ],
    [
      "data made by another version",
      [
        "FATAL:  database files are incompatible with server\nDETAIL:  The data directory was initialized by PostgreSQL version 19, which is not compatible with this version 18.4.\n",
      ],
      "database files are incompatible with server The data directory was initialized by PostgreSQL version 19, which is not compatible with this version 18.4.",
    ],
    [
      "initdb's own error",
      ['[STDERR] initdb: error: could not access directory "/x/pg": Permission denied\n'],
      'could not access directory "/x/pg": Permission denied',
    ],
    ["nothing of the kind", ["LOG:  starting PostgreSQL 18.4\n"], ""],
  ])("%s", (_name, log, line) => {
    expect(failureFromLog(log)).toBe(line);
  });
});

test("a data directory from another major version is refused by name, before any server runs", async () => {
  const data = join(dir, "v99");
  await mkdir(data);
  await writeFile(join(data, "PG_VERSION"), "99\n");
  const refused = assertCompatibleData(data, 18);
  await expect(refused).rejects.toBeInstanceOf(EmbeddedPostgresError);
  await expect(refused).rejects.toMatchObject({
    code: "incompatible_data",
    message: expect.stringMatching(/was created by PostgreSQL 99, newer than the embedded PostgreSQL 18/),
  });
  await writeFile(join(data, "PG_VERSION"), "18\n");
  await expect(assertCompatibleData(data, 18)).resolves.toBeUndefined();
});

describe("the data directory's lock file", () => {
  test("a lock naming a process that is gone is stale: nothing to do", async () => {
    const data = join(dir, "stale");
    await mkdir(data);
    // A child that has exited: its PID names no live process.
    const child = spawn(process.execPath, ["-e", ""]);
    await new Promise((r) => child.once("exit", r));
    await writeFile(join(data, "postmaster.pid"), `${child.pid}\n${data}\n`);
    expect(await inspectLock(data)).toBeUndefined();
    await expect(clearDataDirLock(data, { stopOrphan: true, log: () => {} })).resolves.toBeUndefined();
  });

  test("a lock naming a live process that is not a PostgreSQL on this directory is refused, with the file to delete", async () => {
    const data = join(dir, "reused");
    await mkdir(data);
    await writeFile(join(data, "postmaster.pid"), `${process.pid}\n${data}\n`);
    expect(await inspectLock(data)).toMatchObject({ pid: process.pid, ours: false });
    const lines: string[] = [];
    await expect(clearDataDirLock(data, { stopOrphan: true, log: (l) => lines.push(l) })).rejects.toMatchObject({
      code: "data_dir_in_use",
      message: `${data}/postmaster.pid names PID ${process.pid}, which is not a PostgreSQL using this directory (a lock left by a crash whose PID was reused); if no PostgreSQL uses ${data}, delete that file and start again`,
    });
    // Never signalled: this test process is alive to say so.
    expect(lines).toEqual([]);
  });
});
