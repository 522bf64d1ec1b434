// The size declarations checked against the embedded PostgreSQL's own catalogs: every allowlisted function and
// operator has a declaration, every overload the server has for it (argument count, defaults, VARIADIC, kind)
// is covered, and no declaration claims an overload the server does not have.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { createDatabase } from "../testing/pg.ts";
import { DEFAULT_ALLOWED_FUNCTIONS, SYNTAX_ONLY_FUNCTIONS } from "./allowlist.ts";
import { FUNCTION_DECLARATIONS, OPERATOR_DECLARATIONS, coversArity } from "./declarations.ts";
import { createGuard, loadGuardParser } from "./index.ts";
import { ALLOWED_OPERATORS } from "./operators.ts";

let client: pg.Client;

beforeAll(async () => {
  await loadGuardParser();
  const { url } = await createDatabase("decl");
  client = new pg.Client({ connectionString: url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
});

interface Proc {
  proname: string;
  prokind: string;
  pronargs: number;
  pronargdefaults: number;
  variadic: boolean;
}

async function procs(names: string[]): Promise<Proc[]> {
  const r = await client.query<Proc>(
    `SELECT p.proname, p.prokind::text AS prokind, p.pronargs::int AS pronargs, p.pronargdefaults::int AS pronargdefaults,
            p.provariadic <> 0 AS variadic
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'pg_catalog' AND p.proname = ANY($1) ORDER BY 1, 3`,
    [names],
  );
  return r.rows;
}

describe("function declarations against pg_proc", () => {
  const names = [...new Set([...DEFAULT_ALLOWED_FUNCTIONS, ...SYNTAX_ONLY_FUNCTIONS])];

  test("every allowlisted name has a declaration", () => {
    expect(names.filter((n) => !FUNCTION_DECLARATIONS[n])).toEqual([]);
  });

  test("every overload of every declared core function is covered, with its kind", async () => {
    const declared = Object.keys(FUNCTION_DECLARATIONS);
    const rows = await procs(declared);
    expect(rows.length).toBeGreaterThan(200);
    const problems: string[] = [];
    for (const p of rows) {
      const d = FUNCTION_DECLARATIONS[p.proname];
      if (!d.kind.includes(p.prokind)) problems.push(`${p.proname}: pg_proc kind ${p.prokind}, declared ${d.kind}`);
      if (p.variadic) {
        if (d.variadicFrom === undefined || d.variadicFrom > p.pronargs)
          problems.push(`${p.proname}: VARIADIC overload of ${p.pronargs} not covered`);
        continue;
      }
      for (let n = p.pronargs - p.pronargdefaults; n <= p.pronargs; n++) {
        if (!coversArity(d, n)) problems.push(`${p.proname}: overload with ${n} arguments not covered`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("no declaration claims an overload the server does not have", async () => {
    const rows = await procs(Object.keys(FUNCTION_DECLARATIONS));
    const problems: string[] = [];
    for (const [name, d] of Object.entries(FUNCTION_DECLARATIONS)) {
      const own = rows.filter((p) => p.proname === name);
      if (d.extension || d.syntax) {
        // Written by the grammar, or an extension's: the embedded server has no pg_catalog function of that name.
        if (own.length > 0) problems.push(`${name}: declared ${d.extension ?? "syntax"} but pg_proc has it`);
        continue;
      }
      if (own.length === 0) problems.push(`${name}: not in pg_proc`);
      for (const n of d.arities) {
        if (!own.some((p) => n >= p.pronargs - p.pronargdefaults && n <= p.pronargs))
          problems.push(`${name}: no overload with ${n} arguments`);
      }
      if (d.variadicFrom !== undefined && !own.some((p) => p.variadic)) problems.push(`${name}: declared variadic but is not`);
    }
    expect(problems).toEqual([]);
  });

  test("a call with an argument count no declaration covers is refused, naming the function", async () => {
    const guard = createGuard({ cacheSize: 0 });
    const problems: string[] = [];
    for (const name of DEFAULT_ALLOWED_FUNCTIONS) {
      const d = FUNCTION_DECLARATIONS[name];
      if (d.variadicFrom !== undefined || d.syntax || d.kind !== "f") continue;
      const n = Math.max(...d.arities) + 1;
      // Quoted: EXTRACT and POSITION are also keywords with a grammar of their own.
      const sql = `SELECT "${name}"(${Array.from({ length: n }, () => "1").join(", ")})`;
      const v = guard.check(sql, DEMO_CATALOG);
      if (v.ok || v.reason !== "function" || !v.message.includes(name)) problems.push(`${sql} → ${v.ok ? "accepted" : v.message}`);
    }
    expect(problems).toEqual([]);
  });
});

describe("operator declarations against pg_operator", () => {
  test("every allowlisted operator has a declaration and every declaration is allowlisted", () => {
    expect([...ALLOWED_OPERATORS].filter((o) => !OPERATOR_DECLARATIONS[o])).toEqual([]);
    expect(Object.keys(OPERATOR_DECLARATIONS).filter((o) => !ALLOWED_OPERATORS.has(o))).toEqual([]);
  });

  test("every form (infix, prefix) the server has for an allowlisted operator is covered, and only those", async () => {
    const r = await client.query<{ oprname: string; kinds: string[] }>(
      "SELECT oprname, array_agg(DISTINCT oprkind::text) AS kinds FROM pg_operator WHERE oprname = ANY($1) GROUP BY oprname",
      [[...ALLOWED_OPERATORS]],
    );
    const problems: string[] = [];
    for (const { oprname, kinds } of r.rows) {
      const d = OPERATOR_DECLARATIONS[oprname];
      for (const k of kinds) if (!d.kinds.includes(k as "b" | "l")) problems.push(`${oprname}: form ${k} not covered`);
      for (const k of d.kinds) if (!kinds.includes(k)) problems.push(`${oprname}: declared form ${k} the server does not have`);
    }
    expect(r.rows.length).toBe(ALLOWED_OPERATORS.size);
    expect(problems).toEqual([]);
  });
});
