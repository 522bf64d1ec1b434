import fc from "fast-check";
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Persona } from "../lib/auth/testing/role-table.ts";
import { AppError, ERROR_STATUS, type ErrorCode } from "../lib/http/errors.ts";
import { createLogger } from "../lib/log/logger.ts";
import type { QueryRunner } from "../lib/query/runner.ts";
import { testAppDeps } from "./testing/app-deps.ts";
import type { Source } from "../lib/sources/index.ts";
import { createApp } from "./app.ts";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "./testing/api-fixture.ts";
import { type JsonSchema, OPERATION_METHODS, type OpenApiDoc, type OperationDoc, type ParameterDoc } from "./testing/openapi-doc.ts";
import { storeSnapshot } from "./testing/store-snapshot.ts";

// Route fuzz: every operation of /api/openapi.json that the handlers app serves, driven by fast-check
// with a valid session of each role and hostile strings, numbers and shapes built from the operation's
// own request schemas. Invariants for every answer:
//   1. never a 5xx, except the app's coded, documented answers for a dependency this test leaves out on
//      purpose (ALLOWED_5XX), and only on operations whose OpenAPI entry documents that status;
//   2. an error is application/problem+json whose `code` maps to its status (lib/http/errors.ts);
//   3. a 4xx writes nothing: every config-store table is fingerprinted before and after.
// Fixed seed and run counts keep it deterministic and a few seconds long.
//
// Nothing leaves loopback: the model provider is unconfigured (AI routes answer 503 ai_not_configured
// before any call), sign-in is not configured (login answers 503 identity_provider_unavailable), the
// process's fetch refuses every call, and the query runner only reaches the fixture's own metrics
// database; any other source host is recorded and refused the way an unreachable server is.

const SEED = 20261124;
const RUNS_PER_OPERATION = 15;

/**
 * 5xx answers that are documented, coded outcomes of a dependency deliberately absent here, not
 * failures of the app: an unconfigured AI provider or identity provider, and a source host the loopback
 * runner refuses. A generic 500 (`internal`) is never allowed.
 */
const ALLOWED_5XX: Partial<Record<ErrorCode, string>> = {
  ai_not_configured: "the AI provider is unconfigured in this test",
  identity_provider_unavailable: "sign-in is not configured in this test",
  source_unavailable: "the loopback runner refuses every source host but the fixture's",
};

/** Served by the stream host, not by the handlers app. */
const STREAM_HOST_TAG = "stream-host";

let fx: ApiFixture;
let app: Hono;
let doc: OpenApiDoc;
let dashboardId: string;
const refusedHosts: string[] = [];
const fetchAttempts: string[] = [];

/** The fixture's runner, reaching only the fixture's metrics database; every other host is refused unconnected. */
function loopbackOnly(inner: QueryRunner, allowed: { host: string; port: number }): QueryRunner {
  const check = (source: Source) => {
    if (source.host === allowed.host && source.port === allowed.port) return;
    refusedHosts.push(source.host);
    throw new AppError("source_unavailable", `Source ${source.id} is unavailable (refused).`, { cause: "refused" });
  };
  return {
    ...inner,
    run: async (req) => {
      check(req.source);
      return inner.run(req);
    },
    execute: async (req) => {
      check(req.source);
      return inner.execute(req);
    },
    testConnection: async (source) => {
      check(source);
      return inner.testConnection(source);
    },
    inFlight: () => inner.inFlight(),
    poolStats: (id) => inner.poolStats(id),
    closeAll: () => inner.closeAll(),
  };
}

beforeAll(async () => {
  fx = await createApiFixture();
  const refusingFetch = (async (input: string | URL | Request) => {
    fetchAttempts.push(String(input instanceof Request ? input.url : input));
    throw new TypeError("fetch is refused in the route fuzz test");
  }) as typeof fetch;
  const deps = testAppDeps(fx.config, {
    pool: fx.pool,
    log: createLogger({ silent: true }),
    now: fx.now,
    fetch: refusingFetch,
    guard: fx.guard,
    queryRunner: loopbackOnly(fx.runner, { host: fx.metrics.host, port: fx.metrics.port }),
  });
  app = createApp({ ...deps, oidc: null });
  doc = (await (await app.request("/api/openapi.json")).json()) as OpenApiDoc;
  const created = await call(app, fx.roles.cookies.editor, "POST", `/api/workspaces/${fx.roles.workspace.id}/dashboards`, {
    spec: dashboardSpec(fx.source.id),
  });
  expect(created.status).toBe(201);
  dashboardId = (await created.json()).id;
}, 60_000);
afterAll(() => fx.close());

