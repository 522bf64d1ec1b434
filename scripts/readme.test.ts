// The README's runnable examples, executed as written (README, "Try it from a shell" and "Running each process
// alone"), so a command that stops working as documented fails the suite. They run in a copy of the checkout
// (sharing its node_modules) so that the files they write (`.data/`, `dist/`, `catalog.json`, …) stay out of
// the work tree; the one rewrite is `localhost:3000` to a free port.
import { spawn } from "node:child_process";
import { chmod, cp, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import pg from "pg";
import { createSessionTokens } from "../lib/auth/session.ts";
import { DEMO_CATALOG } from "../lib/catalog/testing/demo-catalog.ts";
import { freePort } from "../lib/embedded/postgres.ts";
import { type MetricsFixture, createMetricsFixture } from "../lib/query/testing/metrics-db.ts";
import { createDatabase } from "../lib/testing/pg.ts";
import { type SystemPostgres, clientMajorVersion, serverBinDir, startSystemPostgres } from "../lib/testing/system-postgres.ts";
import { type Running, hasStackTrace, listenerPort, meaningfulLines, root, runScript, track } from "./testing/processes.ts";
import {
  type ReadmeStep,
  markedBlocks,
  matchesDocumented,
  missingOutput,
  readmeBlock,
  splitStepOutput,
  stepsScript,
  withoutPlaceholders,
} from "./testing/readme-blocks.ts";

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

/**
 * Runs one marked block of the README (or of `text`, a docs page) in one bash shell in the view and checks each
 * step's documented output and exit status. `serve`: the last step is a server (`npm start`), left running and
 * returned once the steps before it passed.
 */
async function runBlock(
  name: string,
  env: Record<string, string>,
  port?: number,
  opts: { text?: string; serve?: boolean } = {},
): Promise<Running> {
  const steps = withoutPlaceholders(readmeBlock(opts.text ?? readme, name)).map((s) => ({
    ...s,
    command: port ? s.command.replaceAll("localhost:3000", `localhost:${port}`) : s.command,
  }));
  expect(steps.length).toBeGreaterThan(0);
  const checked = opts.serve ? steps.slice(0, -1) : steps;
  const shell = track(
    spawn("bash", ["-c", stepsScript(steps, MARKER, { serveLast: opts.serve })], {
      cwd: view,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  if (opts.serve) await shell.waitFor(SERVING, 240_000);
  else await shell.exited;
  const results = splitStepOutput(shell.output(), MARKER);
  expect(results.length, shell.output()).toBe(checked.length);
  checked.forEach((step: ReadmeStep, i) => {
    const { output, exitCode } = results[i]!;
    const where = `block "${name}", step ${i + 1}: ${step.command}\n--- output ---\n${output}`;
    expect(exitCode, where).toBe(step.exitCode);
    expect(missingOutput(output, step.expected), where).toEqual([]);
  });
  return shell;
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

  test("docs/auth.md: a session minted with the demo's secret works, one minted with another secret is refused", async () => {
    await runBlock("session-mint", {}, port, { text: await readFile(join(root, "docs", "auth.md"), "utf8") });
  }, 120_000);
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

/** The files' specFile: a dashboard spec, as GET /api/dashboards/:id returns one, reading the test's metrics table. */
async function writeShopTraffic(): Promise<void> {
  await mkdir(join(view, "dashboards"), { recursive: true });
  await writeFile(
    join(view, "dashboards", "shop-traffic.json"),
    JSON.stringify({
      title: "Shop traffic",
      time: { from: "now-1h", to: "now" },
      panels: [
        {
          id: "rps",
          title: "Requests",
          type: "stat",
          sourceId: "src_shop",
          sql: "SELECT count(*) AS requests FROM http_requests WHERE $__timeFilter(ts)",
        },
      ],
    }),
  );
}

describe("the README's first real deployment and docs/provisioning.md, followed as written from an empty database", () => {
  let metrics: MetricsFixture;
  let server: Running | undefined;

  beforeAll(async () => {
    metrics = await createMetricsFixture((await createDatabase("first_metrics")).url);
    await metrics.admin(
      "CREATE TABLE http_requests (ts timestamptz NOT NULL, service text NOT NULL, route text NOT NULL, status integer NOT NULL)",
    );
    await metrics.admin(
      "INSERT INTO http_requests SELECT now() - g * interval '1 minute', 'shop', '/checkout', 200 FROM generate_series(1, 60) g",
    );
  });
  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGINT");
      await server.exited;
    }
    await metrics?.close();
  });

  test("docs/provisioning.md: the reference file applied from an empty database, then again with nothing to change", async () => {
    const reader = await metrics.createRole("reader", "provision-doc-reader-pw", [
      "GRANT USAGE ON SCHEMA public TO %I",
      "GRANT SELECT ON ALL TABLES IN SCHEMA public TO %I",
    ]);
    const doc = await readFile(join(root, "docs", "provisioning.md"), "utf8");
    const yaml = /```yaml\n(# pulseboard\.yaml[\s\S]*?)\n```/.exec(doc)![1]!;
    await writeFile(
      join(view, "pulseboard.yaml"),
      yaml
        .replace("host: metrics.internal", `host: ${metrics.host}`)
        .replace("port: 5432", `port: ${metrics.port}`)
        .replace("database: metrics", `database: ${metrics.database}`),
    );
    await writeShopTraffic();
    await runBlock(
      "provision-apply",
      {
        DATABASE_URL: (await createDatabase("provision_doc")).url,
        SHOP_METRICS_USERNAME: reader,
        SHOP_METRICS_PASSWORD: "provision-doc-reader-pw",
        SOURCE_ALLOWED_HOSTS: `${metrics.host}:${metrics.port}`,
      },
      undefined,
      { text: doc },
    );
  }, 300_000);

  test("migrate, provision twice, npm start: a member of shop-editors sees Shop and its live dashboard; CI writes a dashboard with an API token", async () => {
    const reader = await metrics.createRole("reader", "first-deployment-reader-pw", [
      "GRANT USAGE ON SCHEMA public TO %I",
      "GRANT SELECT ON ALL TABLES IN SCHEMA public TO %I",
    ]);
    // The README's file as written, its source pointed at the test's metrics database (no TLS on it).
    const yaml = /```yaml\n(# pulseboard\.yaml[\s\S]*?)\n```/.exec(readme)![1]!;
    expect(yaml).toContain("host: metrics.internal");
    await writeFile(
      join(view, "pulseboard.yaml"),
      yaml
        .replace("host: metrics.internal", `host: ${metrics.host}\n        port: ${metrics.port}`)
        .replace("database: metrics", `database: ${metrics.database}`),
    );
    await writeShopTraffic();
    const port = await listenerPort();
    const dataDir = join(view, ".data-first-deployment");
    server = await runBlock(
      "first-deployment",
      {
        // The `…` values of the block's exports: an empty database, and the metrics store's reader.
        DATABASE_URL: (await createDatabase("first_cfg")).url,
        SHOP_METRICS_USERNAME: reader,
        SHOP_METRICS_PASSWORD: "first-deployment-reader-pw",
        // What the block says to set for a metrics store on this machine.
        SOURCE_ALLOWED_HOSTS: `${metrics.host}:${metrics.port}`,
        PORT: String(port),
        PULSEBOARD_DATA_DIR: dataDir,
      },
      undefined,
      { serve: true },
    );
    expect(server.output()).not.toContain("seeding");

    const secret = (await readFile(join(dataDir, "session-secret"), "utf8")).trim();
    const token = await createSessionTokens({ secret, ttlSeconds: 600 }).mint({ sub: "shop-editor", groups: ["shop-editors"] });
    const cookie = `svc_session=${token}`;
    const me = await fetch(`http://127.0.0.1:${port}/api/me`, { headers: { cookie } });
    expect(await me.json()).toMatchObject({ workspaces: [{ id: "ws_shop", name: "Shop", role: "editor" }] });
    const stream = await fetch(`http://127.0.0.1:${port}/api/dashboards/db_shop_traffic/stream`, { headers: { cookie } });
    expect(stream.status).toBe(200);
    const reader_ = stream.body!.getReader();
    let frames = "";
    while (!frames.includes("event: panel")) frames += new TextDecoder().decode((await reader_.read()).value);
    // The operator's own data: the panel's count, not an error frame.
    expect(frames).toMatch(/"panelId":"rps","at":\d+,"result":\{"columns":\[\{"name":"requests"/);
    await reader_.cancel();

    // "Dashboards as code from CI, with an API token", against this deployment: an admin of Shop creates the token,
    // the CI job writes the dashboard file with it, the admin reads the trail and revokes it.
    const shop = {
      PULSEBOARD_URL: `http://localhost:${port}`,
      ADMIN_SESSION: await createSessionTokens({ secret, ttlSeconds: 600 }).mint({ sub: "shop-admin", groups: ["shop-admins"] }),
    };
    const created = await runBlock("ci-token", shop);
    // The block's one step printed the created token (its JSON answer).
    const ciToken = JSON.parse(splitStepOutput(created.output(), MARKER)[0]!.output) as { id: string; token: string };
    await runBlock("ci-dashboards", { ...shop, PULSEBOARD_TOKEN: ciToken.token });
    await runBlock("ci-token-revoke", { ...shop, PULSEBOARD_TOKEN: ciToken.token, TOKEN_ID: ciToken.id });

    server.child.kill("SIGINT");
    expect(await server.exited).toBe(0);
  }, 400_000);
});

describe.runIf(clientMajorVersion("pg_dump") && serverBinDir(clientMajorVersion("pg_dump")!))(
  "docs/operations.md: back up and restore the config store with pg_dump and pg_restore",
  () => {
    let system: SystemPostgres;
    beforeAll(async () => {
      // The embedded server is PostgreSQL 18 and ships no pg_dump; the machine's pg_dump dumps a server of its own
      // version (an older pg_dump refuses a newer server), so the block runs against such a server.
      system = await startSystemPostgres(clientMajorVersion("pg_dump")!);
    }, 120_000);
    afterAll(async () => {
      await system?.stop();
    });

    test("the block as written: dump, restore into an empty database, nothing to migrate, nothing to provision", async () => {
      const databaseUrl = await system.createDatabase("pulseboard");
      const restoreUrl = await system.createDatabase("pulseboard_restored");
      await writeFile(
        join(view, "pulseboard.yaml"),
        "workspaces:\n  - id: ws_backup\n    name: Backed up\n    groups: { viewer: v, editor: e, admin: a }\n",
      );
      const setup = track(
        spawn("bash", ["-c", "npm run --silent migrate && npm run --silent provision -- pulseboard.yaml"], {
          cwd: view,
          env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", DATABASE_URL: databaseUrl },
          stdio: ["ignore", "pipe", "pipe"],
        }),
      );
      expect(await setup.exited, setup.output()).toBe(0);

      const operations = await readFile(join(root, "docs", "operations.md"), "utf8");
      await runBlock("backup", { DATABASE_URL: databaseUrl, RESTORE_URL: restoreUrl }, undefined, { text: operations });
      // Every table came back with every row.
      expect(await tableCounts(restoreUrl)).toEqual(await tableCounts(databaseUrl));
      expect((await tableCounts(restoreUrl)).workspaces).toBe(1);
    }, 300_000);
  },
);

/** Rows per table of the public schema. */
async function tableCounts(url: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = (await client.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).rows;
    const out: Record<string, number> = {};
    for (const { t } of tables) out[t] = Number((await client.query(`SELECT count(*) AS n FROM "${t}"`)).rows[0].n);
    return out;
  } finally {
    await client.end();
  }
}

test("docs/sql-guard.md: the guard CLI on a statement and on a dashboard with a refused panel", async () => {
  await writeFile(join(view, "catalog.json"), JSON.stringify(DEMO_CATALOG));
  await mkdir(join(view, "dashboards"), { recursive: true });
  await writeFile(
    join(view, "dashboards", "checkout.json"),
    JSON.stringify({
      title: "Checkout",
      time: { from: "now-1h", to: "now" },
      panels: [
        {
          id: "rps",
          title: "Requests",
          type: "stat",
          sourceId: "src_a",
          sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)",
        },
        { id: "leak", title: "Leak", type: "table", sourceId: "src_a", sql: "SELECT passwd FROM pg_shadow" },
      ],
    }),
  );
  await runBlock("guard-cli", {}, undefined, { text: await readFile(join(root, "docs", "sql-guard.md"), "utf8") });
}, 120_000);

test("every block of docs/*.md marked for testing is run by this file", async () => {
  const marked: string[] = [];
  for (const file of (await readdir(join(root, "docs"))).filter((f) => f.endsWith(".md")).sort()) {
    for (const name of markedBlocks(await readFile(join(root, "docs", file), "utf8"))) marked.push(`${file}:${name}`);
  }
  // Add a runner above for each new marked block, then its name here.
  expect(marked).toEqual(["auth.md:session-mint", "operations.md:backup", "provisioning.md:provision-apply", "sql-guard.md:guard-cli"]);
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
