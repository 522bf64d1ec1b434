import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import { createSessionTokens } from "../lib/auth/session.ts";
import { main, parseTtl } from "./session-mint.ts";

const run = promisify(execFile);
const SECRET = "mint-test-secret-mint-test-secret-000000";
const root = fileURLToPath(new URL("..", import.meta.url));

async function cli(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "scripts/session-mint.ts", ...args], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

async function inProcess(args: string[], env: Record<string, string | undefined>) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, env, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("session:mint as a real process", () => {
  test("prints only a token that the server's verifier accepts", async () => {
    const r = await cli(["--sub", "alice", "--groups", "demo-editors,ops", "--name", "Alice", "--email", "a@x.test", "--ttl", "1h"], {
      SESSION_SECRET: SECRET,
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const user = await createSessionTokens({ secret: SECRET, ttlSeconds: 3600 }).verify(r.stdout.trim());
    expect(user).toEqual({ sub: "alice", groups: ["demo-editors", "ops"], name: "Alice", email: "a@x.test" });
    const payload = JSON.parse(Buffer.from(r.stdout.split(".")[1], "base64url").toString());
    expect(payload.exp - payload.iat).toBe(3600);
  });

  test("refuses in production with exit 1 and a message, printing no token", async () => {
    const r = await cli(["--sub", "alice", "--groups", "a"], { SESSION_SECRET: SECRET, NODE_ENV: "production" });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("refuses to run in production");
  });
});

describe("session:mint arguments", () => {
  test("requires SESSION_SECRET", async () => {
    const r = await inProcess(["--sub", "a", "--groups", "g"], {});
    expect(r).toMatchObject({ code: 1, out: "" });
    expect(r.err).toContain("SESSION_SECRET is required");
  });

  test.each([
    [["--groups", "g"], "--sub is required"],
    [["--sub", "a"], "--groups is required"],
    [["--sub", "a", "--groups", "g", "--ttl", "forever"], "--ttl must be"],
    [["--sub", "a", "--groups", "g", "--bogus"], "Unknown option"],
    [["--sub", "a", "--groups", "g", "--ttl", "13h"], "may not exceed SESSION_TTL_SECONDS"],
  ])("%j is a usage error", async (args, message) => {
    const r = await inProcess(args, { SESSION_SECRET: SECRET });
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).toContain(message);
  });

  test("the default lifetime is SESSION_TTL_SECONDS", async () => {
    const r = await inProcess(["--sub", "a", "--groups", ""], { SESSION_SECRET: SECRET, SESSION_TTL_SECONDS: "120" });
    expect(r.code).toBe(0);
    const payload = JSON.parse(Buffer.from(r.out.split(".")[1], "base64url").toString());
    expect(payload.exp - payload.iat).toBe(120);
    expect(payload.groups).toEqual([]);
  });

  test.each([
    ["3600", 3600],
    ["90s", 90],
    ["15m", 900],
    ["1h", 3600],
    ["7d", 604800],
    ["0", null],
    ["1w", null],
    ["-5", null],
    ["401d", null],
  ])("parseTtl(%s) = %s", (text, seconds) => {
    expect(parseTtl(text)).toBe(seconds);
  });
});
