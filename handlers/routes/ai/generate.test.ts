import { beforeAll, beforeEach, describe, expect, test } from "vitest";
import { DEMO_CATALOG } from "../../../lib/catalog/testing/demo-catalog.ts";
import { type AiTestApp, counterValue } from "../../testing/ai-harness.ts";
import { type SeededAiFixture, useAiRouteFixture } from "../../testing/ai-route-fixture.ts";
import { GOOD_PANEL as GOOD, NO_TIME_PANEL as NO_TIME, specText as spec } from "../../testing/generated-panels.ts";

const FIXED_ERRORS = { ...NO_TIME, sql: "SELECT count(*) FROM http_requests WHERE status >= 500 AND $__timeFilter(ts)" };
const SYSTEM_TABLE = { id: "users", title: "Users", type: "table", sql: "SELECT usename FROM pg_catalog.pg_user" };
const STILL_BAD = { ...SYSTEM_TABLE, sql: "SELECT * FROM secrets_table" };

const ai = useAiRouteFixture();
const NOW = Date.UTC(2026, 3, 10, 12, 0, 0);
const clock = { t: NOW };

describe.each(["chat", "responses"] as const)("POST /api/workspaces/:id/generate over the %s API", (api) => {
  let t: AiTestApp;
  let f: SeededAiFixture;
  beforeAll(async () => {
    ({ t, f } = await ai.seededApp({
      clock,
      api,
      refreshedAt: new Date(NOW - 86_400_000),
      env: {
        AI_INPUT_COST_PER_MTOK: "2",
        AI_OUTPUT_COST_PER_MTOK: "10",
        AI_REQUEST_TIMEOUT_MS: "1500",
        CATALOG_STALE_AFTER_DAYS: "30",
      },
    }));
  });
  beforeEach(() => {
    clock.t = NOW;
    ai.fake.reset();
  });

  const generate = (body: unknown, persona: "editor" | "admin" = "editor") =>
    t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies[persona]!, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  test("refused panels go back to the model once; repaired ones are kept, still-refused ones dropped and reported", async () => {
    ai.fake.enqueue(
      { kind: "text", text: spec([GOOD, NO_TIME, SYSTEM_TABLE]), usage: { input: 1000, output: 200 } },
      { kind: "text", text: JSON.stringify({ panels: [FIXED_ERRORS, STILL_BAD] }), usage: { input: 300, output: 50 } },
    );
    const res = await generate({ prompt: "requests and errors for my services", sourceId: f.sourceId });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.spec.panels.map((p: { id: string }) => p.id)).toEqual(["rps", "errors"]);
    expect(body.spec.panels.every((p: { sourceId: string }) => p.sourceId === f.sourceId)).toBe(true);
    expect(body.repaired).toEqual(["errors"]);
    expect(body.dropped).toEqual([
      expect.objectContaining({ panelId: "users", reason: "catalog", message: expect.stringContaining("secrets_table") }),
    ]);
    expect(body.usage).toEqual({ input: 1300, output: 250 });
    expect(body.catalog).toMatchObject({
      status: "fresh",
      tablesTotal: DEMO_CATALOG.tables.length,
      tablesIncluded: DEMO_CATALOG.tables.length,
    });

    // Two model calls; the first carried the catalog and rules, the repair the guard's reasons.
    expect(ai.fake.requests).toHaveLength(2);
    expect(ai.fake.requests[0]!.text).toContain("public.http_requests (time column: ts)");
    expect(ai.fake.requests[0]!.text).toContain("$__timeFilter");
    expect(ai.fake.requests[1]!.text).toContain('panel "errors"');
    expect(ai.fake.requests[1]!.text).toMatch(/reason time/);
    expect(ai.fake.requests[1]!.text).toMatch(/reason catalog/);

    // Guard refusals counted; both calls admitted; tokens billed.
    expect(await counterValue(t.metrics, "svc_sql_validation_rejections_total", { reason: "time" })).toBeGreaterThanOrEqual(1);
    expect(await counterValue(t.metrics, "svc_llm_requests_total", { route: "generate", outcome: "admitted" })).toBeGreaterThanOrEqual(2);
    const usage = await ai.store.pool.query("SELECT tokens::int FROM llm_usage_daily WHERE workspace_id = $1", [f.workspace.id]);
    expect(usage.rows[0].tokens).toBeGreaterThanOrEqual(1550);

    // One generation_log row with tokens and cost.
    const log = await ai.store.pool.query(
      "SELECT route, model, input_tokens, output_tokens, cost::float8 AS cost, outcome, result FROM generation_log WHERE workspace_id = $1 ORDER BY id DESC LIMIT 1",
      [f.workspace.id],
    );
    expect(log.rows[0]).toMatchObject({ route: "generate", model: "fake-model", input_tokens: 1300, output_tokens: 250, outcome: "ok" });
    expect(log.rows[0].cost).toBeCloseTo((1300 * 2 + 250 * 10) / 1e6);
    expect(log.rows[0].result.dropped[0].panelId).toBe("users");
  });

  test("a panel the model leaves out of the repair stays refused and is reported", async () => {
    ai.fake.enqueue(
      { kind: "text", text: spec([GOOD, NO_TIME]), usage: { input: 10, output: 10 } },
      { kind: "text", text: JSON.stringify({ panels: [] }), usage: { input: 5, output: 1 } },
    );
    const body = await (await generate({ prompt: "errors", sourceId: f.sourceId })).json();
    expect(body.spec.panels.map((p: { id: string }) => p.id)).toEqual(["rps"]);
    expect(body.dropped).toEqual([expect.objectContaining({ panelId: "errors", reason: "time" })]);
  });

  test("the model may propose variables: a query variable reads the generation's source; one the guard refuses is left out", async () => {
    const byService = { ...GOOD, id: "by-service", sql: `${GOOD.sql.split(" GROUP BY")[0]} AND service IN ($service) GROUP BY 1` };
    const byTeam = { ...GOOD, id: "by-team", sql: "SELECT count(*) FROM http_requests WHERE $__timeFilter(ts) AND service = $team" };
    const variables = [
      { name: "service", type: "query", sql: "SELECT name FROM services", multi: true, includeAll: true },
      { name: "team", type: "query", sql: "SELECT usename FROM pg_catalog.pg_user" },
      { name: "env", type: "custom", values: ["prod"], default: "dev" },
    ];
    ai.fake.enqueue(
      { kind: "text", text: spec([byService, byTeam], { variables }), usage: { input: 10, output: 10 } },
      { kind: "text", text: JSON.stringify({ panels: [] }), usage: { input: 5, output: 1 } },
    );
    const res = await generate({ prompt: "traffic per service", sourceId: f.sourceId });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.spec.variables).toEqual([{ ...variables[0], sourceId: f.sourceId }]);
    expect(body.spec.panels.map((p: { id: string }) => p.id)).toEqual(["by-service"]);
    expect(body.dropped).toEqual([expect.objectContaining({ panelId: "by-team", reason: "structure" })]);
    expect(body.warnings).toEqual(
      expect.arrayContaining([
        expect.stringContaining("Variable $team was left out"),
        expect.stringContaining("Variable $env was left out"),
      ]),
    );
    expect(ai.fake.requests[0]!.text).toContain("Variables (only when the request asks");
  });

  test("no repair round when every panel passes", async () => {
    ai.fake.enqueue({ kind: "text", text: spec([GOOD]), usage: { input: 10, output: 10 } });
    const body = await (await generate({ prompt: "traffic", sourceId: f.sourceId })).json();
    expect(body).toMatchObject({ dropped: [], repaired: [], warnings: [] });
    expect(ai.fake.requests).toHaveLength(1);
  });

  test("a never-refreshed catalog is a 422 telling to refresh it, and no model call is made", async () => {
    const res = await generate({ prompt: "anything", sourceId: f.neverRefreshedId });
    expect(res.status).toBe(422);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const body = await res.json();
    expect(body.code).toBe("catalog_missing");
    expect(body.detail).toMatch(/never refreshed.*Refresh the catalog/);
    expect(ai.fake.requests).toHaveLength(0);
  });

  test("a stale catalog only warns", async () => {
    clock.t = NOW + 40 * 86_400_000;
    ai.fake.enqueue({ kind: "text", text: spec([GOOD]), usage: { input: 10, output: 10 } });
    const res = await generate({ prompt: "traffic", sourceId: f.sourceId });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.catalog.status).toBe("stale");
    expect(body.warnings).toEqual([expect.stringMatching(/last refreshed on .* more than 30 days ago/)]);
  });

  test("a large catalog is cut to the relevant tables and the response says so", async () => {
    const tables = Array.from({ length: 400 }, (_, i) => ({
      schema: "public",
      name: i === 321 ? "checkout_latency" : `wide_table_${i}`,
      timeColumn: "ts",
      columns: Array.from({ length: 40 }, (_, c) => ({ name: c ? `metric_${c}` : "ts", type: "double precision" })),
    }));
    await ai.store.pool.query("UPDATE sources SET catalog = $2::jsonb WHERE id = $1", [f.sourceId, JSON.stringify({ tables })]);
    try {
      ai.fake.enqueue({ kind: "text", text: spec([]) });
      const body = await (await generate({ prompt: "checkout latency p95", sourceId: f.sourceId })).json();
      expect(body.catalog.tablesTotal).toBe(400);
      expect(body.catalog.tablesIncluded).toBeLessThan(400);
      expect(body.catalog.omittedTables.length).toBeGreaterThan(0);
      expect(body.warnings).toEqual(expect.arrayContaining([expect.stringMatching(/catalog is large/)]));
      const sent = ai.fake.requests[0]!.text;
      expect(sent).toContain("public.checkout_latency");
      expect(sent.length).toBeLessThan(40_000);
    } finally {
      await ai.store.pool.query("UPDATE sources SET catalog = $2::jsonb WHERE id = $1", [f.sourceId, JSON.stringify(DEMO_CATALOG)]);
    }
  });

  test("a source of another workspace is a 404, and unknown input a 400", async () => {
    expect((await generate({ prompt: "x", sourceId: "src_nope" })).status).toBe(404);
    const bad = await generate({ prompt: "", sourceId: f.sourceId });
    expect(bad.status).toBe(400);
    expect((await bad.json()).code).toBe("validation_failed");
  });

  test.each([
    ["HTTP 500", { kind: "error", status: 500 } as const, 502, "provider_error", 0],
    ["HTTP 400", { kind: "error", status: 400 } as const, 502, "provider_error", 0],
    ["malformed body", { kind: "malformed" } as const, 502, "invalid_output", 0],
    [
      "schema-violating output",
      { kind: "text", text: '{"title": 5}', usage: { input: 70, output: 7 } } as const,
      502,
      "invalid_output",
      77,
    ],
    // Cut off before the usage report: the prompt is charged as an estimate (-1: some tokens, not 0).
    ["timeout", { kind: "hang" } as const, 504, "provider_timeout", -1],
  ])(
    "provider failure: %s → problem+json, a log line, a row with the outcome, reported tokens counted",
    async (_n, reply, status, outcome, tokens) => {
      const before = await ai.store.pool.query("SELECT COALESCE(sum(tokens), 0)::int AS n FROM llm_usage_daily WHERE workspace_id = $1", [
        f.workspace.id,
      ]);
      const dashboardsBefore = await ai.store.pool.query("SELECT count(*)::int AS n FROM dashboards WHERE workspace_id = $1", [
        f.workspace.id,
      ]);
      const lines = t.logLines.length;
      ai.fake.enqueue(reply);
      const res = await generate({ prompt: "traffic", sourceId: f.sourceId });
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      const body = await res.json();
      expect(body.code).toBe(status === 504 ? "ai_provider_timeout" : "ai_provider_error");
      const newLines = t.logLines.slice(lines).join("");
      expect(newLines).toContain("ai provider call failed");
      expect(newLines).not.toContain(ai.fake.apiKey);
      const after = await ai.store.pool.query("SELECT COALESCE(sum(tokens), 0)::int AS n FROM llm_usage_daily WHERE workspace_id = $1", [
        f.workspace.id,
      ]);
      const charged = after.rows[0].n - before.rows[0].n;
      if (tokens === -1) expect(charged).toBeGreaterThan(100);
      else expect(charged).toBe(tokens);
      const row = await ai.store.pool.query(
        "SELECT outcome, input_tokens + output_tokens AS t FROM generation_log WHERE workspace_id = $1 ORDER BY id DESC LIMIT 1",
        [f.workspace.id],
      );
      expect(row.rows[0]).toEqual({ outcome, t: charged });
      const dashboardsAfter = await ai.store.pool.query("SELECT count(*)::int AS n FROM dashboards WHERE workspace_id = $1", [
        f.workspace.id,
      ]);
      expect(dashboardsAfter.rows[0].n).toBe(dashboardsBefore.rows[0].n);
    },
  );
});

describe("the repair round is a model call behind the gate too", () => {
  test("when the repair round is rate limited, refused panels are dropped with a warning and the 429 is counted", async () => {
    clock.t = NOW;
    ai.fake.reset();
    const { t, f } = await ai.seededApp({ clock, env: { LLM_RATE_PER_MINUTE: "1" }, refreshedAt: new Date(NOW) });
    ai.fake.enqueue({ kind: "text", text: spec([GOOD, NO_TIME]), usage: { input: 10, output: 10 } });
    const res = await t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "errors", sourceId: f.sourceId }),
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.spec.panels.map((p: { id: string }) => p.id)).toEqual(["rps"]);
    expect(body.dropped).toEqual([expect.objectContaining({ panelId: "errors", reason: "time" })]);
    expect(body.warnings).toEqual([expect.stringContaining("repair round was skipped (rate_limited)")]);
    expect(ai.fake.requests).toHaveLength(1);
    expect(await counterValue(t.metrics, "svc_llm_requests_total", { route: "generate", outcome: "admitted" })).toBe(1);
    expect(await counterValue(t.metrics, "svc_llm_requests_total", { route: "generate", outcome: "rate_limited" })).toBe(1);
  });
});
