import { beforeAll, describe, expect, test } from "vitest";
import type { GuardReason } from "./verdict.ts";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { type Guard, createGuard, loadGuardParser } from "./index.ts";

let guard: Guard;
beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard({ cacheSize: 0 });
});

/** [family, statement, expected reason]. Every statement is checked against DEMO_CATALOG. */
const HOSTILE: [string, string, GuardReason][] = [
  // 1. empty
  ["empty string", "", "empty"],
  ["whitespace", "   \n\t\r\f\v ", "empty"],
  ["semicolons", ";;;", "empty"],
  ["whitespace and semicolons", " ; \n ; ", "empty"],

  // 2. comments (from the real scanner)
  ["line comment", "SELECT 1 -- trailing", "comment"],
  ["block comment first", "/* leading */ SELECT 1", "comment"],
  ["nested block comment", "SELECT /* nested /* inner */ still */ 1", "comment"],
  ["comment hiding a statement", "SELECT 1; -- DROP TABLE services", "comment"],
  ["bare comment marker", "SELECT count(*) FROM services --", "comment"],
  ["comment in macro args", "SELECT $__timeGroup(ts /* c */, '5m') FROM http_requests WHERE $__timeFilter(ts)", "comment"],
  ["unterminated block comment", "SELECT 1 /* unterminated", "comment"],
  ["comment on its own line", "--\nSELECT 1", "comment"],
  ["comment after a string", "SELECT 'a' -- 'b'", "comment"],
  ["comment with an unknown macro", "SELECT $__nope /* x */", "comment"],

  // 3. structure
  ["two selects", "SELECT 1; SELECT 2", "structure"],
  ["select then drop", "SELECT 1; DROP TABLE services", "structure"],
  ["select then delete", "SELECT * FROM services; DELETE FROM services", "structure"],
  ["transaction wrapper", "BEGIN; SELECT 1; COMMIT", "structure"],
  ["truncated select", "SELECT * FROM", "structure"],
  ["misspelled keyword", "SELEC 1", "structure"],
  ["hand-written $1", "SELECT $1", "structure"],
  ["hand-written $1 with a cast", "SELECT $1::text", "structure"],
  ["hand-written $n beside a macro", "SELECT * FROM http_requests WHERE ts > $1 AND $__timeFilter(ts)", "structure"],
  ["macro without parentheses", "SELECT $__timeFrom", "structure"],
  ["macro with arguments it does not take", "SELECT $__timeFrom(now())", "structure"],
  ["unknown macro", "SELECT $__unknown(ts)", "structure"],
  ["macro names are case-sensitive", "SELECT * FROM http_requests WHERE $__TIMEFILTER(ts)", "structure"],
  ["timeFilter without a column", "SELECT 1 FROM http_requests WHERE $__timeFilter()", "structure"],
  ["timeFilter with two columns", "SELECT 1 FROM http_requests WHERE $__timeFilter(ts, ts)", "structure"],
  ["timeGroup with a bad step", "SELECT $__timeGroup(ts, 'soon') FROM http_requests WHERE $__timeFilter(ts)", "structure"],
  ["timeGroup with a spliced step", "SELECT $__timeGroup(ts, now()) FROM http_requests WHERE $__timeFilter(ts)", "structure"],
  ["unclosed macro", "SELECT 1 FROM http_requests WHERE $__timeFilter(ts", "structure"],
  ["unterminated string", "SELECT 'unterminated", "structure"],
  ["unterminated quoted identifier", 'SELECT "unterminated', "structure"],
  ["unterminated dollar quote", "SELECT $$unterminated", "structure"],
  ["NUL byte hiding a statement", "SELECT 1\u0000; DROP TABLE services", "structure"],
  ["unpaired surrogate", "SELECT '\ud800'", "structure"],
  ["longer than SQL_MAX_LENGTH", `SELECT ${"1+".repeat(10_000)}1`, "structure"],
  ["nested too deeply for the parser", `SELECT ${"1+".repeat(6_000)}1`, "structure"],

  // 4. keyword: anything but a read-only query
  ["INSERT", "INSERT INTO services VALUES ('x', 'y', 'z')", "keyword"],
  ["UPDATE", "UPDATE services SET tier = 'x'", "keyword"],
  ["DELETE", "DELETE FROM services", "keyword"],
  ["MERGE", "MERGE INTO services s USING services t ON s.name = t.name WHEN MATCHED THEN DELETE", "keyword"],
  ["DROP", "DROP TABLE services", "keyword"],
  ["CREATE", "CREATE TABLE x (a int)", "keyword"],
  ["CREATE TABLE AS", "CREATE TABLE stolen AS SELECT * FROM services", "keyword"],
  ["ALTER", "ALTER TABLE services ADD COLUMN x int", "keyword"],
  ["TRUNCATE", "TRUNCATE services", "keyword"],
  ["GRANT", "GRANT ALL ON services TO public", "keyword"],
  ["COPY TO", "COPY services TO STDOUT", "keyword"],
  ["COPY FROM PROGRAM", "COPY services FROM PROGRAM 'id'", "keyword"],
  ["SET", "SET statement_timeout = 0", "keyword"],
  ["SET ROLE", "SET ROLE postgres", "keyword"],
  ["RESET", "RESET ALL", "keyword"],
  ["SHOW", "SHOW ALL", "keyword"],
  ["CALL", "CALL do_things()", "keyword"],
  ["DO", "DO $$ BEGIN PERFORM 1; END $$", "keyword"],
  ["EXPLAIN", "EXPLAIN ANALYZE SELECT * FROM services", "keyword"],
  ["LOCK", "LOCK TABLE services", "keyword"],
  ["PREPARE", "PREPARE p AS SELECT 1", "keyword"],
  ["EXECUTE", "EXECUTE p", "keyword"],
  ["LISTEN", "LISTEN ch", "keyword"],
  ["NOTIFY", "NOTIFY ch, 'x'", "keyword"],
  ["VACUUM", "VACUUM services", "keyword"],
  ["COMMIT", "COMMIT", "keyword"],
  ["DISCARD", "DISCARD ALL", "keyword"],
  ["CHECKPOINT", "CHECKPOINT", "keyword"],
  ["REFRESH", "REFRESH MATERIALIZED VIEW mv", "keyword"],
  ["DECLARE CURSOR", "DECLARE c CURSOR FOR SELECT 1", "keyword"],
  ["LOAD", "LOAD 'evil'", "keyword"],
  ["ALTER SYSTEM", "ALTER SYSTEM SET work_mem = '1GB'", "keyword"],
  ["SELECT INTO", "SELECT * INTO stolen FROM services", "keyword"],
  ["FOR UPDATE", "SELECT * FROM services FOR UPDATE", "keyword"],
  ["FOR SHARE NOWAIT", "SELECT * FROM services FOR SHARE NOWAIT", "keyword"],
  ["FOR NO KEY UPDATE", "SELECT * FROM services FOR NO KEY UPDATE SKIP LOCKED", "keyword"],
  ["FOR KEY SHARE", "SELECT * FROM services FOR KEY SHARE", "keyword"],
  ["FOR UPDATE OF", "SELECT * FROM services FOR UPDATE OF services", "keyword"],
  ["locking a set operation", "(SELECT name FROM services) UNION (SELECT name FROM services) FOR UPDATE", "keyword"],
  ["locking in a sub-select", "SELECT * FROM (SELECT * FROM services FOR UPDATE) s", "keyword"],
  ["writable CTE: DELETE", "WITH gone AS (DELETE FROM services RETURNING *) SELECT * FROM gone", "keyword"],
  ["writable CTE: INSERT", "WITH x AS (INSERT INTO services VALUES ('a','b','c') RETURNING name) SELECT * FROM x", "keyword"],
  ["writable CTE: UPDATE", "WITH x AS (UPDATE services SET tier = 't' RETURNING *) SELECT count(*) FROM x", "keyword"],
  [
    "writable CTE: MERGE",
    "WITH x AS (MERGE INTO services s USING services t ON true WHEN MATCHED THEN DELETE RETURNING *) SELECT 1",
    "keyword",
  ],
  ["writable CTE in a sub-select", "SELECT * FROM (WITH d AS (DELETE FROM services RETURNING *) SELECT * FROM d) s", "keyword"],
  ["writable CTE nested in a CTE", "WITH a AS (WITH b AS (DELETE FROM services RETURNING *) SELECT * FROM b) SELECT * FROM a", "keyword"],
  ["WITH ... INSERT", "WITH x AS (SELECT 1) INSERT INTO services SELECT * FROM x", "keyword"],
  ["keyword wins over function", "WITH x AS (DELETE FROM services RETURNING pg_sleep(1)) SELECT * FROM x", "keyword"],

  // 5. function: allowlist, schema-qualified calls, functions in FROM, value functions
  ["sleep", "SELECT pg_sleep(10)", "function"],
  ["sleep for", "SELECT pg_sleep_for('5 minutes')", "function"],
  ["sleep in WHERE", "SELECT count(*) FROM services WHERE pg_sleep(1) IS NOT NULL", "function"],
  ["file read", "SELECT pg_read_file('/etc/passwd')", "function"],
  ["binary file read", "SELECT pg_read_binary_file('/etc/passwd')", "function"],
  ["directory listing in FROM", "SELECT * FROM pg_ls_dir('.')", "function"],
  ["file stat", "SELECT pg_stat_file('postgresql.conf')", "function"],
  ["large object import", "SELECT lo_import('/etc/passwd')", "function"],
  ["large object read", "SELECT lo_get(16384)", "function"],
  ["large object export", "SELECT lo_export(16384, '/tmp/x')", "function"],
  ["dblink in FROM", "SELECT * FROM dblink('host=evil', 'SELECT 1') AS t(x int)", "function"],
  ["dblink_exec", "SELECT dblink_exec('host=evil', 'DROP TABLE x')", "function"],
  ["query_to_xml", "SELECT query_to_xml('SELECT * FROM pg_authid', true, true, '')", "function"],
  ["xpath", "SELECT xpath('/a', '<a/>'::xml)", "function"],
  ["XMLTABLE", "SELECT * FROM xmltable('/r' PASSING '<r/>' COLUMNS x int)", "function"],
  ["XMLPARSE with an entity", "SELECT xmlparse(DOCUMENT '<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>')", "function"],
  ["XMLELEMENT", "SELECT xmlelement(name a, 'x')", "function"],
  ["current_setting", "SELECT current_setting('data_directory')", "function"],
  ["set_config", "SELECT set_config('statement_timeout', '0', false)", "function"],
  ["advisory lock", "SELECT pg_advisory_lock(1)", "function"],
  ["advisory xact lock", "SELECT pg_try_advisory_xact_lock(1)", "function"],
  ["nextval", "SELECT nextval('seq')", "function"],
  ["setval", "SELECT setval('seq', 1)", "function"],
  ["currval", "SELECT currval('seq')", "function"],
  ["terminate backend", "SELECT pg_terminate_backend(1)", "function"],
  ["cancel backend", "SELECT pg_cancel_backend(1)", "function"],
  ["reload conf", "SELECT pg_reload_conf()", "function"],
  ["version", "SELECT version()", "function"],
  ["server address", "SELECT inet_server_addr()", "function"],
  ["backend pid", "SELECT pg_backend_pid()", "function"],
  ["txid", "SELECT txid_current()", "function"],
  ["to_regclass", "SELECT to_regclass('pg_authid')", "function"],
  ["privilege probe", "SELECT has_table_privilege('pg_authid', 'SELECT')", "function"],
  ["row_to_json", "SELECT row_to_json(s) FROM services s", "function"],
  ["schema-qualified in public", "SELECT public.pg_sleep(1)", "function"],
  ["pg_catalog-qualified but not allowed", "SELECT pg_catalog.pg_sleep(1)", "function"],
  ["allowed name in another schema", "SELECT myschema.count(*) FROM services", "function"],
  ["three-part function name", "SELECT db.pg_catalog.count(*) FROM services", "function"],
  ["quoted function name", 'SELECT "pg_sleep"(1)', "function"],
  ["Unicode-escaped function name", 'SELECT U&"\\0070g_sleep"(1)', "function"],
  ["Unicode escape with UESCAPE", "SELECT U&\"pg!005fsleep\" UESCAPE '!' (1)", "function"],
  ["function in FROM", "SELECT * FROM pg_sleep(1)", "function"],
  ["function in LATERAL", "SELECT * FROM services s, LATERAL pg_ls_dir('.') f", "function"],
  ["function in ROWS FROM", "SELECT * FROM ROWS FROM (generate_series(1, 3), pg_sleep(1)) AS r(a, b)", "function"],
  ["current_user", "SELECT current_user", "function"],
  ["session_user", "SELECT session_user", "function"],
  ["current_role", "SELECT current_role", "function"],
  ["user", "SELECT user", "function"],
  ["current_schema", "SELECT current_schema", "function"],
  ["current_catalog", "SELECT current_catalog", "function"],
  ["system_user", "SELECT SYSTEM_USER", "function"],
  ["value function in FROM", "SELECT * FROM current_user", "function"],
  ["JSON_OBJECT syntax", "SELECT json_object('a': 1)", "function"],
  ["JSON_VALUE syntax", "SELECT JSON_VALUE('{\"a\":1}'::jsonb, '$.a')", "function"],
  ["JSON_TABLE", "SELECT * FROM JSON_TABLE('[1]'::jsonb, '$[*]' COLUMNS (a int PATH '$')) AS j", "function"],
  ["COLLATION FOR", "SELECT COLLATION FOR ('a')", "function"],
  ["TABLESAMPLE method", "SELECT name FROM services TABLESAMPLE BERNOULLI (10)", "function"],
  ["operator from another schema", "SELECT 1 OPERATOR(public.+) 1", "function"],
  ["ORDER BY ... USING another schema's operator", "SELECT name FROM services ORDER BY name USING OPERATOR(public.<)", "function"],
  ["ANY with another schema's operator", "SELECT 1 WHERE 1 OPERATOR(public.=) ANY (SELECT 1)", "function"],
  ["FETCH FIRST sub-select", "SELECT name FROM services FETCH FIRST (SELECT pg_backend_pid()) ROWS ONLY", "function"],
  ["setting read in a scalar sub-select", "SELECT name FROM services WHERE name = (SELECT current_setting('is_superuser'))", "function"],
  ["cast to xml", "SELECT '<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>'::xml", "function"],
  ["grammar-only helper called from another schema", "SELECT public.similar_to_escape('a')", "function"],
  ["function wins over catalog", "SELECT pg_sleep(1) FROM pg_authid", "function"],
  // ... and in every place a sub-select or expression can hide
  ["sub-select in the target list", "SELECT (SELECT pg_sleep(1)) FROM services", "function"],
  ["sub-select in WHERE IN", "SELECT name FROM services WHERE name IN (SELECT pg_sleep(1)::text)", "function"],
  ["sub-select in HAVING", "SELECT team FROM services GROUP BY team HAVING count(*) > (SELECT pg_backend_pid())", "function"],
  ["sub-select in GROUP BY", "SELECT team FROM services GROUP BY team, (SELECT pg_sleep(0))", "function"],
  ["sub-select in ORDER BY", "SELECT name FROM services ORDER BY (SELECT pg_sleep(1))", "function"],
  ["sub-select in LIMIT", "SELECT name FROM services LIMIT (SELECT 1 FROM pg_sleep(1))", "function"],
  ["sub-select in OFFSET", "SELECT name FROM services OFFSET (SELECT count(*) FROM pg_ls_dir('.'))", "function"],
  ["JOIN ON", "SELECT 1 FROM services a JOIN services b ON a.name = b.name AND pg_sleep(1) IS NULL", "function"],
  ["CASE", "SELECT CASE WHEN tier = 'x' THEN pg_sleep(1)::text END FROM services", "function"],
  ["nested in an allowed call", "SELECT coalesce(name, (SELECT pg_read_file('x'))) FROM services", "function"],
  ["VALUES list", "SELECT * FROM (VALUES (1, pg_sleep(1))) v(a, b)", "function"],
  ["FILTER", "SELECT count(*) FILTER (WHERE pg_sleep(1) IS NULL) FROM services", "function"],
  ["WITHIN GROUP", "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY pg_backend_pid()) FROM services", "function"],
  ["window PARTITION BY", "SELECT row_number() OVER (PARTITION BY pg_backend_pid()) FROM services", "function"],
  ["WINDOW clause", "SELECT rank() OVER w FROM services WINDOW w AS (ORDER BY pg_sleep(1))", "function"],
  [
    "window frame offset",
    "SELECT sum(1) OVER (ORDER BY name ROWS BETWEEN (SELECT pg_backend_pid()) PRECEDING AND CURRENT ROW) FROM services",
    "function",
  ],
  ["CTE body", "WITH x AS (SELECT pg_sleep(1)) SELECT * FROM x", "function"],
  ["nested CTE body", "WITH a AS (WITH b AS (SELECT version()) SELECT * FROM b) SELECT * FROM a", "function"],
  ["recursive CTE", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + pg_backend_pid() FROM r) SELECT * FROM r", "keyword"],
  ["UNION branch", "SELECT name FROM services UNION SELECT version()", "function"],
  ["EXCEPT branch", "SELECT name FROM services EXCEPT SELECT inet_server_addr()::text", "function"],
  ["EXISTS", "SELECT 1 WHERE EXISTS (SELECT pg_sleep(1))", "function"],
  ["ARRAY sub-select", "SELECT ARRAY(SELECT pg_ls_dir('.'))", "function"],
  ["ANY sub-select", "SELECT 1 WHERE 1 = ANY (SELECT pg_backend_pid())", "function"],
  ["CAST", "SELECT CAST(pg_sleep(1) AS text)", "function"],
  ["shorthand cast", "SELECT pg_sleep(1)::text", "function"],
  ["DISTINCT ON", "SELECT DISTINCT ON (pg_backend_pid()) name FROM services", "function"],
  ["LATERAL sub-select", "SELECT * FROM services s CROSS JOIN LATERAL (SELECT pg_sleep(1)) z", "function"],
  ["ROW constructor", "SELECT ROW(1, pg_sleep(1))", "function"],
  ["ARRAY constructor", "SELECT ARRAY[pg_backend_pid()]", "function"],
  ["argument of an allowed call", "SELECT generate_series(1, pg_backend_pid())", "function"],
  ["aggregate ORDER BY", "SELECT string_agg(name, ',' ORDER BY pg_backend_pid()) FROM services", "function"],
  ["GREATEST", "SELECT greatest(1, pg_backend_pid())", "function"],
  ["COALESCE", "SELECT COALESCE(NULL, pg_backend_pid())", "function"],
  ["IS DISTINCT FROM", "SELECT 1 WHERE 1 IS DISTINCT FROM pg_backend_pid()", "function"],
  ["type modifier position", "SELECT CAST(1 AS numeric(10, 2)) + pg_backend_pid()", "function"],
  ["join in FROM sub-select", "SELECT * FROM (services a JOIN LATERAL pg_ls_dir('.') d ON true)", "function"],
  ["GROUPING SETS", "SELECT team FROM services GROUP BY GROUPING SETS ((team), (pg_backend_pid()))", "function"],
  // attribute notation: t.f and (expr).f call f(t) when f takes a record, "any" or polymorphic argument
  ["attribute-notation call on an alias", "SELECT s.row_to_json FROM services s", "function"],
  ["attribute-notation call on a table name", "SELECT services.to_jsonb FROM services", "function"],
  ["attribute-notation call, schema-qualified table", "SELECT public.services.pg_column_size FROM services", "function"],
  ["attribute-notation call on a whole-row star", "SELECT (s.*).record_send FROM services s", "function"],
  ["attribute-notation call on a sub-select", "SELECT (SELECT s FROM services s LIMIT 1).to_json", "function"],
  ["attribute-notation call of a volatile function", "SELECT s.pg_restore_relation_stats FROM services s", "function"],
  ["attribute-notation call in WHERE", "SELECT name FROM services s WHERE s.quote_literal IS NOT NULL", "function"],
  // ... and of any function taking a catalog table's row, e.g. one created in the source database
  ["t.f on a catalog table, f not a column", "SELECT s.purge_everything FROM services s", "function"],
  ["t.f on an unaliased catalog table", "SELECT services.purge_everything FROM services", "function"],
  ["(t).f on a catalog table", "SELECT (s).purge_everything FROM services s", "function"],
  ["(t.*).f on a catalog table", "SELECT (s.*).purge_everything FROM services s", "function"],
  ["t.f from a sub-select of another level", "SELECT (SELECT s.purge_everything FROM (SELECT 1) q) FROM services s", "function"],
  [
    "t.f with the alias reused in a deeper level",
    "SELECT s.purge_everything FROM services s WHERE EXISTS (SELECT 1 FROM (SELECT 1) s)",
    "function",
  ],
  ["t.f in a JOIN condition", "SELECT 1 FROM services s JOIN services t ON s.purge_everything IS NULL", "function"],
  ["t.f on a schema-qualified catalog table", "SELECT d.purge_everything FROM metrics.deploys d WHERE $__timeFilter(d.at)", "function"],

  // 6. catalog: relations outside the source's catalog, system catalogs, catalog lookups by cast
  ["pg_authid", "SELECT * FROM pg_authid", "catalog"],
  ["qualified pg_authid", "SELECT * FROM pg_catalog.pg_authid", "catalog"],
  ["pg_shadow", "SELECT usename, passwd FROM pg_shadow", "catalog"],
  ["pg_stat_activity", "SELECT * FROM pg_stat_activity", "catalog"],
  ["pg_settings", "SELECT * FROM pg_settings", "catalog"],
  ["pg_largeobject", "SELECT * FROM pg_largeobject", "catalog"],
  ["information_schema", "SELECT * FROM information_schema.tables", "catalog"],
  ["pg_toast", "SELECT * FROM pg_toast.pg_toast_1255", "catalog"],
  ["pg_temp", "SELECT * FROM pg_temp.x", "catalog"],
  ["quoted system schema", 'SELECT * FROM "pg_catalog"."pg_class"', "catalog"],
  ["Unicode-escaped system table", 'SELECT * FROM U&"pg\\005fauthid"', "catalog"],
  ["TABLE pg_authid", "TABLE pg_authid", "catalog"],
  ["unknown table", "SELECT * FROM secrets", "catalog"],
  ["ONLY unknown table", "SELECT * FROM ONLY secrets", "catalog"],
  ["known name in another schema", "SELECT * FROM other_schema.services", "catalog"],
  ["bare name of a table outside public (runs as public.deploys)", "SELECT * FROM deploys WHERE $__timeFilter(at)", "catalog"],
  ["cross-database name", "SELECT * FROM otherdb.public.services", "catalog"],
  ["quoted name of another case", 'SELECT * FROM "Services"', "catalog"],
  ["a pg_* table of public is never assumed", "SELECT * FROM public.pg_authid", "catalog"],
  ["CTE out of scope", "SELECT * FROM (WITH y AS (SELECT 2) SELECT * FROM y) a, y", "catalog"],
  ["CTE shadowing a table reads a system table", "WITH services AS (SELECT * FROM pg_authid) SELECT * FROM services", "catalog"],
  ["non-recursive CTE cannot see a later one", "WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", "catalog"],
  ["non-recursive CTE cannot see itself", "WITH a AS (SELECT * FROM a) SELECT * FROM a", "catalog"],
  ["system table in WHERE sub-select", "SELECT * FROM services WHERE name IN (SELECT rolname FROM pg_roles)", "catalog"],
  ["system table in target sub-select", "SELECT (SELECT passwd FROM pg_shadow LIMIT 1)", "catalog"],
  ["system table in a JOIN", "SELECT * FROM services s JOIN pg_user u ON true", "catalog"],
  ["system table in a UNION", "SELECT name, team FROM services UNION SELECT usename, NULL FROM pg_user", "catalog"],
  ["system table in EXISTS", "SELECT * FROM services WHERE EXISTS (SELECT 1 FROM information_schema.columns)", "catalog"],
  ["system table in LATERAL", "SELECT * FROM services s, LATERAL (SELECT * FROM pg_roles) r", "catalog"],
  ["TABLE in a sub-select", "SELECT * FROM services WHERE name IN (TABLE pg_roles)", "catalog"],
  ["system table in a VALUES list", "VALUES ((SELECT passwd FROM pg_shadow LIMIT 1))", "catalog"],
  ["qualified name is never a CTE", "WITH pg_authid AS (SELECT 1) SELECT * FROM pg_catalog.pg_authid", "catalog"],
  ["CTE names are case-sensitive when quoted", 'WITH "X" AS (SELECT 1) SELECT * FROM x', "catalog"],
  ["regclass in a column definition list", "SELECT * FROM ROWS FROM (generate_series(1, 2)) AS t(x regclass)", "catalog"],
  ["regclass cast", "SELECT 'pg_authid'::regclass", "catalog"],
  ["regrole cast", "SELECT '10'::regrole", "catalog"],
  ["regproc via CAST", "SELECT CAST('pg_sleep' AS regproc)", "catalog"],
  ["aclitem cast probes role names", "SELECT 'nosuchrole=r/postgres'::aclitem", "catalog"],
  ["aclitem array cast", "SELECT '{postgres=r/postgres}'::aclitem[]", "catalog"],

  // 7. time: a table with a time column read without $__timeFilter / $__timeFrom
  ["no time filter", "SELECT * FROM http_requests", "time"],
  ["aggregate without time filter", "SELECT count(*) FROM host_metrics", "time"],
  ["other schema without time filter", "SELECT * FROM metrics.deploys", "time"],
  ["join without time filter", "SELECT * FROM services s JOIN http_requests r ON r.service = s.name", "time"],
  ["hand-made time bound", "SELECT * FROM http_requests WHERE ts > now() - interval '1 hour'", "time"],
  ["only an upper bound", "SELECT * FROM http_requests WHERE ts < $__timeTo()", "time"],
  ["grouped but unfiltered", "SELECT $__timeGroup(ts, '1m'), count(*) FROM http_requests GROUP BY 1", "time"],
  ["through a CTE", "WITH x AS (SELECT * FROM host_metrics) SELECT * FROM x", "time"],
  ["in a scalar sub-select", "SELECT (SELECT max(ts) FROM http_requests)", "time"],
];

