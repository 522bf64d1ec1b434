import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ApiFixture, call, createApiFixture } from "./testing/api-fixture.ts";
import { ProblemSchema } from "./openapi.ts";
import { MeSchema } from "./routes/me/routes.ts";
import { WorkspaceViewSchema } from "./routes/workspaces/routes.ts";
import { OPERATION_METHODS, type OpenApiDoc } from "./testing/openapi-doc.ts";

let fx: ApiFixture;
let doc: OpenApiDoc;

const OPERATIONS = [
  "get /api/workspaces/{workspaceId}/dashboards",
  "post /api/workspaces/{workspaceId}/dashboards",
  "get /api/dashboards/{dashboardId}",
  "put /api/dashboards/{dashboardId}",
  "delete /api/dashboards/{dashboardId}",
  "get /api/workspaces/{workspaceId}/sources",
  "post /api/workspaces/{workspaceId}/sources",
  "get /api/sources/{sourceId}",
  "put /api/sources/{sourceId}",
  "delete /api/sources/{sourceId}",
  "post /api/sources/{sourceId}/test",
  "post /api/sources/{sourceId}/catalog/refresh",
  "post /api/workspaces/{workspaceId}/query-preview",
  "get /api/workspaces/{workspaceId}/limits",
  "put /api/workspaces/{workspaceId}/limits",
  "post /api/auth/sessions/revoke",
  "post /api/workspaces/{workspaceId}/sessions/revoke",
  "post /api/admin/sessions/revoke",
  "get /api/workspaces",
  "get /api/workspaces/{workspaceId}",
  "get /api/admin/workspaces",
  "post /api/admin/workspaces",
  "get /api/admin/workspaces/{workspaceId}",
  "patch /api/admin/workspaces/{workspaceId}",
  "delete /api/admin/workspaces/{workspaceId}",
];

beforeAll(async () => {
  fx = await createApiFixture();
  const res = await fx.app.request("/api/openapi.json");
  expect(res.status).toBe(200);
  doc = (await res.json()) as OpenApiDoc;
});
afterAll(() => fx.close());

function operations(d: OpenApiDoc): string[] {
  return Object.entries(d.paths).flatMap(([p, ops]) =>
    Object.keys(ops)
      .filter((m) => (OPERATION_METHODS as readonly string[]).includes(m))
      .map((m) => `${m} ${p}`),
  );
}