// --- Hostile values -------------------------------------------------------------------------------

const HOSTILE_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00",
  "\udc00\ud800",
  "\u007f",
  "/\u007f",
  "\u200f\u202e\u2066evil\u2069",
  "\ufeff",
  "'; DROP TABLE dashboards; --",
  "1' OR '1'='1",
  "../../etc/passwd",
  "..\\..\\windows",
  "%00",
  "%2e%2e%2f",
  "$__timeFilter(ts)",
  "$1",
  "NaN",
  "-0",
  "Infinity",
  "1e308",
  "99999999999999999999999",
  "now-99999999999999w",
  "0000-01-01",
  "+275760-09-13T00:00:00Z",
  "null",
  "{}",
  "<script>alert(1)</script>",
  "\ud83d\ude00",
  "x".repeat(70_000),
];

// Past PostgreSQL's integer (2^31), past the safe integers, fractions, signed zero, the largest double.
const HOSTILE_NUMBERS = [-0, -1, 0.5, 1e308, 2 ** 31, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, Number.MIN_SAFE_INTEGER];

/** Path segments as they travel (already percent-encoded; some are malformed UTF-8 on purpose). */
const HOSTILE_SEGMENTS = [
  "%00",
  "a%00b",
  "%ED%A0%80",
  "%7F",
  "%E2%80%8F%E2%80%AE",
  "..%2F..%2Fetc%2Fpasswd",
  "..",
  "%25",
  "%",
  "x".repeat(2000),
  "1e308",
  "-0",
  "NaN",
  "%27%3B%20DROP%20TABLE%20dashboards%3B--",
];

/** A query-string encoding that keeps what encodeURIComponent cannot take (a lone surrogate) as malformed UTF-8. */
function encodeQueryValue(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return "%ED%A0%80";
  }
}

/** Plausible values by property name, so that generated requests also get past validation into handlers. */
function plausible(name: string): string[] {
  const n = name.toLowerCase();
  if (n === "sourceid") return [fx.source.id, fx.otherSource.id, "src_missing"];
  if (n === "dashboardid") return [dashboardId, "db_missing"];
  if (n === "workspaceid") return [fx.roles.workspace.id, fx.roles.otherWorkspace.id, "ws_missing"];
  if (n === "sql")
    return [
      "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts)",
      "SELECT $__timeGroup(ts, $__interval) AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
      "SELECT 1",
      "DELETE FROM http_requests",
    ];
  if (n === "from" || n === "to") return ["now", "now-1h", "now-3660d", "2026-01-01T00:00:00Z", "9999-12-31T23:59:59Z"];
  if (n === "host") return [fx.metrics.host, "127.0.0.1", "::1", "169.254.169.254", "0.0.0.0", "10.0.0.1"];
  if (n === "database") return [fx.metrics.database, "postgres"];
  if (n === "secretref") return ["METRICS", "OTHER"];
  if (n === "sslmode") return ["disable", "require", "verify-full"];
  if (n === "messageid" || n === "before") return ["1", "999999999999999999"];
  if (n === "id") return ["p1", "requests"];
  if (n === "returnto") return ["/", "/dashboards/x", "//evil.example", "/%7F", "/caf\u00e9"];
  return ["ok", "HTTP traffic"];
}

// --- Arbitraries from the OpenAPI document's JSON Schemas ------------------------------------------

function deref(schema: JsonSchema | undefined): JsonSchema {
  let s = schema;
  while (s?.$ref) s = doc.components.schemas[s.$ref.replace("#/components/schemas/", "")];
  return s ?? {};
}

const hostileString = fc.constantFrom(...HOSTILE_STRINGS);
/** Any UTF-16 code unit, lone surrogates included (cheaper to build than fast-check's "binary" unit). */
const utf16Unit = fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u));
const hostileNumber = fc.constantFrom(...HOSTILE_NUMBERS);
const hostileShape = fc.constantFrom<unknown>(null, [], {}, [null], [{}], "", 0, true, { length: 1e9 }, ["x", 1]);
const anyJson: fc.Arbitrary<unknown> = fc.oneof(hostileShape, hostileString, hostileNumber, fc.jsonValue({ maxDepth: 3 }));
const extraKey = fc.oneof(
  fc.constantFrom("__proto__", "constructor", "a\u0000", "\ud800", "x".repeat(300), "toString", "$where"),
  fc.string({ maxLength: 8 }),
);