describe("hostile corpus", () => {
  test("has at least 100 statements and covers every reason", () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(100);
    expect(new Set(HOSTILE.map(([, , r]) => r)).size).toBe(7);
  });

  test.each(HOSTILE)("%s → %s", (_family, sql, reason) => {
    const verdict = guard.check(sql, DEMO_CATALOG);
    expect(verdict).toMatchObject({ ok: false, reason });
    if (verdict.ok) return;
    expect(verdict.message.length).toBeLessThan(160);
    if (sql.length > 12) expect(verdict.message).not.toContain(sql);
  });
});

describe("messages name only the offender", () => {
  test.each([
    ["SELECT pg_read_file('/etc/passwd')", "function", "pg_read_file", "/etc/passwd"],
    ["SELECT * FROM dblink('host=evil password=hunter2', 'SELECT 1') AS t(x int)", "function", "dblink", "hunter2"],
    ["WITH gone AS (DELETE FROM services WHERE name = 'secret' RETURNING *) SELECT 1", "keyword", "DELETE", "secret"],
    ["SELECT * FROM pg_catalog.pg_authid WHERE rolname = 'admin'", "catalog", "pg_catalog.pg_authid", "admin"],
    ["SELECT 'top secret' FROM http_requests", "time", "http_requests", "top secret"],
    ["SELECT 'top secret' FROM services; SELECT 1", "structure", "one statement", "top secret"],
    ["SELECT 'hunter2' WHERE x = ", "structure", "does not parse", "hunter2"],
    ['SELECT U&"\\0070g_sleep"(1)', "function", "pg_sleep", "\\0070"],
    ["SET ROLE hunter2", "keyword", "SET", "hunter2"],
    ["SELECT 1 FROM services FOR NO KEY UPDATE", "keyword", "FOR NO KEY UPDATE", "services"],
    ["SELECT s.nmae FROM services s WHERE s.team = 'hunter2'", "function", "nmae is not a column of services", "hunter2"],
  ])("%s", (sql, reason, names, hidden) => {
    const verdict = guard.check(sql, DEMO_CATALOG);
    expect(verdict).toMatchObject({ ok: false, reason });
    if (verdict.ok) return;
    expect(verdict.message).toContain(names);
    expect(verdict.message).not.toContain(hidden);
  });

  test("control characters in a quoted name are not echoed raw", () => {
    const verdict = guard.check('SELECT "evil\nname"(1)', DEMO_CATALOG);
    expect(verdict).toMatchObject({ ok: false, reason: "function" });
    if (!verdict.ok) expect(verdict.message).not.toContain("\n");
  });
});

