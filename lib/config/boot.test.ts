import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Runs an entry point as a real process with exactly `env` (plus PATH) and returns its exit code and stderr. */
function boot(entry: string, env: Record<string, string>) {
  const res = spawnSync(process.execPath, ["--import", "tsx", entry], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", ...env },
    encoding: "utf8",
    timeout: 20_000,
  });
  return { code: res.status, stderr: res.stderr };
}

test.each(["handlers/main.ts", "stream-host/main.ts", "scripts/migrate.ts"])(
  "%s refuses to boot on a bad CIDR entry, exit 1 naming it",
  (entry) => {
    const { code, stderr } = boot(entry, {
      DATABASE_URL: "postgres://u:p@127.0.0.1:1/x",
      METRICS_ALLOWED_CIDRS: "10.0.0.0/8, 10.0.0.300",
    });
    expect(code).toBe(1);
    expect(stderr).toContain("METRICS_ALLOWED_CIDRS");
    expect(stderr).toContain('"10.0.0.300"');
  },
);

test("a bad configuration exits 1 listing every bad variable, never a secret value", () => {
  const { code, stderr } = boot("handlers/main.ts", {
    NODE_ENV: "production",
    SESSION_SECRET: "tooshort-secret-value",
    MAX_RESULT_BYTES: "-1",
    QUERY_TIMEOUT_SECONDS: "soon",
  });
  expect(code).toBe(1);
  for (const name of ["DATABASE_URL", "SESSION_SECRET", "SOURCE_SECRET_REFS", "MAX_RESULT_BYTES", "QUERY_TIMEOUT_SECONDS"]) {
    expect(stderr).toContain(name);
  }
  expect(stderr).not.toContain("tooshort-secret-value");
});
