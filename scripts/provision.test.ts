import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type MetricsFixture, createMetricsFixture } from "../lib/query/testing/metrics-db.ts";
import { createDatabase } from "../lib/testing/pg.ts";
import { processTestTimeout, runCli } from "./testing/processes.ts";

// `npm run migrate` then `npm run provision -- FILE` as real processes against an empty database, as the README's
// "first real deployment" runs them. Each test starts one process where it can, with a timeout per process it
// starts (processTestTimeout): a start under load is slow, and nothing here asserts how long anything took.
const ONE = processTestTimeout(1);

let metrics: MetricsFixture;
let env: Record<string, string>;
let dir: string;
const reader = { user: "", password: "provision-cli-reader-pw" };

beforeAll(async () => {
  metrics = await createMetricsFixture((await createDatabase("metrics")).url);
  await metrics.admin("CREATE TABLE http_requests (ts timestamptz NOT NULL, status integer NOT NULL)");
  reader.user = await metrics.createRole("pb_cli_reader", reader.password, [
    "GRANT USAGE ON SCHEMA public TO %I",
    "GRANT SELECT ON ALL TABLES IN SCHEMA public TO %I",
  ]);
  env = {
    PATH: process.env.PATH ?? "",
    DATABASE_URL: (await createDatabase("cfg")).url,
    SOURCE_SECRET_REFS: "METRICS:ws_cli",
    METRICS_USERNAME: reader.user,
    METRICS_PASSWORD: reader.password,
    // The metrics database and a closed port beside it share the loopback test server: allowed explicitly.
    SOURCE_ALLOWED_HOSTS: `${metrics.host}:${metrics.port},${metrics.host}:1`,
  };
  dir = await mkdtemp(join(tmpdir(), "pb-provision-cli-"));
  await writeFile(join(dir, "pulseboard.yaml"), file(metrics.port));
  await writeFile(join(dir, "down.yaml"), file(1));
});
afterAll(() => metrics.close());

function file(port: number): string {
  return `workspaces:
  - id: ws_cli
    name: CLI
    groups: { viewer: cli-viewers, editor: cli-editors, admin: cli-admins }
    sources:
      - id: src_cli
        name: Metrics
        host: ${metrics.host}
        port: ${port}
        database: ${metrics.database}
        sslmode: disable
        secretRef: METRICS
    dashboards:
      - id: db_cli
        spec:
          title: Errors
          time: { from: now-1h, to: now }
          panels:
            - id: errors
              title: Server errors
              type: stat
              sourceId: src_cli
              sql: SELECT count(*) AS errors FROM http_requests WHERE $__timeFilter(ts) AND status >= 500
`;
}

const cli = (script: string, args: string[], extra: Record<string, string> = {}) => runCli(script, args, { ...env, ...extra });
const provision = (args: string[], extra?: Record<string, string>) => cli("scripts/provision.ts", args, extra);
const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);