describe("look hostile, are fine", () => {
  test.each([
    "SELECT '--' AS a, '/* not a comment */' AS b FROM services",
    "SELECT '$__timeFrom()' AS literal, $q1$ $__nope $q1$ AS dollar FROM services",
    "SELECT $$ DROP TABLE services; $$ AS text",
    "SELECT $tag$ it's -- fine $tag$ AS text",
    "SELECT 'pg_sleep(1)' AS s",
    "SELECT E'it\\'s -- fine' AS s",
    "SELECT E'a\\'' AS s, 'b' AS t",
    "SELECT regexp_replace(name, '\\d+', ':id') AS r, 'C:\\\\' AS two_backslashes FROM services",
    'SELECT 1 AS "$__timeFrom()", 2 AS "--", 3 AS "/*"',
    "WITH pg_authid AS (SELECT 1 AS x) SELECT * FROM pg_authid",
    "SELECT count(*) FROM services WHERE name = 'INSERT INTO x; DROP TABLE y'",
    'SELECT U&"\\0063ount"(*) FROM services',
    'SELECT "count"(*) FROM "services"',
    "SELECT pg_catalog.lower(name) FROM public.services",
    "SELECT name FROM services;",
    ";SELECT name FROM services;;",
    "SELECT name FROM services WHERE name = U&'d\\0061t\\+000061' ",
    "WITH a AS (SELECT 1 AS n), b AS (SELECT * FROM a) SELECT * FROM b",
    "SELECT CURRENT_DATE, CURRENT_TIMESTAMP, LOCALTIMESTAMP, now()",
    "SELECT name FROM services WHERE name LIKE 'a!%' ESCAPE '!' OR name SIMILAR TO '(api|web)%' OR name ILIKE 'B%'",
    "SELECT x.count, x.n FROM (SELECT count(*) AS n, count(*) FROM services) x",
    "SELECT s.name, s.team FROM services s WHERE s.tier = 'critical'",
    "SELECT s.name, (s).team, (s.*).tier FROM services s",
    "SELECT s.a, s.b FROM services AS s(a, b, c)",
    "WITH services AS (SELECT 1 AS q) SELECT services.q FROM services",
    "SELECT x.n, q.n FROM (SELECT 1 AS n) x JOIN LATERAL (SELECT x.n) q ON true",
    "SELECT s.name FROM services s WHERE EXISTS (SELECT 1 FROM (SELECT 1 AS other) s WHERE s.other = 1)",
    "SELECT g.g, u.x FROM generate_series(1, 3) g, unnest(ARRAY[1]) AS u(x)",
    "SELECT (now(), now()) OVERLAPS (now(), now()), overlay('abc' placing 'x' from 2), 'a' IS NORMALIZED, 1 OPERATOR(pg_catalog.+) 1",
  ])("%s", (sql) => {
    expect(guard.check(sql, DEMO_CATALOG)).toMatchObject({ ok: true });
  });
});

describe("catalog never refreshed", () => {
  test.each(["SELECT 1", "SELECT name FROM services", "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)"])(
    "%s → catalog",
    (sql) => {
      const verdict = guard.check(sql, null);
      expect(verdict).toMatchObject({ ok: false, reason: "catalog" });
      if (!verdict.ok) expect(verdict.message).toMatch(/refresh/);
    },
  );

  test("earlier checks still win", () => {
    expect(guard.check("SELECT pg_sleep(1)", null)).toMatchObject({ reason: "function" });
    expect(guard.check("DELETE FROM services", null)).toMatchObject({ reason: "keyword" });
    expect(guard.check("SELECT 1 -- x", null)).toMatchObject({ reason: "comment" });
  });
});
