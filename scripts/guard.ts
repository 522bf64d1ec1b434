// npm run --silent guard -- --catalog FILE [--dashboard FILE]
//
// Without --dashboard: reads JSON lines {"sql": "..."} on stdin and writes one JSON line per input line,
// in order: {"ok":true} or {"ok":false,"reason":"...","message":"..."}. Blank lines are skipped. A line
// that is not a JSON object with a string "sql" still gets its own answer, {"ok":false,"error":"..."},
// so answers stay aligned with inputs; the exit code is then 2. Otherwise exit 0 once all input was read.
//
// With --dashboard FILE: checks every panel of a dashboard spec and writes one line per panel,
// {"id":"...","ok":true} or {"id":"...","ok":false,"reason":"...","message":"..."}. Exit 0 when every
// panel passes, 1 when any is rejected (so CI fails), 2 on bad usage or an invalid spec.
//
// The catalog file holds one catalog ({"tables":[...]}, DESIGN section 3) or an object of catalogs by
// source id ({"<sourceId>": {"tables":[...]}}); stdin lines then name theirs with "sourceId".
// SQL_GUARD_EXTRA_FUNCTIONS, SQL_GUARD_EXTRA_TYPES and SQL_MAX_LENGTH apply as in the server.
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { type Catalog, CatalogSchema } from "../lib/catalog/types.ts";
import { variables } from "../lib/config/variables.ts";
import { dashboardSpecSchema } from "../lib/dashboard/spec.ts";
import { type GuardVerdict, createGuard, guardOptionsFromConfig, loadGuardParser } from "../lib/sql-guard/index.ts";

const USAGE = `usage: npm run --silent guard -- --catalog FILE [--dashboard FILE]
  stdin: JSON lines {"sql": "..."} (plus "sourceId" when FILE maps source ids to catalogs)
  stdout: one JSON line per input: {"ok":true} or {"ok":false,"reason":"...","message":"..."}
  --dashboard FILE: check every panel of a dashboard spec instead of reading stdin
  exit: 0 all input read (--dashboard: every panel passed), 1 a panel was rejected (--dashboard only),
        2 bad usage or bad input`;

class UsageError extends Error {}

type Catalogs = { kind: "one"; catalog: Catalog } | { kind: "bySource"; catalogs: Map<string, Catalog> };

