import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DEMO_CATALOG } from "../lib/catalog/testing/demo-catalog.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
let dir: string;
let catalogFile: string;

/** Runs the CLI as a real process; `npm` runs it exactly as documented, `node` is the quicker path. */
function cli(
  args: string[],
  stdin = "",
  opts: { env?: Record<string, string>; via?: "node" | "npm" } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, argv] =
    opts.via === "npm"
      ? ["npm", ["run", "--silent", "guard", "--", ...args]]
      : [process.execPath, ["--import", "tsx", "scripts/guard.ts", ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

const lines = (stdout: string) =>
  stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
const jsonl = (...rows: unknown[]) => rows.map((r) => (typeof r === "string" ? r : JSON.stringify(r))).join("\n");

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "guard-cli-"));
  catalogFile = join(dir, "catalog.json");
  await writeFile(catalogFile, JSON.stringify(DEMO_CATALOG));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("guard CLI, JSON lines on stdin", () => {
  test("answers every line in order and exits 0 (run through npm as documented)", async () => {
    const input = jsonl(
      { sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)" },
      { sql: "SELECT * FROM http_requests" },
      { sql: "SELECT pg_sleep(1)" },
      { sql: "DELETE FROM services" },
      { sql: "SELECT 1 -- hi" },
      { sql: "" },
      { sql: "SELECT * FROM pg_authid" },
      { sql: "SELECT 1; SELECT 2" },
    );
    const r = await cli(["--catalog", catalogFile], `${input}\n`, { via: "npm" });
    expect(r.code).toBe(0);
    expect(lines(r.stdout)).toEqual([
      { ok: true },
      { ok: false, reason: "time", message: expect.stringContaining("http_requests") },
      { ok: false, reason: "function", message: "function pg_sleep is not allowed" },
      { ok: false, reason: "keyword", message: expect.stringContaining("DELETE") },
      { ok: false, reason: "comment", message: expect.any(String) },
      { ok: false, reason: "empty", message: expect.any(String) },
      { ok: false, reason: "catalog", message: expect.stringContaining("pg_authid") },
      { ok: false, reason: "structure", message: expect.any(String) },
    ]);
  });

  test("many lines keep their order", async () => {
    const rows = Array.from({ length: 300 }, (_, i) => ({
      sql: i % 3 === 0 ? `SELECT ${i}` : i % 3 === 1 ? `SELECT pg_sleep(${i})` : `SELECT ${i} FROM nowhere_${i}`,
    }));
    const r = await cli(["--catalog", catalogFile], jsonl(...rows));
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out).toHaveLength(300);
    out.forEach((o, i) => {
      if (i % 3 === 0) expect(o).toEqual({ ok: true });
      else if (i % 3 === 1) expect(o.reason).toBe("function");
      else expect(o.message).toContain(`nowhere_${i}`);
    });
  });

  test("a bad line still gets its own answer in place; exit 2", async () => {
    const input = jsonl({ sql: "SELECT 1" }, "not json", { query: "SELECT 1" }, "[1]", { sql: 42 }, { sql: "SELECT 2" });
    const r = await cli(["--catalog", catalogFile], input);
    expect(r.code).toBe(2);
    const out = lines(r.stdout);
    expect(out).toHaveLength(6);
    expect(out[0]).toEqual({ ok: true });
    for (const i of [1, 2, 3, 4]) expect(out[i]).toEqual({ ok: false, error: expect.stringContaining(`line ${i + 1}:`) });
    expect(out[5]).toEqual({ ok: true });
    expect(r.stderr).toContain("4 input line(s)");
  });

  test("blank lines are skipped, CRLF is accepted, empty input exits 0", async () => {
    const r = await cli(["--catalog", catalogFile], `\n${JSON.stringify({ sql: "SELECT 1" })}\r\n\n`);
    expect(r.code).toBe(0);
    expect(lines(r.stdout)).toEqual([{ ok: true }]);
    const empty = await cli(["--catalog", catalogFile], "");
    expect(empty).toMatchObject({ code: 0, stdout: "" });
  });

  test("SQL_GUARD_EXTRA_FUNCTIONS and SQL_MAX_LENGTH apply", async () => {
    const input = jsonl({ sql: "SELECT percentile_approx(0.5, 1)" }, { sql: "SELECT 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1" });
    const plain = await cli(["--catalog", catalogFile], input);
    expect(lines(plain.stdout).map((o) => o.ok)).toEqual([false, true]);
    const tuned = await cli(["--catalog", catalogFile], input, {
      env: { SQL_GUARD_EXTRA_FUNCTIONS: "percentile_approx", SQL_MAX_LENGTH: "34" },
    });
    expect(tuned.code).toBe(0);
    expect(lines(tuned.stdout)).toEqual([
      { ok: true },
      { ok: false, reason: "structure", message: expect.stringContaining("SQL_MAX_LENGTH") },
    ]);
  });

  test("a catalog file by source id: lines name their source", async () => {
    const file = join(dir, "by-source.json");
    await writeFile(file, JSON.stringify({ src_a: DEMO_CATALOG, src_b: { tables: [] } }));
    const input = jsonl(
      { sql: "SELECT name FROM services", sourceId: "src_a" },
      { sql: "SELECT name FROM services", sourceId: "src_b" },
      { sql: "SELECT name FROM services", sourceId: "src_c" },
      { sql: "SELECT name FROM services" },
    );
    const r = await cli(["--catalog", file], input);
    expect(r.code).toBe(2);
    expect(lines(r.stdout)).toEqual([
      { ok: true },
      { ok: false, reason: "catalog", message: expect.stringContaining("services") },
      { ok: false, error: expect.stringContaining("src_c") },
      { ok: false, error: expect.stringContaining("sourceId") },
    ]);
  });
});