function stringArb(name: string, schema: JsonSchema): fc.Arbitrary<unknown> {
  const known: unknown[] = [...plausible(name), ...(schema.enum ?? []), ...(schema.example !== undefined ? [String(schema.example)] : [])];
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...known) },
    { weight: 3, arbitrary: hostileString },
    { weight: 1, arbitrary: fc.string({ unit: utf16Unit, maxLength: 40 }) },
  );
}

function arbFor(schemaIn: JsonSchema | undefined, name: string, depth: number): fc.Arbitrary<unknown> {
  const schema = deref(schemaIn);
  if (depth > 5) return anyJson;
  const alternatives = schema.anyOf ?? schema.oneOf;
  let conforming: fc.Arbitrary<unknown>;
  if (alternatives) {
    conforming = fc.oneof(...alternatives.map((s) => arbFor(s, name, depth + 1)));
  } else if (schema.allOf) {
    conforming = arbFor(Object.assign({}, ...schema.allOf.map(deref)), name, depth);
  } else if (schema.enum) {
    conforming = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...schema.enum) }, { weight: 1, arbitrary: hostileString });
  } else {
    const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
    switch (type) {
      case "string":
        conforming = stringArb(name, schema);
        break;
      case "integer":
      case "number":
        conforming = fc.oneof(hostileNumber, fc.integer({ min: -10, max: 100_000 }), fc.double({ noNaN: true, noDefaultInfinity: true }));
        break;
      case "boolean":
        conforming = fc.boolean();
        break;
      case "array":
        conforming = fc.array(arbFor(schema.items ?? {}, name, depth + 1), { maxLength: 3 });
        break;
      case "object":
        conforming = objectArb(schema, depth);
        break;
      default:
        conforming = schema.properties ? objectArb(schema, depth) : anyJson;
    }
  }
  return fc.oneof({ weight: 8, arbitrary: conforming }, { weight: 1, arbitrary: hostileShape }, { weight: 1, arbitrary: anyJson });
}

function objectArb(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  const props = schema.properties ?? {};
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, sub] of Object.entries(props)) model[key] = arbFor(sub, key, depth + 1);
  const required = (schema.required ?? []).filter((k) => k in model);
  const extra = fc.dictionary(extraKey, anyJson, { maxKeys: 2 });
  return fc
    .tuple(
      fc.oneof(
        { weight: 4, arbitrary: fc.record(model, { requiredKeys: required }) },
        // Missing required fields.
        { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }) },
      ),
      fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: extra }),
    )
    .map(([known, more]) => ({ ...more, ...known }));
}

// --- Valid requests with one hostile field -----------------------------------------------------------
// Random bodies rarely pass validation as a whole, so most requests start from a valid body built from
// the schema and the plausible values above, then replace, drop or add exactly one field anywhere in it:
// that is what reaches the handlers and the database with a hostile value.

function plausibleNumber(name: string, schema: JsonSchema): number {
  const byName: Record<string, number> = {
    version: 1,
    port: fx.metrics.port,
    refreshintervalms: 10_000,
    limit: 10,
    llmrateperminute: 10,
    llmdailytokenbudget: 10_000,
  };
  return byName[name.toLowerCase()] ?? schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
}

/** A value the schema accepts (as far as plausible values make it), deterministic. */
function validExample(schemaIn: JsonSchema | undefined, name: string, depth = 0): unknown {
  const schema = deref(schemaIn);
  if (depth > 8) return null;
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return validExample(alternatives[0], name, depth + 1);
  if (schema.allOf) return validExample(Object.assign({}, ...schema.allOf.map(deref)), name, depth);
  if (schema.enum) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  if (type === "string") return plausible(name)[0];
  if (type === "integer" || type === "number") return plausibleNumber(name, schema);
  if (type === "boolean") return true;
  if (type === "array") return [validExample(schema.items ?? {}, name, depth + 1)];
  if (type === "object" || schema.properties) {
    const out: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(schema.properties ?? {})) out[key] = validExample(sub, key, depth + 1);
    return out;
  }
  return {};
}