describe("npm run provision", () => {
  test(
    "before migrations: one line saying to run npm run migrate first",
    async () => {
      const r = await provision([join(dir, "pulseboard.yaml")]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe("provision failed: 42P01: the config store has no Pulseboard tables: run npm run migrate first\n");
      expect(r.stdout).toBe("");
    },
    ONE,
  );

  test("npm run migrate", async () => expect((await cli("scripts/migrate.ts", [])).code).toBe(0), ONE);

  test(
    "after npm run migrate: applies the file",
    async () => {
      const first = await provision([join(dir, "pulseboard.yaml")]);
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      expect(first.stdout).toBe(
        ["created workspace ws_cli", "created source src_cli", "created dashboard db_cli", "provisioned: 3 changes, 0 unchanged", ""].join(
          "\n",
        ),
      );
    },
    ONE,
  );

  test(
    "a second run reports 0 changes",
    async () => {
      const second = await provision([join(dir, "pulseboard.yaml")]);
      expect(second).toEqual({ code: 0, stdout: "provisioned: 0 changes, 3 unchanged\n", stderr: "" });
    },
    ONE,
  );

  test(
    "--from-env applies PROVISION_DOCUMENT (what the stack's provision container runs)",
    async () => {
      const doc = JSON.stringify({ workspaces: [{ id: "ws_env", name: "From env", groups: { viewer: "a", editor: "b", admin: "c" } }] });
      const r = await provision(["--from-env"], { PROVISION_DOCUMENT: doc });
      expect(r).toEqual({ code: 0, stdout: "created workspace ws_env\nprovisioned: 1 change, 0 unchanged\n", stderr: "" });
    },
    ONE,
  );

  test(
    "--from-env without PROVISION_DOCUMENT: one line, exit 1",
    async () => {
      const unset = await provision(["--from-env"]);
      expect(unset.code).toBe(1);
      expect(unset.stderr).toBe("provision failed: --from-env: PROVISION_DOCUMENT is not set\n");
    },
    ONE,
  );

  test(
    "a source that does not answer: one line naming it, exit 1, no stack trace",
    async () => {
      const r = await provision([join(dir, "down.yaml")]);
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(/^provision failed: source src_cli: /);
      noStack(r.stderr);
    },
    ONE,
  );

  test(
    "an invalid file lists every problem by entity and field",
    async () => {
      await writeFile(join(dir, "bad.yaml"), "workspaces:\n  - id: cli\n    name: ''\n    groups: {viewer: a, editor: b}\n");
      const r = await provision([join(dir, "bad.yaml")]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("provision failed: The provisioning document is invalid:\n");
      expect(r.stderr).toContain("  workspaces[cli].id: must be ws_ followed by");
      expect(r.stderr).toContain("  workspaces[cli].name: must not be empty");
      expect(r.stderr).toContain("  workspaces[cli].groups.admin:");
      noStack(r.stderr);
    },
    ONE,
  );

  test(
    "bad usage is exit 2 with the usage",
    async () => {
      const usage = await provision([]);
      expect(usage.code).toBe(2);
      expect(usage.stderr).toMatch(/^provision: a provisioning FILE is required\nusage: npm run provision -- FILE/);
    },
    ONE,
  );

  test(
    "a file past PROVISION_FILE_MAX_BYTES, or with a NUL byte: one line naming the file and the limit or the position, exit 1",
    async () => {
      const big = join(dir, "big.yaml");
      await writeFile(big, `${file(metrics.port)}#${"x".repeat(4096)}\n`);
      const over = await provision([big], { PROVISION_FILE_MAX_BYTES: "4096" });
      expect(over).toEqual({
        code: 1,
        stdout: "",
        stderr: `provision failed: ${big}: larger than PROVISION_FILE_MAX_BYTES (4096 bytes). Split the workspaces over several files, or raise PROVISION_FILE_MAX_BYTES.\n`,
      });
      const nul = join(dir, "nul.yaml");
      await writeFile(nul, file(metrics.port).replace("name: CLI", "name: C\0LI"));
      const refused = await provision([nul]);
      expect(refused).toEqual({
        code: 1,
        stdout: "",
        stderr: `provision failed: ${nul}: contains a NUL byte at line 3, column 12 (byte 38); a provisioning file is UTF-8 text without NUL.\n`,
      });
    },
    ONE,
  );

  test(
    "a file that does not exist: one line naming it",
    async () => {
      expect((await provision([join(dir, "nope.yaml")])).stderr).toBe(`provision failed: ${join(dir, "nope.yaml")}: no such file\n`);
    },
    ONE,
  );
});

describe("a config store or source that cannot be used: the code, what it means and the setting to change", () => {
  const databaseUrl = (change: (url: URL) => void) => {
    const url = new URL(env.DATABASE_URL!);
    change(url);
    return url.toString();
  };
  const SCRIPTS = [
    ["scripts/migrate.ts", "migration failed"],
    ["scripts/provision.ts", "provision failed"],
  ] as const;
  const args = (script: string) => (script.endsWith("provision.ts") ? [join(dir, "pulseboard.yaml")] : []);

  test.each(SCRIPTS)(
    "%s: nothing listening",
    async (script, prefix) => {
      const refused = await cli(script, args(script), { DATABASE_URL: databaseUrl((u) => (u.port = "1")) });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `${prefix}: ECONNREFUSED: nothing is listening at the host and port DATABASE_URL names (is PostgreSQL running there, on that port?)\n`,
      );
    },
    ONE,
  );

  test.each(SCRIPTS)(
    "%s: wrong password",
    async (script, prefix) => {
      const auth = await cli(script, args(script), { DATABASE_URL: databaseUrl((u) => (u.password = "not-the-password")) });
      expect(auth.code).toBe(1);
      expect(auth.stderr).toBe(`${prefix}: 28P01: authentication failed: the user or password in DATABASE_URL is wrong\n`);
      expect(auth.stderr).not.toContain("not-the-password");
    },
    ONE,
  );

  test.each(SCRIPTS)(
    "%s: missing database",
    async (script, prefix) => {
      const noDb = await cli(script, args(script), { DATABASE_URL: databaseUrl((u) => (u.pathname = "/no_such_database")) });
      expect(noDb.code).toBe(1);
      expect(noDb.stderr).toMatch(new RegExp(`^${prefix}: 3D000: the database DATABASE_URL names does not exist`));
    },
    ONE,
  );

  test(
    "a source with sslmode: require on a server without TLS: the message says to set sslmode",
    async () => {
      await writeFile(join(dir, "tls.yaml"), file(metrics.port).replace("sslmode: disable", "sslmode: require"));
      expect((await cli("scripts/migrate.ts", [])).code).toBe(0);
      const r = await provision([join(dir, "tls.yaml")]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^provision failed: source src_cli: .*\(ssl_unsupported\): .*set the source's sslmode to disable/);
    },
    processTestTimeout(2),
  );
});
