import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ApiFixture, call, createApiFixture, dashboardSpec } from "../../testing/api-fixture.ts";

// The options of a dashboard's variables as the page lists them, and variables through the dashboards API. Roles and
// workspaces are pinned for every persona by the role table (handlers/testing/api.security.cases.ts).

let fx: ApiFixture;
let editor: string;
let viewer: string;

beforeAll(async () => {
  fx = await createApiFixture();
  editor = fx.roles.cookies.editor!;
  viewer = fx.roles.cookies.viewer!;
});
afterAll(() => fx.close());

const SERVICE_QUERY = "SELECT DISTINCT service FROM http_requests WHERE $__timeFilter(ts) ORDER BY 1";

function withVariables(extra: Record<string, unknown> = {}) {
  const spec = dashboardSpec(fx.source.id, {
    variables: [
      { name: "env", type: "custom", values: ["prod", "staging"], default: "staging" },
      { name: "service", type: "query", sourceId: fx.source.id, sql: SERVICE_QUERY, multi: true, includeAll: true, default: "$__all" },
    ],
    ...extra,
  });
  spec.panels[0].sql =
    "SELECT $__timeGroup(ts, $__interval) AS t, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) AND service IN ($service) GROUP BY 1 ORDER BY 1";
  return spec;
}

async function create(spec: unknown) {
  return call(fx.app, editor, "POST", `/api/workspaces/${fx.roles.workspace.id}/dashboards`, { spec });
}

describe("GET /api/dashboards/{id}/variables/{name}/options", () => {
  test("a custom variable's values and default; a query variable's options from its guarded SQL", async () => {
    const res = await create(withVariables());
    expect(res.status).toBe(201);
    const { id } = await res.json();

    const env = await call(fx.app, viewer, "GET", `/api/dashboards/${id}/variables/env/options`);
    expect(env.status).toBe(200);
    expect(await env.json()).toEqual({
      name: "env",
      type: "custom",
      multi: false,
      includeAll: false,
      options: ["prod", "staging"],
      default: ["staging"],
    });

    const service = await call(fx.app, viewer, "GET", `/api/dashboards/${id}/variables/service/options`);
    expect(service.status).toBe(200);
    expect(await service.json()).toEqual({
      name: "service",
      type: "query",
      multi: true,
      includeAll: true,
      options: ["svc-0", "svc-1", "svc-2"],
      default: ["$__all"],
    });
    // Read through the cache the app was given (npm start hands both apps the stream host's one).
    expect(fx.variableOptions.size).toBe(1);
  });

  test("an unknown variable is 404; a name that is not one is 400", async () => {
    const { id } = await (await create(withVariables())).json();
    const missing = await call(fx.app, viewer, "GET", `/api/dashboards/${id}/variables/nope/options`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).detail).toContain("nope");
    const bad = await call(fx.app, viewer, "GET", `/api/dashboards/${id}/variables/${"x".repeat(100)}/options`);
    expect(bad.status).toBe(400);
    expect((await bad.json()).issues).toEqual([{ path: "name", message: expect.any(String) }]);
  });
});

describe("variables through the dashboards API", () => {
  test("a panel naming an undeclared variable is 422 guard_rejected with structure, naming it", async () => {
    const spec = withVariables();
    spec.panels[1].sql = "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND route = $route";
    const res = await create(spec);
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body).toMatchObject({ code: "guard_rejected", reason: "structure" });
    expect(body.panels).toEqual([{ panelId: "errors", reason: "structure", message: expect.stringContaining("$route") }]);
  });

  test("a query variable's SQL is guarded like a panel's", async () => {
    const spec = withVariables() as { variables?: { sql?: string }[] };
    spec.variables![1].sql = "SELECT usename FROM pg_catalog.pg_user";
    const res = await create(spec);
    expect(res.status).toBe(422);
    expect((await res.json()).variables).toEqual([{ variable: "service", reason: "catalog", message: expect.any(String) }]);
  });

  test.each([
    [
      "a default outside the values",
      { variables: [{ name: "env", type: "custom", values: ["a"], default: "b" }] },
      "spec.variables.0.default",
    ],
    ["a query variable without SQL", { variables: [{ name: "q", type: "query", sourceId: "src_x" }] }, "spec.variables.0.sql"],
    ["a range that ends before it starts", { time: { from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z" } }, "spec.time.from"],
  ])("%s is a 400 naming the field", async (_n, extra, path) => {
    const res = await create(dashboardSpec(fx.source.id, extra));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.code).toBe("validation_failed");
    expect(body.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  });
});