/** Every path into a JSON value, the root included, with the kind of value found there. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): { path: (string | number)[]; kind: string }[] {
  const kind = Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
  const out = [{ path: prefix, kind }];
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) out.push(...pathsOf(v, [...prefix, i]));
  } else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

type Query = [Record<string, string>, Record<string, string>];
type Mutation = { kind: "replace"; value: unknown } | { kind: "drop" } | { kind: "add"; key: string; value: unknown };

function mutate(base: unknown, path: (string | number)[], m: Mutation): unknown {
  const copy = structuredClone(base);
  if (path.length === 0)
    return m.kind === "replace" ? m.value : m.kind === "add" && copy && typeof copy === "object" ? { ...copy, [m.key]: m.value } : copy;
  // Every step of `path` leads through an array or an object (pathsOf walked them).
  type Node = Record<string | number, unknown>;
  let parent = copy as Node;
  for (const step of path.slice(0, -1)) parent = parent[step] as Node;
  const last = path[path.length - 1];
  const child = parent[last];
  if (m.kind === "replace") parent[last] = m.value;
  else if (m.kind === "drop") Array.isArray(parent) ? parent.splice(Number(last), 1) : delete parent[last];
  else if (child && typeof child === "object" && !Array.isArray(child)) (child as Node)[m.key] = m.value;
  return copy;
}

/** A hostile replacement, mostly of the kind the field holds (a number for a number), so it passes the type check. */
function mutationFor(kind: string): fc.Arbitrary<Mutation> {
  const sameKind = kind === "number" ? hostileNumber : kind === "string" ? hostileString : hostileShape;
  return fc.oneof(
    { weight: 5, arbitrary: sameKind.map((value) => ({ kind: "replace" as const, value })) },
    {
      weight: 2,
      arbitrary: fc.oneof(hostileString, hostileNumber, hostileShape, anyJson).map((value) => ({ kind: "replace" as const, value })),
    },
    { weight: 1, arbitrary: fc.constant({ kind: "drop" as const }) },
    { weight: 1, arbitrary: fc.record({ key: extraKey, value: anyJson }).map(({ key, value }) => ({ kind: "add" as const, key, value })) },
  );
}

/** A valid body for `schema` with one field replaced, dropped or added; numeric fields, being few, are picked more often. */
function mutatedBody(schema: JsonSchema): fc.Arbitrary<unknown> {
  const base = validExample(schema, "body");
  return fc.oneof(
    ...pathsOf(base).map(({ path, kind }) => ({
      weight: kind === "number" ? 4 : 1,
      arbitrary: mutationFor(kind).map((m) => mutate(base, path, m)),
    })),
  );
}

// --- Operations --------------------------------------------------------------------------------------

interface Operation {
  method: string;
  path: string;
  op: OperationDoc;
}

function operations(): Operation[] {
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!(OPERATION_METHODS as readonly string[]).includes(method)) continue;
      if (op.tags?.includes(STREAM_HOST_TAG)) continue;
      out.push({ method: method.toUpperCase(), path, op });
    }
  }
  return out;
}

function parametersIn(op: OperationDoc, where: "path" | "query"): ParameterDoc[] {
  return (op.parameters ?? []).filter((p) => p.in === where);
}

/** One request: a persona, concrete path segments, query pairs and a body (or none). */
function requestArb(o: Operation) {
  const pathParams = parametersIn(o.op, "path");
  const queryParams = parametersIn(o.op, "query");
  const segment = (name: string) =>
    fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...plausible(name)) }, { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_SEGMENTS) });
  const params = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, segment(p.name)])) as Record<string, fc.Arbitrary<string>>);
  const queryValue = (p: ParameterDoc) =>
    arbFor(p.schema ?? { type: "string" }, p.name, 1).map((v) => (typeof v === "string" ? v : (JSON.stringify(v) ?? "")));
  const query: fc.Arbitrary<Query> = fc.tuple(
    fc.record(Object.fromEntries(queryParams.map((p) => [p.name, queryValue(p)])) as Record<string, fc.Arbitrary<string>>, {
      requiredKeys: [],
    }) as fc.Arbitrary<Record<string, string>>,
    fc.oneof(
      { weight: 4, arbitrary: fc.constant<Record<string, string>>({}) },
      { weight: 1, arbitrary: fc.dictionary(extraKey, hostileString, { maxKeys: 2 }) },
    ),
  );
  const bodySchema = o.op.requestBody?.content?.["application/json"]?.schema;
  // Requests of methods without a body (GET) cannot carry one at all.
  const body = bodySchema
    ? fc.oneof(
        { weight: 5, arbitrary: mutatedBody(bodySchema) },
        { weight: 1, arbitrary: fc.constant(validExample(bodySchema, "body")) },
        { weight: 3, arbitrary: arbFor(bodySchema, "body", 0) },
        { weight: 1, arbitrary: fc.constant(undefined) },
      )
    : o.method === "GET"
      ? fc.constant(undefined)
      : fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: anyJson });
  const persona = fc.constantFrom<Persona>("viewer", "editor", "admin");
  return fc.record({ persona, params, query, body });
}

