// The guard's allowlists checked against everything the real server has, not against our own lists: every
// function, type and operator in the embedded PostgreSQL's pg_proc, pg_type and pg_operator that is not on an
// allowlist must be refused, by every spelling that reaches it.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDatabase } from "../testing/pg.ts";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { DEFAULT_ALLOWED_FUNCTIONS, type Guard, createGuard, loadGuardParser } from "./index.ts";
import { SYNTAX_ONLY_FUNCTIONS } from "./allowlist.ts";
import { ALLOWED_OPERATORS } from "./operators.ts";
import { ALLOWED_TYPES } from "./types.ts";

let client: pg.Client;
let guard: Guard;

beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard({ cacheSize: 0 });
  const { url } = await createDatabase("guardgen");
  client = new pg.Client({ connectionString: url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
});

/** PostgreSQL's own quoting, so every name is written the way the server reads it back. */
async function quoted(names: string[]): Promise<string[]> {
  const r = await client.query<{ q: string }>("SELECT quote_ident(n) AS q FROM unnest($1::text[]) WITH ORDINALITY AS u(n, i) ORDER BY i", [
    names,
  ]);
  return r.rows.map((row) => row.q);
}

/** Runs every case and reports the ones the guard got wrong (one assertion, a readable list). */
function failures(cases: [string, string][]): string[] {
  const bad: string[] = [];
  for (const [sql, reason] of cases) {
    const v = guard.check(sql, DEMO_CATALOG);
    if (v.ok || v.reason !== reason) bad.push(`${sql} → ${v.ok ? "accepted" : v.reason} (expected ${reason})`);
  }
  return bad;
}

describe("generated from the server's catalogs", () => {
  test("every pg_catalog function not on the allowlist is refused as f(x) and as (x).f", async () => {
    const r = await client.query<{ proname: string }>(
      `SELECT DISTINCT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname IN ('pg_catalog', 'information_schema') ORDER BY 1`,
    );
    const allowed = new Set(DEFAULT_ALLOWED_FUNCTIONS);
    const names = r.rows.map((row) => row.proname).filter((n) => !allowed.has(n));
    expect(names.length).toBeGreaterThan(2000);
    const q = await quoted(names);
    const cases: [string, string][] = [];
    q.forEach((name, i) => {
      cases.push([`SELECT ${name}(1)`, "function"]);
      cases.push([`SELECT (1).${name}`, "function"]);
      // The grammar's own helpers (LIKE ... ESCAPE, OVERLAPS, ...) are allowed only as it writes them.
      if (!SYNTAX_ONLY_FUNCTIONS.has(names[i])) cases.push([`SELECT pg_catalog.${name}('x')`, "function"]);
      cases.push([`SELECT name FROM services s WHERE (s.name).${name} IS NULL`, "function"]);
    });
    expect(failures(cases)).toEqual([]);
  });

  test("a cast to every type not on the type allowlist is refused, plain and as an array", async () => {
    const r = await client.query<{ typname: string; nspname: string; typrelid: number; elem: string | null }>(
      `SELECT t.typname, n.nspname, t.typrelid::int AS typrelid, e.typname AS elem
         FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
         LEFT JOIN pg_type e ON e.oid = t.typelem AND e.typarray = t.oid
        WHERE n.nspname IN ('pg_catalog', 'information_schema') ORDER BY 1`,
    );
    const rowTypes = new Set(r.rows.filter((t) => t.typrelid !== 0).map((t) => t.typname));
    /** catalog for types that read the system catalogs, function for every other type outside the list. */
    const expected = (name: string, schema: string): string =>
      schema === "information_schema" || /^reg/.test(name) || name === "aclitem" || rowTypes.has(name) ? "catalog" : "function";
    const types = r.rows.filter((t) => !ALLOWED_TYPES.has(t.elem ?? t.typname));
    expect(types.length).toBeGreaterThan(300);
    const q = await quoted(types.map((t) => t.typname));
    const cases: [string, string][] = [];
    types.forEach((t, i) => {
      const reason = expected(t.elem ?? t.typname, t.nspname);
      const spelled = `${t.nspname}.${q[i]}`;
      cases.push([`SELECT NULL::${spelled}`, reason]);
      cases.push([`SELECT CAST(NULL AS ${spelled}[])`, reason]);
      if (t.nspname === "pg_catalog") {
        cases.push([`SELECT NULL::${q[i]}`, reason]);
        if (!t.elem) cases.push([`SELECT '{}'::_${t.typname.replace(/"/g, '""')}`, reason]);
      }
    });
    expect(failures(cases)).toEqual([]);
  });

  test("every allowlisted type is accepted, plain and as an array", async () => {
    const cases = [...ALLOWED_TYPES].map((t) => `SELECT NULL::pg_catalog.${t === "char" ? '"char"' : t}, '{}'::_${t}`);
    for (const sql of cases) expect(guard.check(sql, DEMO_CATALOG), sql).toMatchObject({ ok: true });
  });

  test("every operator not on the operator allowlist is refused, infix and as OPERATOR(pg_catalog.op)", async () => {
    const r = await client.query<{ oprname: string; prefix: boolean }>(
      `SELECT oprname, bool_and(oprkind = 'l') AS prefix FROM pg_operator GROUP BY oprname ORDER BY 1`,
    );
    const ops = r.rows.filter((o) => !ALLOWED_OPERATORS.has(o.oprname));
    expect(ops.length).toBeGreaterThan(40);
    const cases: [string, string][] = [];
    for (const { oprname, prefix } of ops) {
      cases.push([prefix ? `SELECT ${oprname} 1` : `SELECT 1 ${oprname} 1`, "function"]);
      cases.push([`SELECT 1 OPERATOR(pg_catalog.${oprname}) 1`, "function"]);
      cases.push([`SELECT 1 WHERE 1 OPERATOR(pg_catalog.${oprname}) ANY (SELECT 1)`, "function"]);
    }
    expect(failures(cases)).toEqual([]);
  });

  test("every allowlisted operator the server has is accepted", async () => {
    const r = await client.query<{ oprname: string }>("SELECT DISTINCT oprname FROM pg_operator ORDER BY 1");
    const present = new Set(r.rows.map((o) => o.oprname));
    for (const op of ALLOWED_OPERATORS) {
      expect(present.has(op), op).toBe(true);
      expect(guard.check(`SELECT 2 ${op} 2, 2 OPERATOR(pg_catalog.${op}) 2`, DEMO_CATALOG), op).toMatchObject({ ok: true });
    }
  });
});
