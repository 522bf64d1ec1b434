// Dashboard variables in the guard's macro expansion: bound as parameters, a multi-value one as one array,
// unknown ones refused with `structure`; literals, quoted identifiers and dollar quotes untouched.
import { beforeAll, describe, expect, test } from "vitest";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { type Guard, type VariableDecl, createGuard, loadGuardParser } from "./index.ts";
import { expandMacros } from "./macros.ts";

let guard: Guard;
beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard({ cacheSize: 0 });
});

const VARS: VariableDecl[] = [{ name: "service" }, { name: "routes", multi: true }, { name: "status_code" }];
const FROM = "FROM http_requests WHERE $__timeFilter(ts)";

function ok(sql: string, vars: readonly VariableDecl[] = VARS) {
  const v = guard.check(sql, DEMO_CATALOG, undefined, vars);
  if (!v.ok) throw new Error(`${v.reason}: ${v.message}`);
  return v;
}

describe("variables become bind parameters", () => {
  test("$name and ${name} are one parameter, numbered with the macros by first appearance", () => {
    const v = ok(`SELECT count(*) ${FROM} AND service = $service AND route <> \${service}`);
    expect(v.sql).toBe("SELECT count(*) FROM http_requests WHERE (ts BETWEEN $1 AND $2) AND service = $3 AND route <> $3");
    expect(v.params).toEqual(["from", "to", { variable: "service", array: false }]);
  });

  test.each([
    ["IN ($routes)", "route = ANY($3)"],
    ["in(${routes})", "route = ANY($3)"],
    ["IN (  $routes\n)", "route = ANY($3)"],
    ["NOT IN ($routes)", "route <> ALL($3)"],
    ["not\tin ( ${routes} )", "route <> ALL($3)"],
  ])("a multi-value variable as route %s becomes %s, one array parameter", (written, expanded) => {
    const v = ok(`SELECT count(*) ${FROM} AND route ${written}`);
    expect(v.sql).toBe(`SELECT count(*) FROM http_requests WHERE (ts BETWEEN $1 AND $2) AND ${expanded}`);
    expect(v.params).toEqual(["from", "to", { variable: "routes", array: true }]);
  });

  test("a single-value variable in IN (...) stays a plain parameter", () => {
    expect(ok(`SELECT count(*) ${FROM} AND service IN ($service, 'x')`).sql).toContain("service IN ($3, 'x')");
  });

  test("inside macro arguments too", () => {
    const v = ok(`SELECT $__timeGroup(ts, '1m'), count(*) FILTER (WHERE route IN ($routes)) ${FROM} GROUP BY 1`);
    expect(v.sql).toContain("FILTER (WHERE route = ANY($1))");
  });

  test("text inside literals, quoted identifiers, dollar quotes and E'' strings is untouched", () => {
    const sql = `SELECT '$service' AS a, 1 AS "\${service}", $q$ $routes $q$ AS c, E'\\' $service' AS d, 'IN ($routes)' AS e ${FROM}`;
    const v = ok(sql);
    expect(v.sql).toContain(`'$service' AS a, 1 AS "\${service}", $q$ $routes $q$ AS c, E'\\' $service' AS d, 'IN ($routes)' AS e`);
    expect(v.params).toEqual(["from", "to"]);
  });
});