async function readJsonFile(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    throw new UsageError(`cannot read the ${what} file ${path}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`the ${what} file ${path} is not valid JSON`);
  }
}

async function loadCatalogs(path: string): Promise<Catalogs> {
  const json = await readJsonFile(path, "catalog");
  if (json && typeof json === "object" && !Array.isArray(json) && "tables" in json) {
    const one = CatalogSchema.safeParse(json);
    if (!one.success) throw new UsageError(`the catalog file ${path} is not a catalog: ${one.error.issues[0]?.message}`);
    return { kind: "one", catalog: one.data };
  }
  if (json && typeof json === "object" && !Array.isArray(json)) {
    const catalogs = new Map<string, Catalog>();
    for (const [sourceId, value] of Object.entries(json)) {
      const c = CatalogSchema.safeParse(value);
      if (!c.success) throw new UsageError(`the catalog of source "${sourceId}" in ${path} is not a catalog`);
      catalogs.set(sourceId, c.data);
    }
    if (catalogs.size > 0) return { kind: "bySource", catalogs };
  }
  throw new UsageError(`the catalog file ${path} must hold {"tables":[...]} or an object of catalogs by source id`);
}

function pick(catalogs: Catalogs, sourceId: unknown): Catalog | string {
  if (catalogs.kind === "one") return catalogs.catalog;
  if (typeof sourceId !== "string") {
    if (catalogs.catalogs.size === 1) return [...catalogs.catalogs.values()][0];
    return 'the catalog file maps source ids: give "sourceId"';
  }
  return catalogs.catalogs.get(sourceId) ?? `no catalog for source "${sourceId}" in the catalog file`;
}

function answer(v: GuardVerdict): Record<string, unknown> {
  return v.ok ? { ok: true } : { ok: false, reason: v.reason, message: v.message };
}

function guardFromEnv(env: NodeJS.ProcessEnv) {
  const extra = variables.SQL_GUARD_EXTRA_FUNCTIONS.schema.safeParse(env.SQL_GUARD_EXTRA_FUNCTIONS);
  const types = variables.SQL_GUARD_EXTRA_TYPES.schema.safeParse(env.SQL_GUARD_EXTRA_TYPES);
  const max = variables.SQL_MAX_LENGTH.schema.safeParse(env.SQL_MAX_LENGTH);
  if (!extra.success) throw new UsageError("SQL_GUARD_EXTRA_FUNCTIONS is invalid");
  if (!types.success) throw new UsageError("SQL_GUARD_EXTRA_TYPES is invalid");
  if (!max.success) throw new UsageError("SQL_MAX_LENGTH must be a positive integer");
  return createGuard({ ...guardOptionsFromConfig({
      SQL_GUARD_EXTRA_FUNCTIONS: extra.data,
      SQL_GUARD_EXTRA_TYPES: types.data,
      SQL_MAX_LENGTH: max.data,
    }), cacheSize: 0 });
}

function write(line: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function checkStdin(catalogs: Catalogs, guard: ReturnType<typeof createGuard>): Promise<number> {
  let bad = 0;
  let lineNo = 0;
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    lineNo++;
    if (line.trim() === "") continue;
    let input: unknown;
    try {
      input = JSON.parse(line);
    } catch {
      input = undefined;
    }
    const sql = (input as { sql?: unknown } | null)?.sql;
    if (typeof input !== "object" || input === null || Array.isArray(input) || typeof sql !== "string") {
      bad++;
      write({ ok: false, error: `line ${lineNo}: expected a JSON object with a string "sql"` });
      continue;
    }
    const catalog = pick(catalogs, (input as { sourceId?: unknown }).sourceId);
    if (typeof catalog === "string") {
      bad++;
      write({ ok: false, error: `line ${lineNo}: ${catalog}` });
      continue;
    }
    write(answer(guard.check(sql, catalog)));
  }
  if (bad > 0) process.stderr.write(`guard: ${bad} input line(s) were not {"sql": "..."} objects\n`);
  return bad > 0 ? 2 : 0;
}

async function checkDashboard(path: string, catalogs: Catalogs, guard: ReturnType<typeof createGuard>): Promise<number> {
  const parsed = dashboardSpecSchema(0).safeParse(await readJsonFile(path, "dashboard"));
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(spec)"}: ${i.message}`).join("\n");
    throw new UsageError(`the dashboard file ${path} is not a valid dashboard spec:\n${issues}`);
  }
  let rejected = 0;
  for (const panel of parsed.data.panels) {
    const catalog = pick(catalogs, panel.sourceId);
    const verdict: Record<string, unknown> =
      typeof catalog === "string"
        ? { ok: false, reason: "catalog", message: catalog }
        : answer(guard.check(panel.sql, catalog));
    if (!verdict.ok) rejected++;
    write({ id: panel.id, ...verdict });
  }
  return rejected > 0 ? 1 : 0;
}

function parseCommandLine() {
  try {
    return parseArgs({
      options: { catalog: { type: "string" }, dashboard: { type: "string" }, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : "bad arguments");
  }
}

async function main(): Promise<number> {
  const args = parseCommandLine();
  if (args.values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!args.values.catalog) throw new UsageError("--catalog FILE is required");
  const guard = guardFromEnv(process.env);
  const catalogs = await loadCatalogs(args.values.catalog);
  await loadGuardParser();
  if (args.values.dashboard) return checkDashboard(args.values.dashboard, catalogs, guard);
  return checkStdin(catalogs, guard);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    if (err instanceof UsageError) process.stderr.write(`guard: ${err.message}\n${USAGE}\n`);
    else process.stderr.write(`guard: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  },
);