function urlFor(o: Operation, params: Record<string, string>, query: [Record<string, string>, Record<string, string>]): string {
  const path = o.path.replace(/\{(\w+)\}/g, (_, name) => (params[name] ?? "x").replace(/\//g, "%2F"));
  const pairs = [...Object.entries(query[0]), ...Object.entries(query[1])].map(([k, v]) => `${encodeQueryValue(k)}=${encodeQueryValue(v)}`);
  return pairs.length > 0 ? `${path}?${pairs.join("&")}` : path;
}

let runCounter = 0;

async function exercise(
  o: Operation,
  r: { persona: Persona; params: Record<string, string>; query: [Record<string, string>, Record<string, string>]; body: unknown },
) {
  // A fresh session per request, for a fresh user of the persona's role: a fuzzed logout or revocation
  // ends only that session, never the sessions of later runs.
  const user = fx.roles.users[r.persona as Exclude<Persona, "anonymous">];
  const cookie = await fx.roles.mintCookie({ ...user, sub: `${user.sub}-fuzz-${runCounter++}` });
  const url = urlFor(o, r.params, r.query);
  const before = await storeSnapshot(fx.pool);
  const res = await call(app, cookie, o.method, url, r.body);
  const status = res.status;
  const documented = Object.keys(o.op.responses ?? {});
  const where = `${o.method} ${url.slice(0, 200)} as ${r.persona} -> ${status}`;
  if (status >= 400) {
    expect(res.headers.get("content-type"), where).toContain("application/problem+json");
    const problem = await res.json();
    expect(ERROR_STATUS[problem.code as ErrorCode], `${where} ${problem.code}`).toBe(status);
    if (status >= 500) {
      expect(ALLOWED_5XX[problem.code as ErrorCode], `${where}: ${problem.code} ${problem.detail}`).toBeDefined();
      expect(documented, `${where}: ${status} is not documented for this operation`).toContain(String(status));
    } else {
      expect(await storeSnapshot(fx.pool), `${where}: a refused request changed the config store`).toEqual(before);
    }
  } else {
    await res.arrayBuffer();
  }
}

describe("route fuzz: hostile input never gets a 5xx, and a 4xx writes nothing", () => {
  test("the document lists the routes this test drives, and the AI provider is unconfigured here", async () => {
    const ops = operations().map((o) => `${o.method} ${o.path}`);
    expect(ops).toEqual(
      expect.arrayContaining([
        "POST /api/workspaces/{workspaceId}/dashboards",
        "PUT /api/dashboards/{dashboardId}",
        "POST /api/workspaces/{workspaceId}/sources",
        "POST /api/workspaces/{workspaceId}/query-preview",
        "POST /api/workspaces/{workspaceId}/generate",
        "POST /api/dashboards/{dashboardId}/chat",
        "GET /api/auth/login",
      ]),
    );
    const res = await call(app, fx.roles.cookies.editor, "POST", `/api/workspaces/${fx.roles.workspace.id}/generate`, {
      prompt: "traffic",
      sourceId: fx.source.id,
    });
    expect(res.status).toBe(503);
    expect((await res.json()).code).toBe("ai_not_configured");
  });

  test("every operation of the document, each role, hostile strings, numbers and shapes", async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(20);
    // Every operation runs, and every failing one is reported with its counterexample.
    const failures: string[] = [];
    for (const [i, o] of ops.entries()) {
      const result = await fc.check(
        fc.asyncProperty(requestArb(o), (r) => exercise(o, r)),
        { seed: SEED + i, numRuns: RUNS_PER_OPERATION, endOnFailure: true },
      );
      if (result.failed) failures.push(`${o.method} ${o.path}: ${String(result.errorInstance ?? "").slice(0, 600)}`);
    }
    expect(failures).toEqual([]);
    // Nothing tried to leave the machine.
    expect(fetchAttempts).toEqual([]);
  }, 120_000);

  test("every field of a valid body and every documented query parameter, one hostile value at a time (as admin)", async () => {
    // Random search rarely lands a dangerous number on the one field that breaks (a version past
    // PostgreSQL's integer); this sweep tries each field with each value of its kind.
    // The values whose kind passes a type check yet may break what comes after it; the random search
    // above covers the rest of the hostile lists.
    const SWEEP_NUMBERS = [2 ** 31, Number.MAX_SAFE_INTEGER, -0, 1e308];
    const SWEEP_STRINGS = ["a\u0000b", "\ud800", "x".repeat(70_000), "/\u007f", "now-99999999999999w"];
    const SWEEP_SHAPES = [null, []];
    const failures: string[] = [];
    let requests = 0;
    for (const o of operations()) {
      const params = Object.fromEntries(parametersIn(o.op, "path").map((p) => [p.name, plausible(p.name)[0]]));
      const bodySchema = o.op.requestBody?.content?.["application/json"]?.schema;
      const cases: { query: Record<string, string>; body: unknown }[] = [];
      if (bodySchema) {
        const base = validExample(bodySchema, "body");
        for (const { path, kind } of pathsOf(base)) {
          // Strings also get the field's other plausible values: other ids, the metadata and loopback hosts, …
          const name = String(path.at(-1) ?? "body");
          const values =
            kind === "number" ? SWEEP_NUMBERS : kind === "string" ? [...SWEEP_STRINGS, ...plausible(name).slice(1)] : SWEEP_SHAPES;
          for (const value of values) cases.push({ query: {}, body: mutate(base, path, { kind: "replace", value }) });
        }
      }
      for (const q of parametersIn(o.op, "query")) {
        for (const value of [...SWEEP_STRINGS, ...SWEEP_NUMBERS.map(String)]) cases.push({ query: { [q.name]: value }, body: undefined });
      }
      for (const c of cases) {
        requests++;
        try {
          await exercise(o, { persona: "admin", params, query: [c.query, {}], body: c.body });
        } catch (err) {
          failures.push(`${o.method} ${o.path}: ${String(err).slice(0, 600)}`);
        }
      }
    }
    expect(requests).toBeGreaterThan(200);
    expect(failures).toEqual([]);
    // Source hosts other than the fixture's reached the routes' connection step and were refused there,
    // unconnected; nothing was fetched.
    expect(refusedHosts).toEqual(expect.arrayContaining(["169.254.169.254", "10.0.0.1"]));
    expect(fetchAttempts).toEqual([]);
  }, 120_000);

  test("the limits under a burst: one caller repeats each operation documented with 429 past its limit; never a 5xx, and a 429 says when to come back and writes nothing", async () => {
    // The fuzz above signs every request in as a fresh user, so no per-caller limit is ever reached there.
    const limited = operations().filter((o) => Object.keys(o.op.responses ?? {}).includes("429"));
    expect(limited.length).toBeGreaterThan(5);
    const reached: string[] = [];
    const failures: string[] = [];
    for (const o of limited) {
      const cookie = await fx.roles.mintCookie({ ...fx.roles.users.admin, sub: `burst-${o.method}-${o.path}` });
      const params = Object.fromEntries(parametersIn(o.op, "path").map((p) => [p.name, plausible(p.name)[0]]));
      const bodySchema = o.op.requestBody?.content?.["application/json"]?.schema;
      const body = bodySchema ? validExample(bodySchema, "body") : undefined;
      const url = urlFor(o, params, [{}, {}]);
      for (let i = 0; i < 12; i++) {
        const before = await storeSnapshot(fx.pool);
        const res = await call(app, cookie, o.method, url, body);
        const where = `${o.method} ${o.path} #${i + 1} -> ${res.status}`;
        try {
          if (res.status >= 500) {
            const problem = await res.json();
            expect(ALLOWED_5XX[problem.code as ErrorCode], `${where}: ${problem.code}`).toBeDefined();
          } else if (res.status === 429) {
            expect(Number(res.headers.get("retry-after")), where).toBeGreaterThan(0);
            expect((await res.json()).code, where).toBe("rate_limited");
            expect(await storeSnapshot(fx.pool), `${where}: a refused request changed the config store`).toEqual(before);
            reached.push(`${o.method} ${o.path}`);
            break;
          } else await res.arrayBuffer();
        } catch (err) {
          failures.push(String(err).slice(0, 400));
          break;
        }
      }
    }
    expect(failures).toEqual([]);
    // The new limits are among those reached: a workspace admin's revocations (SESSION_REVOKE_RATE_PER_MINUTE).
    expect(reached).toEqual(expect.arrayContaining(["POST /api/workspaces/{workspaceId}/sessions/revoke"]));
  }, 120_000);
});