describe("/api/openapi.json", () => {
  test("is an OpenAPI 3.1 document served without a session", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.title).toBe("Pulseboard API");
    expect(doc.components.securitySchemes.session).toMatchObject({ type: "apiKey", in: "cookie", name: fx.config.SESSION_COOKIE_NAME });
  });

  test("describes every dashboard, source, preview and limits operation", () => {
    expect(operations(doc)).toEqual(expect.arrayContaining(OPERATIONS));
  });

  test.each(OPERATIONS)("%s is served by a real route (no drift)", async (op) => {
    const [method, path] = op.split(" ");
    const concrete = path.replace(/\{[^}]+\}/g, "x_missing");
    // Anonymous: the route's own auth answers 401; an undocumented or renamed route would 404.
    const res = await call(fx.app, null, method.toUpperCase(), concrete);
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
  });

  test("request bodies are the zod schemas the routes validate with", () => {
    const upd = doc.components.schemas.UpdateDashboard;
    expect(upd.required).toEqual(expect.arrayContaining(["version", "spec"]));
    const spec = doc.components.schemas.DashboardSpec;
    expect(spec.required).toEqual(expect.arrayContaining(["title", "time", "panels"]));
    expect(JSON.stringify(spec)).toContain("timeseries");
    const preview = doc.components.schemas.QueryPreview;
    expect(preview.required).toEqual(expect.arrayContaining(["sourceId", "sql", "time"]));
    expect(doc.components.schemas.CreateSource.required).toEqual(expect.arrayContaining(["name", "host", "database", "secretRef"]));
    expect(doc.components.schemas.UpdateSource.required).toEqual(["version"]);
  });

  test("errors are documented as problem+json with the stable codes", () => {
    const put = doc.paths["/api/dashboards/{dashboardId}"].put;
    expect(Object.keys(put.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "404", "409", "422"]));
    expect(put.responses["409"].content?.["application/problem+json"]).toBeDefined();
    const codes = doc.components.schemas.Problem.properties?.code.enum;
    expect(codes).toEqual(expect.arrayContaining(["version_conflict", "guard_rejected", "result_too_large", "validation_failed"]));
  });

  test("every route that reads the config store lists 503 config_store_unavailable with Retry-After, the stream included; the scrape does not", () => {
    for (const op of [...OPERATIONS, "get /api/dashboards/{dashboardId}/stream", "get /api/me"]) {
      const [method, path] = op.split(" ");
      const res = doc.paths[path][method].responses["503"];
      expect(res, op).toBeDefined();
      expect(JSON.stringify(res), op).toContain("config_store_unavailable");
    }
    expect(doc.paths["/api/dashboards/{dashboardId}/stream"].get.responses["503"].headers?.["Retry-After"]).toBeDefined();
    expect(doc.paths["/api/metrics"].get.responses["503"]).toBeUndefined();
  });

  test("the source schema documents secretRef as a name and has no credential fields", () => {
    const props = Object.keys(doc.components.schemas.Source.properties ?? {});
    expect(props).toContain("secretRef");
    expect(props.filter((p) => /password|username|credential/i.test(p))).toEqual([]);
  });

  test("every /api route the handlers app serves is described (a new undocumented route fails here)", () => {
    const documented = new Set(operations(doc));
    const served = new Set(
      (fx.app as unknown as { routes: { method: string; path: string }[] }).routes
        .filter((r) => r.method !== "ALL" && r.path.startsWith("/api/"))
        .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`),
    );
    expect([...served].filter((op) => !documented.has(op))).toEqual([]);
    // And nothing is described that no process serves (the stream host serves these two).
    const streamHost = ["get /api/dashboards/{dashboardId}/stream", "get /api/metrics"];
    expect([...documented].filter((op) => !served.has(op) && !streamHost.includes(op))).toEqual([]);
  });

  test("the described /api/me and /api/workspaces shapes match real responses", async () => {
    for (const persona of ["viewer", "admin"] as const) {
      const me = await (await call(fx.app, fx.roles.cookies[persona], "GET", "/api/me")).json();
      expect(MeSchema.strict().safeParse(me).error).toBeUndefined();
      const list = await (await call(fx.app, fx.roles.cookies[persona], "GET", "/api/workspaces")).json();
      for (const w of list.workspaces) expect(WorkspaceViewSchema.strict().safeParse(w).error).toBeUndefined();
      const one = await (await call(fx.app, fx.roles.cookies[persona], "GET", `/api/workspaces/${fx.roles.workspace.id}`)).json();
      expect(WorkspaceViewSchema.strict().safeParse(one).error).toBeUndefined();
    }
  });

  test("the AI routes are described with the request schemas their handlers validate with", () => {
    const gen = doc.paths["/api/workspaces/{workspaceId}/generate"].post;
    expect(gen.requestBody?.content?.["application/json"].schema?.required).toEqual(expect.arrayContaining(["prompt", "sourceId"]));
    const apply = doc.paths["/api/dashboards/{dashboardId}/chat/apply"].post;
    expect(apply.requestBody?.content?.["application/json"].schema?.required).toEqual(["messageId"]);
  });

  test("streams and redirects are declared with their content types and statuses", () => {
    const media = (path: string, method: string, status: string) => Object.keys(doc.paths[path][method].responses[status]?.content ?? {});
    expect(media("/api/dashboards/{dashboardId}/chat", "post", "200")).toEqual(["text/event-stream"]);
    expect(media("/api/dashboards/{dashboardId}/stream", "get", "200")).toEqual(["text/event-stream"]);
    expect(doc.paths["/api/dashboards/{dashboardId}/stream"].get.tags).toEqual(["stream-host"]);
    expect(media("/api/metrics", "get", "200")).toEqual(["text/plain"]);
    expect(doc.paths["/api/auth/login"].get.responses["302"].headers?.Location).toBeDefined();
    expect(doc.paths["/api/auth/callback"].get.responses["302"].headers?.Location).toBeDefined();
    expect(Object.keys(doc.paths["/api/auth/logout"].post.responses)).toEqual(expect.arrayContaining(["204", "303", "403", "503"]));
    // A failed sign-in step is an HTML page for a browser, problem+json for anything else.
    expect(media("/api/auth/callback", "get", "400")).toEqual(["application/problem+json", "text/html"]);
    expect(doc.paths["/api/auth/login"].get.parameters?.map((p) => p.name)).toEqual(["returnTo"]);
  });

  test("every error answer has one envelope, and the Problem schema describes exactly what is sent", async () => {
    const ws = fx.roles.workspace.id;
    const editor = fx.roles.cookies.editor;
    const answers = [
      // A body refused by a route's zod schema, on a JSON route and on a model-backed one.
      await call(fx.app, editor, "POST", `/api/workspaces/${ws}/dashboards`, { spec: { title: 1 } }),
      await call(fx.app, editor, "POST", `/api/workspaces/${ws}/generate`, { prompt: "", sourceId: fx.source.id }),
      // A query parameter and a body refused by the input rules before any route.
      await call(fx.app, fx.roles.cookies.admin, "GET", `/api/workspaces/${ws}/generation-log?limit=0`),
      await call(fx.app, editor, "POST", `/api/workspaces/${ws}/query-preview`, {
        sourceId: "a\u0000",
        sql: "SELECT 1",
        time: { from: "now-1h", to: "now" },
      }),
      await call(fx.app, editor, "POST", `/api/workspaces/${ws}/query-preview`, {
        sourceId: fx.source.id,
        sql: "SELECT 1",
        time: { from: "now", to: "now-1h" },
      }),
      await call(fx.app, null, "GET", "/api/me"),
      await call(fx.app, editor, "GET", "/api/dashboards/db_missing"),
      await call(fx.app, editor, "POST", `/api/workspaces/${ws}/query-preview`, {
        sourceId: fx.source.id,
        sql: "SELECT * FROM pg_user",
        time: { from: "now-1h", to: "now" },
      }),
      await call(fx.app, editor, "POST", `/api/workspaces/${ws}/query-preview`, {
        sourceId: fx.source.id,
        sql: "x".repeat(70_000),
        time: { from: "now-1h", to: "now" },
      }),
      await call(fx.app, fx.roles.cookies.viewer, "POST", `/api/workspaces/${ws}/query-preview`, {
        sourceId: fx.source.id,
        sql: "SELECT 1",
        time: { from: "now-1h", to: "now" },
      }),
    ];
    const bodies = await Promise.all(answers.map((res) => res.json()));
    expect(answers.map((res) => res.status)).toEqual([400, 400, 400, 400, 400, 401, 404, 422, 400, 403]);
    for (const body of bodies) expect(ProblemSchema.strict().safeParse(body).error, JSON.stringify(body)).toBeUndefined();
    // Every 400 of refused input names its fields the same way.
    for (const body of bodies.slice(0, 5)) {
      expect(body.code).toBe("validation_failed");
      expect(body.issues, JSON.stringify(body)).toEqual(
        expect.arrayContaining([expect.objectContaining({ path: expect.any(String), message: expect.any(String) })]),
      );
      expect(body).not.toHaveProperty("fields");
    }
    expect(bodies.map((b) => b.issues?.[0]?.path).slice(1, 5)).toEqual(["prompt", "limit", "sourceId", "time"]);
    expect(bodies[8]).toMatchObject({ code: "bad_request", limit: 64 * 1024 });
    expect(bodies[9]).toMatchObject({ code: "forbidden", requiredRole: "editor", role: "viewer" });
  });
});