describe("refused with structure, naming the variable", () => {
  test.each([
    ["an unknown $x", `SELECT count(*) ${FROM} AND service = $x`, /unknown variable \$x/],
    ["an unknown ${x}", `SELECT count(*) ${FROM} AND service = \${x}`, /unknown variable \$x/],
    ["an unknown variable in IN", `SELECT count(*) ${FROM} AND service IN ($nope)`, /unknown variable \$nope/],
    ["a multi-value variable outside IN", `SELECT count(*) ${FROM} AND route = $routes`, /\$routes is a multi-value variable/],
    ["a multi-value variable beside others in IN", `SELECT count(*) ${FROM} AND route IN ($routes, 'x')`, /multi-value/],
    ["a Grafana format", `SELECT count(*) ${FROM} AND service = \${service:csv}`, /formats are not supported/],
    ["an unclosed ${", `SELECT count(*) ${FROM} AND service = \${service`, /not closed/],
    ["an unknown ${__x}", `SELECT count(*) ${FROM} AND service = \${__x}`, /unknown macro/],
    ["${name} glued to digits", `SELECT count(*) ${FROM} AND status = \${status_code}5`, /followed directly/],
    ["$__timeFrom() glued to digits", `SELECT count(*) ${FROM} AND ts > $__timeFrom()1`, /followed directly/],
    ["a variable as part of a name", `SELECT count(*) FROM http_\${service} WHERE $__timeFilter(ts)`, /./],
  ])("%s", (_n, sql, message) => {
    const v = guard.check(sql, DEMO_CATALOG, undefined, VARS);
    expect(v).toMatchObject({ ok: false, reason: "structure" });
    if (!v.ok) expect(v.message).toMatch(message);
  });

  test("without declarations every $name is unknown", () => {
    expect(guard.check(`SELECT count(*) ${FROM} AND service = $service`, DEMO_CATALOG)).toMatchObject({
      ok: false,
      reason: "structure",
      message: expect.stringContaining("unknown variable $service"),
    });
  });

  test("a comment still wins over an unknown variable", () => {
    expect(guard.check(`SELECT $x ${FROM} -- hi`, DEMO_CATALOG)).toMatchObject({ ok: false, reason: "comment" });
  });
});

describe("the verdict cache keys on the declarations", () => {
  test("the same text is checked again when a variable is declared, undeclared, or turns multi", () => {
    const cached = createGuard({ cacheSize: 100 });
    const sql = `SELECT count(*) ${FROM} AND route IN ($r)`;
    expect(cached.check(sql, DEMO_CATALOG, "v1", [{ name: "r" }])).toMatchObject({ ok: true, params: ["from", "to", { array: false }] });
    expect(cached.check(sql, DEMO_CATALOG, "v1", [{ name: "r", multi: true }])).toMatchObject({
      ok: true,
      params: ["from", "to", { array: true }],
    });
    expect(cached.check(sql, DEMO_CATALOG, "v1")).toMatchObject({ ok: false, reason: "structure" });
    expect(cached.check(sql, DEMO_CATALOG, "v1", [{ name: "r" }])).toMatchObject({ ok: true, params: ["from", "to", { array: false }] });
  });
});

describe("originalOffset maps the expanded text back to the text as written", () => {
  test("copied text maps exactly; a replacement maps to where its macro or variable starts", () => {
    const sql = "SELECT x FROM t WHERE $__timeFilter(ts) AND s = ${service} AND r NOT IN ($routes) AND bad(1)";
    const e = expandMacros(sql, VARS);
    if (!e.ok) throw new Error(e.message);
    expect(e.sql).toBe("SELECT x FROM t WHERE (ts BETWEEN $1 AND $2) AND s = $3 AND r <> ALL($4) AND bad(1)");
    const at = (needle: string, text: string) => text.indexOf(needle);
    // Text before, between and after the replacements.
    for (const needle of ["SELECT", "FROM t", "AND s =", "AND bad(1)", "bad(1)"]) {
      expect(e.originalOffset(at(needle, e.sql))).toBe(at(needle, sql));
    }
    // Inside a replacement: its start as written.
    expect(e.originalOffset(at("BETWEEN", e.sql))).toBe(at("$__timeFilter", sql));
    expect(e.originalOffset(at("$3", e.sql))).toBe(at("${service}", sql));
    expect(e.originalOffset(at("ALL", e.sql))).toBe(at("NOT IN", sql));
    expect(e.originalOffset(e.sql.length)).toBe(sql.length);
    expect(e.originalOffset(0)).toBe(0);
    expect(e.originalOffset(-5)).toBe(0);
  });

  test("with no replacement it is the identity", () => {
    const e = expandMacros("SELECT 1");
    if (!e.ok) throw new Error(e.message);
    for (let i = 0; i <= 8; i++) expect(e.originalOffset(i)).toBe(i);
  });
});