describe("guard CLI, bad usage exits 2", () => {
  test.each([
    ["no arguments", []],
    ["unknown option", ["--catalog", "x.json", "--bogus"]],
    ["positional argument", ["--catalog", "x.json", "extra"]],
    ["missing catalog file", ["--catalog", "/nonexistent/catalog.json"]],
  ])("%s", async (_name, args) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("usage:");
  });

  test("a catalog file that is not a catalog", async () => {
    const file = join(dir, "bad-catalog.json");
    await writeFile(file, JSON.stringify({ tables: "nope" }));
    const r = await cli(["--catalog", file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("not a catalog");
  });

  test("a bad SQL_MAX_LENGTH", async () => {
    const r = await cli(["--catalog", catalogFile], "", { env: { SQL_MAX_LENGTH: "lots" } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("SQL_MAX_LENGTH");
  });

  test("--help prints the usage and exits 0", async () => {
    const r = await cli(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("usage:");
  });
});

describe("guard CLI --dashboard", () => {
  const spec = (panels: { id: string; sql: string; sourceId?: string }[]) => ({
    title: "Checkout",
    time: { from: "now-6h", to: "now" },
    panels: panels.map((p) => ({ type: "timeseries", title: p.id, sourceId: "src_a", ...p })),
  });

  test("one line per panel with its id; exit 1 when a panel is rejected", async () => {
    const file = join(dir, "dash.json");
    await writeFile(
      file,
      JSON.stringify(
        spec([
          { id: "rps", sql: "SELECT $__timeGroup(ts, '1m'), count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1" },
          { id: "leak", sql: "SELECT passwd FROM pg_shadow" },
          { id: "all", sql: "SELECT * FROM http_requests" },
        ]),
      ),
    );
    const r = await cli(["--catalog", catalogFile, "--dashboard", file]);
    expect(r.code).toBe(1);
    expect(lines(r.stdout)).toEqual([
      { id: "rps", ok: true },
      { id: "leak", ok: false, reason: "catalog", message: expect.stringContaining("pg_shadow") },
      { id: "all", ok: false, reason: "time", message: expect.stringContaining("http_requests") },
    ]);
  });

  test("exit 0 when every panel passes; catalogs by source id", async () => {
    const file = join(dir, "dash-ok.json");
    const catalogs = join(dir, "dash-catalogs.json");
    await writeFile(catalogs, JSON.stringify({ src_a: DEMO_CATALOG, src_b: { tables: DEMO_CATALOG.tables.slice(2, 3) } }));
    await writeFile(
      file,
      JSON.stringify(
        spec([
          { id: "a", sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)" },
          { id: "b", sql: "SELECT name FROM services", sourceId: "src_b" },
        ]),
      ),
    );
    const r = await cli(["--catalog", catalogs, "--dashboard", file]);
    expect(r.code).toBe(0);
    expect(lines(r.stdout)).toEqual([
      { id: "a", ok: true },
      { id: "b", ok: true },
    ]);
  });

  test("panels may name the spec's variables; query variables' SQL is checked too, one line each", async () => {
    const file = join(dir, "dash-vars.json");
    await writeFile(
      file,
      JSON.stringify({
        ...spec([
          { id: "a", sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service IN ($service)" },
          { id: "b", sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND route = $route" },
        ]),
        variables: [
          { name: "service", type: "query", sourceId: "src_a", sql: "SELECT name FROM services", multi: true },
          { name: "team", type: "query", sourceId: "src_a", sql: "SELECT team FROM pg_catalog.pg_roles" },
        ],
      }),
    );
    const r = await cli(["--catalog", catalogFile, "--dashboard", file]);
    expect(r.code).toBe(1);
    expect(lines(r.stdout)).toEqual([
      { id: "a", ok: true },
      { id: "b", ok: false, reason: "structure", message: expect.stringContaining("$route") },
      { variable: "service", ok: true },
      { variable: "team", ok: false, reason: "catalog", message: expect.stringContaining("pg_roles") },
    ]);
  });

  test("an invalid spec exits 2 and names the problem", async () => {
    const file = join(dir, "dash-bad.json");
    await writeFile(file, JSON.stringify({ title: "x", time: { from: "yesterday", to: "now" }, panels: [] }));
    const r = await cli(["--catalog", catalogFile, "--dashboard", file]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("time.from");
  });
});

describe("guard CLI reads API responses saved as they are", () => {
  // The shapes of GET /api/sources/:id (as an editor sees it) and GET /api/dashboards/:id.
  const sourceResponse = (catalog: unknown) => ({
    id: "src_a",
    workspaceId: "ws_1",
    name: "metrics",
    version: 3,
    catalogStatus: "ok",
    catalogStale: false,
    catalogNeverRefreshed: catalog === null,
    catalogRefreshedAt: "2026-01-01T00:00:00.000Z",
    tableCount: 3,
    notes: "",
    catalog,
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
  });
  const dashboardResponse = {
    id: "db_1",
    workspaceId: "ws_1",
    version: 2,
    spec: {
      title: "Checkout",
      time: { from: "now-6h", to: "now" },
      panels: [
        { id: "rps", type: "stat", title: "rps", sourceId: "src_a", sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)" },
        { id: "leak", type: "stat", title: "leak", sourceId: "src_a", sql: "SELECT passwd FROM pg_shadow" },
      ],
    },
    effectiveRefreshIntervalMs: 15000,
    createdBy: "u",
    updatedBy: "u",
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
  };

  test("a source response's catalog field, and a dashboard response's spec field", async () => {
    const source = join(dir, "source-response.json");
    const dashboard = join(dir, "dashboard-response.json");
    await writeFile(source, JSON.stringify(sourceResponse(DEMO_CATALOG)));
    await writeFile(dashboard, JSON.stringify(dashboardResponse));
    const r = await cli(["--catalog", source, "--dashboard", dashboard]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    expect(lines(r.stdout)).toEqual([
      { id: "rps", ok: true },
      { id: "leak", ok: false, reason: "catalog", message: expect.stringContaining("pg_shadow") },
    ]);
    // Source responses keyed by source id work too.
    const keyed = join(dir, "sources-by-id.json");
    await writeFile(keyed, JSON.stringify({ src_a: sourceResponse(DEMO_CATALOG) }));
    const s = await cli(["--catalog", keyed], jsonl({ sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)" }));
    expect(lines(s.stdout)).toEqual([{ ok: true }]);
  });

  test.each([
    [
      "a source without a catalog says why and where the catalog is",
      sourceResponse(null),
      /a source without a catalog .*"catalog" to editors and admins/,
    ],
    [
      "anything else names every accepted form",
      { hello: "world" },
      /is not a catalog \{"tables":\[\.\.\.\]\} or a source as GET \/api\/sources\/:id returns it/,
    ],
    [
      "an empty object too",
      {},
      /must hold a catalog \{"tables":\[\.\.\.\]\}, a source as GET \/api\/sources\/:id returns it .*, or an object of those by source id/,
    ],
  ])("%s", async (_name, body, message) => {
    const file = join(dir, `catalog-${Math.random().toString(36).slice(2)}.json`);
    await writeFile(file, JSON.stringify(body));
    const r = await cli(["--catalog", file], "");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  test("an invalid spec inside a dashboard response names the field it read", async () => {
    const file = join(dir, "dashboard-response-bad.json");
    await writeFile(
      file,
      JSON.stringify({ ...dashboardResponse, spec: { ...dashboardResponse.spec, time: { from: "yesterday", to: "now" } } }),
    );
    const r = await cli(["--catalog", catalogFile, "--dashboard", file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the "spec" field of the dashboard file');
    expect(r.stderr).toContain("time.from");
  });
});
