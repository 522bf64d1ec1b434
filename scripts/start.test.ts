import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import { freePort } from "../lib/embedded/postgres.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "pulseboard-start-"));
  await chmod(dataDir, 0o755);
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

function postgresProcessesUsing(dir: string): string[] {
  try {
    return execFileSync("pgrep", ["-af", "postgres"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.includes(dir));
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

async function startDemo(port: number): Promise<{ child: ChildProcess; output: () => string }> {
  const { DATABASE_URL: _, ...env } = process.env;
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    env: { ...env, PORT: String(port), PULSEBOARD_DATA_DIR: dataDir, NODE_ENV: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const deadline = Date.now() + 90_000;
  // The last line it prints once serving (the URL lines before it may arrive in earlier chunks).
  while (!out.includes("Ctrl-C drains and stops")) {
    if (child.exitCode !== null) throw new Error(`npm start exited early:\n${out}`);
    if (Date.now() > deadline) throw new Error(`npm start did not come up:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, output: () => out };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  child.kill("SIGINT");
  return exited;
}

test("npm start serves probes on embedded defaults, Ctrl-C stops PostgreSQL, and a second start reuses the data", async () => {
  const port = await freePort();
  const first = await startDemo(port);
  const health = await fetch(`http://127.0.0.1:${port}/api/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ status: "ok", commit: "unknown" });
  const ready = await fetch(`http://127.0.0.1:${port}/api/ready`);
  const body = await ready.json();
  expect(ready.status).toBe(200);
  expect(body.checks.database).toEqual({ status: "ok" });
  // With no OIDC_ISSUER the development identity provider runs in process and answers discovery.
  expect(body.checks.identityProvider).toEqual({ status: "ok" });
  expect(body.status).toBe("degraded");
  expect(body.checks.aiProvider).toEqual({ status: "failed", reason: "AI_PROVIDER" });
  // Login redirects to the development identity provider with PKCE (on localhost, the origin in its redirect URI).
  const login = await fetch(`http://localhost:${port}/api/auth/login`, { redirect: "manual" });
  expect(login.status).toBe(302);
  const location = new URL(login.headers.get("location")!);
  expect(location.searchParams.get("code_challenge_method")).toBe("S256");
  expect(location.searchParams.get("redirect_uri")).toBe(`http://localhost:${port}/api/auth/callback`);
  const dashboardLine = /demo dashboard: \S+\/dashboards\/(db_\S+)/.exec(first.output());
  expect(dashboardLine).not.toBeNull();

  // The demo dashboard streams live panel results to a signed-in viewer, and Ctrl-C ends the stream
  // with the drain frame before the process exits 0.
  const secret = (await readFile(join(dataDir, "session-secret"), "utf8")).trim();
  const token = await createSessionTokens({ secret, ttlSeconds: 600 }).mint({ sub: "demo-viewer", groups: ["demo-viewers"] });
  const stream = await fetch(`http://127.0.0.1:${port}/api/dashboards/${dashboardLine![1]}/stream`, {
    headers: { cookie: `svc_session=${token}` },
  });
  expect(stream.status).toBe(200);
  const reader = stream.body!.getReader();
  let frames = "";
  while (!frames.includes("event: panel")) frames += new TextDecoder().decode((await reader.read()).value);
  expect(frames).toContain("event: snapshot");

  const exited = stop(first.child);
  while (!frames.includes("event: draining")) {
    const { value, done } = await reader.read();
    if (done) break;
    frames += new TextDecoder().decode(value);
  }
  expect(frames).toMatch(/retry: \d+\nevent: draining/);
  expect(await exited).toBe(0);
  expect(postgresProcessesUsing(dataDir)).toEqual([]);

  const second = await startDemo(port);
  // Same data directory, same seeded dashboard.
  expect(second.output()).toContain(dashboardLine![1]);
  expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(200);
  expect(await stop(second.child)).toBe(0);
  expect(postgresProcessesUsing(dataDir)).toEqual([]);
}, 240_000);
