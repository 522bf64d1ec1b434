import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { type FakeGateway, startFakeGateway } from "../../../lib/ai/testing/fake-gateway.ts";
import { type AiTestApp, counterValue, parseSse } from "../../testing/ai-harness.ts";
import { type SeededAiFixture, useAiRouteFixture } from "../../testing/ai-route-fixture.ts";

// The AI routes with AI_PROVIDER=gateway: the real gateway client against a local server speaking the
// AI Gateway's language-model protocol (lib/ai/testing/fake-gateway.ts), reached through AI_GATEWAY_BASE_URL.

const ai = useAiRouteFixture();
let gw: FakeGateway;
beforeAll(async () => {
  gw = await startFakeGateway();
});
afterAll(() => gw?.close());

const NOW = Date.UTC(2026, 5, 2, 10, 0, 0);
const clock = { t: NOW };
const MODEL = "openai/gpt-5-mini";

const PANEL = {
  id: "rps",
  title: "Requests per minute",
  type: "timeseries",
  sql: "SELECT $__timeGroup(ts, '1m') AS t, count(*) AS requests FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
};

describe("AI routes with AI_PROVIDER=gateway", () => {
  let t: AiTestApp;
  let f: SeededAiFixture;
  beforeAll(async () => {
    ({ t, f } = await ai.seededApp({
      clock,
      refreshedAt: new Date(NOW - 86_400_000),
      env: {
        AI_PROVIDER: "gateway",
        AI_MODEL: MODEL,
        AI_GATEWAY_API_KEY: gw.apiKey,
        AI_GATEWAY_BASE_URL: gw.baseURL,
        AI_REQUEST_TIMEOUT_MS: "1500",
      },
    }));
  });
  beforeEach(() => {
    clock.t = NOW;
    gw.reset();
    ai.fake.reset();
  });

  const generate = (body: unknown) =>
    t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const tokensToday = async () =>
    (await ai.store.pool.query("SELECT COALESCE(sum(tokens), 0)::int AS n FROM llm_usage_daily WHERE workspace_id = $1", [f.workspace.id]))
      .rows[0].n as number;

  test("a generation goes to the gateway with the key as bearer token and returns the structured spec; the reported tokens are counted", async () => {
    const lines = t.logLines.length;
    const before = await tokensToday();
    gw.enqueue({
      kind: "text",
      text: JSON.stringify({ title: "HTTP overview", time: { from: "now-6h", to: "now" }, panels: [PANEL] }),
      usage: { input: 1200, output: 180 },
    });
    const res = await generate({ prompt: "requests per minute", sourceId: f.sourceId });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.spec).toMatchObject({ title: "HTTP overview", panels: [{ id: "rps", sourceId: f.sourceId }] });
    expect(body).toMatchObject({ model: MODEL, usage: { input: 1200, output: 180 }, dropped: [], repaired: [] });

    expect(gw.requests).toHaveLength(1);
    expect(ai.fake.requests).toHaveLength(0);
    const req = gw.requests[0]!;
    expect(req.headers).toMatchObject({
      authorization: `Bearer ${gw.apiKey}`,
      "ai-language-model-id": MODEL,
      "ai-language-model-streaming": "false",
    });
    expect(req.body.responseFormat).toMatchObject({ type: "json" });
    expect(req.text).toContain("public.http_requests (time column: ts)");

    expect((await tokensToday()) - before).toBe(1380);
    expect(
      await counterValue(t.metrics, "svc_llm_tokens_total", { workspace: f.workspace.id, model: MODEL, direction: "input" }),
    ).toBeGreaterThanOrEqual(1200);
    const row = await ai.store.pool.query(
      "SELECT model, input_tokens, output_tokens, outcome FROM generation_log WHERE workspace_id = $1 ORDER BY id DESC LIMIT 1",
      [f.workspace.id],
    );
    expect(row.rows[0]).toEqual({ model: MODEL, input_tokens: 1200, output_tokens: 180, outcome: "ok" });
    expect(t.logLines.slice(lines).join("")).not.toContain(gw.apiKey);
  });

  test.each([
    ["HTTP 500 internal_server_error", { kind: "error", status: 500 } as const, 500],
    ["HTTP 502 failed_dependency", { kind: "error", status: 502, type: "failed_dependency" } as const, 502],
  ])(
    "a gateway %s is a 502 ai_provider_error, one log line with the status and without key or message, a provider_error row",
    async (_n, reply, status) => {
      const lines = t.logLines.length;
      const before = await tokensToday();
      gw.enqueue(reply);
      const res = await generate({ prompt: "traffic", sourceId: f.sourceId });
      expect(res.status).toBe(502);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      const body = await res.json();
      expect(body.code).toBe("ai_provider_error");
      expect(body.detail).toBe(`The AI provider answered HTTP ${status}.`);
      expect(gw.requests).toHaveLength(1); // no retry of a retryable status behind the admission gate
      const newLines = t.logLines.slice(lines);
      const failed = newLines.map((l) => JSON.parse(l)).filter((l) => l.msg === "ai provider call failed");
      expect(failed).toEqual([
        expect.objectContaining({ provider: "gateway", model: MODEL, status, code: "ai_provider_error", outcome: "provider_error" }),
      ]);
      expect(newLines.join("")).not.toContain(gw.apiKey);
      expect(newLines.join("")).not.toContain("fake gateway error");
      expect(await tokensToday()).toBe(before);
      const row = await ai.store.pool.query("SELECT outcome FROM generation_log WHERE workspace_id = $1 ORDER BY id DESC LIMIT 1", [
        f.workspace.id,
      ]);
      expect(row.rows[0].outcome).toBe("provider_error");
    },
  );

  test("dashboard chat streams through the gateway's event stream; the finish part's usage is counted", async () => {
    await ai.store.pool.query("DELETE FROM chat_messages");
    const before = await tokensToday();
    gw.enqueue({ kind: "text", text: "Traffic is flat.", usage: { input: 300, output: 5 }, chunks: ["Traffic ", "is ", "flat."] });
    const res = await t.app.request(`/api/dashboards/${f.dashboardId}/chat`, {
      method: "POST",
      headers: { cookie: f.cookies.viewer!, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ message: "how is traffic?" }),
    });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(
      events
        .filter((e) => e.event === "delta")
        .map((e) => (e.data as { text: string }).text)
        .join(""),
    ).toBe("Traffic is flat.");
    expect(events.at(-1)).toMatchObject({ event: "done", data: { usage: { input: 300, output: 5 }, model: MODEL } });
    expect(gw.requests.at(-1)).toMatchObject({ stream: true, headers: { "ai-language-model-streaming": "true" } });
    expect((await tokensToday()) - before).toBe(305);
  });

  test("a gateway 503 before the first token of a chat answer is an ordinary 502 problem, nothing stored", async () => {
    await ai.store.pool.query("DELETE FROM chat_messages");
    gw.enqueue({ kind: "error", status: 503 });
    const res = await t.app.request(`/api/dashboards/${f.dashboardId}/chat`, {
      method: "POST",
      headers: { cookie: f.cookies.viewer!, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ message: "how is traffic?" }),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect((await res.json()).code).toBe("ai_provider_error");
    const stored = await ai.store.pool.query("SELECT count(*)::int AS n FROM chat_messages");
    expect(stored.rows[0].n).toBe(0);
  });
});
