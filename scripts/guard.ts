// npm run --silent guard -- --catalog FILE [--dashboard FILE]
//
// Without --dashboard: reads JSON lines {"sql": "..."} on stdin and writes one JSON line per input line,
// in order: {"ok":true} or {"ok":false,"reason":"...","message":"..."}. Blank lines are skipped. A line
// that is not a JSON object with a string "sql" still gets its own answer, {"ok":false,"error":"..."},
// so answers stay aligned with inputs; the exit code is then 2. Otherwise exit 0 once all input was read.
//
// With --dashboard FILE: checks every panel of a dashboard spec (or of the `spec` field of a whole
// GET /api/dashboards/:id response, saved as is) and writes one line per panel,
// {"id":"...","ok":true} or {"id":"...","ok":false,"reason":"...","message":"..."}, panels checked with the
// spec's variables declared, then one line per query variable, {"variable":"...","ok":...}. Exit 0 when every
// panel and variable passes, 1 when any is rejected (so CI fails), 2 on bad usage or an invalid spec.
//
// The catalog file holds one catalog ({"tables":[...]}, docs/sql-guard.md), a whole GET /api/sources/:id
// response saved as is (its `catalog` field is used; editors and admins see it), or an object of either by
// source id ({"<sourceId>": {"tables":[...]}}); stdin lines then name theirs with "sourceId".
// SQL_GUARD_EXTRA_FUNCTIONS, SQL_GUARD_EXTRA_TYPES and SQL_MAX_LENGTH apply as in the server.
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { type Catalog, CatalogSchema } from "../lib/catalog/types.ts";
import { variables } from "../lib/config/variables.ts";
import { dashboardSpecSchema } from "../lib/dashboards/spec.ts";
import { type GuardVerdict, createGuard, guardOptionsFromConfig, loadGuardParser } from "../lib/sql-guard/index.ts";

const USAGE = `usage: npm run --silent guard -- --catalog FILE [--dashboard FILE]
  stdin: JSON lines {"sql": "..."} (plus "sourceId" when FILE maps source ids to catalogs)
  stdout: one JSON line per input: {"ok":true} or {"ok":false,"reason":"...","message":"..."}
  FILE (--catalog): a catalog {"tables":[...]}, a saved GET /api/sources/:id response, or an object of those by source id
  --dashboard FILE: check every panel of a dashboard spec (or a saved GET /api/dashboards/:id response) instead of reading stdin
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

const ONE_CATALOG_FORMS =
  'a catalog {"tables":[...]} or a source as GET /api/sources/:id returns it to an editor (its "catalog" field is used)';
const CATALOG_FORMS = `${ONE_CATALOG_FORMS.replace(" or a source", ", a source")}, or an object of those by source id`;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A catalog, from a bare catalog or from a source response (its `catalog` field); undefined when `value` is
 * neither, a string saying what is wrong when it is one of them but unusable.
 */
function catalogOf(value: unknown, what: string): Catalog | string | undefined {
  if (!isObject(value)) return undefined;
  if ("tables" in value) {
    const one = CatalogSchema.safeParse(value);
    return one.success ? one.data : `${what} is not a catalog: ${one.error.issues[0]?.message}`;
  }
  if ("catalog" in value || ("id" in value && "workspaceId" in value)) {
    if (!isObject(value.catalog)) {
      return `${what} is a source without a catalog (never refreshed, or fetched as a viewer: GET /api/sources/:id shows "catalog" to editors and admins)`;
    }
    return catalogOf(value.catalog, `the "catalog" field of ${what}`);
  }
  return undefined;
}

async function loadCatalogs(path: string): Promise<Catalogs> {
  const json = await readJsonFile(path, "catalog");
  const one = catalogOf(json, `the catalog file ${path}`);
  if (typeof one === "string") throw new UsageError(one);
  if (one) return { kind: "one", catalog: one };
  if (isObject(json)) {
    const catalogs = new Map<string, Catalog>();
    for (const [sourceId, value] of Object.entries(json)) {
      const c = catalogOf(value, `the entry "${sourceId}" of ${path}`);
      if (typeof c === "string") throw new UsageError(c);
      if (!c) throw new UsageError(`the entry "${sourceId}" of ${path} is not ${ONE_CATALOG_FORMS}`);
      catalogs.set(sourceId, c);
    }
    if (catalogs.size > 0) return { kind: "bySource", catalogs };
  }
  throw new UsageError(`the catalog file ${path} must hold ${CATALOG_FORMS}`);
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
  return createGuard({
    ...guardOptionsFromConfig({
      SQL_GUARD_EXTRA_FUNCTIONS: extra.data,
      SQL_GUARD_EXTRA_TYPES: types.data,
      SQL_MAX_LENGTH: max.data,
    }),
    cacheSize: 0,
  });
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
  const json = await readJsonFile(path, "dashboard");
  // A whole GET /api/dashboards/:id response carries the spec in its "spec" field.
  const fromResponse = isObject(json) && !("panels" in json) && isObject(json.spec);
  const parsed = dashboardSpecSchema(0).safeParse(fromResponse ? json.spec : json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(spec)"}: ${i.message}`).join("\n");
    const which = fromResponse ? `the "spec" field of the dashboard file ${path}` : `the dashboard file ${path}`;
    throw new UsageError(
      `${which} is not a valid dashboard spec (give a spec, or GET /api/dashboards/:id's response, whose "spec" field is used):\n${issues}`,
    );
  }
  let rejected = 0;
  const variables = parsed.data.variables ?? [];
  for (const panel of parsed.data.panels) {
    const catalog = pick(catalogs, panel.sourceId);
    const verdict: Record<string, unknown> =
      typeof catalog === "string"
        ? { ok: false, reason: "catalog", message: catalog }
        : answer(guard.check(panel.sql, catalog, undefined, variables));
    if (!verdict.ok) rejected++;
    write({ id: panel.id, ...verdict });
  }
  // A query variable's SQL lists its options and is guarded like a panel's, naming no variable of its own.
  for (const v of variables) {
    if (v.type !== "query" || v.sourceId === undefined || v.sql === undefined) continue;
    const catalog = pick(catalogs, v.sourceId);
    const verdict: Record<string, unknown> =
      typeof catalog === "string" ? { ok: false, reason: "catalog", message: catalog } : answer(guard.check(v.sql, catalog));
    if (!verdict.ok) rejected++;
    write({ variable: v.name, ...verdict });
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
