import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type pg from "pg";
import { type AiTestApp, buildAiApp, counterValue, seedAiFixture } from "../../testing/ai-harness.ts";
import { useAiRouteFixture } from "../../testing/ai-route-fixture.ts";
import { roleTable } from "../../../lib/auth/testing/role-table.ts";
import { createConfigStorePool } from "../../../lib/store/pool.ts";
import { AI_ROLE_CASES } from "../../testing/ai.security.cases.ts";

const ai = useAiRouteFixture();
const NOW = Date.UTC(2026, 6, 1, 10, 0, 0);
const clock = { t: NOW };

const VALID_SPEC = JSON.stringify({
  title: "Traffic",
  panels: [
    {
      id: "rps",
      title: "Requests",
      type: "timeseries",
      sql: "SELECT $__timeGroup(ts, '1m') AS t, count(*) FROM http_requests WHERE $__timeFilter(ts) GROUP BY 1",
    },
  ],
});

beforeAll(() => {
  ai.fake.fallback = () => ({ kind: "text", text: VALID_SPEC, usage: { input: 100, output: 20 } });
});

describe("without AI configuration: auth first, then a clear 503 naming the variable; non-model routes work", () => {
  let t: AiTestApp;
  let f: Awaited<ReturnType<typeof seedAiFixture>>;
  beforeAll(async () => {
    t = buildAiApp({ pool: ai.store.pool, url: ai.store.url, clock, env: {} });
    f = await seedAiFixture(ai.store.pool, t.sessions, t.config.SESSION_COOKIE_NAME, { refreshedAt: new Date(NOW) });
  });

  roleTable(AI_ROLE_CASES, () => ({ app: t.app, fixture: f }));

  test("the 503 is ai_not_configured and names the first missing variable", async () => {
    const res = await t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "x", sourceId: f.sourceId }),
    });
    const body = await res.json();
    expect(body).toMatchObject({ code: "ai_not_configured", missing: "AI_PROVIDER" });
    expect(body.detail).toContain("AI_PROVIDER");
  });

  test("a cross-site POST is refused before anything else", async () => {
    const res = await t.app.request(`/api/dashboards/${f.dashboardId}/chat`, {
      method: "POST",
      headers: { cookie: f.cookies.viewer!, "content-type": "application/json", origin: "https://evil.example" },
      body: JSON.stringify({ message: "hi" }),
    });
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe("cross_site_request");
  });
});

describe("the gate across two app instances sharing the database", () => {
  let poolB: pg.Pool;
  let a: AiTestApp;
  let b: AiTestApp;
  let f: Awaited<ReturnType<typeof seedAiFixture>>;
  beforeAll(async () => {
    poolB = createConfigStorePool({ connectionString: ai.store.url, max: 10 });
    const env = { ...ai.providerEnv(), LLM_RATE_PER_MINUTE: "20", LLM_DAILY_TOKEN_BUDGET: "0" };
    a = buildAiApp({ pool: ai.store.pool, url: ai.store.url, clock, env });
    b = buildAiApp({ pool: poolB, url: ai.store.url, clock, env });
    f = await seedAiFixture(ai.store.pool, a.sessions, a.config.SESSION_COOKIE_NAME, { refreshedAt: new Date(NOW) });
  });
  afterAll(() => poolB.end());

  test("50 concurrent generations at a rate of 20 reach the model exactly 20 times; the rest are 429 with Retry-After", async () => {
    ai.fake.reset();
    clock.t = NOW;
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 ? a : b).app.request(`/api/workspaces/${f.workspace.id}/generate`, {
          method: "POST",
          headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
          body: JSON.stringify({ prompt: `traffic ${i}`, sourceId: f.sourceId }),
        }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    const limited = responses.filter((r) => r.status === 429);
    expect(limited).toHaveLength(30);
    for (const r of limited) {
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect((await r.json()).code).toBe("rate_limited");
    }
    expect(ai.fake.requests).toHaveLength(20);
    const sum = async (outcome: string) =>
      (await counterValue(a.metrics, "svc_llm_requests_total", { route: "generate", outcome })) +
      (await counterValue(b.metrics, "svc_llm_requests_total", { route: "generate", outcome }));
    expect(await sum("admitted")).toBe(20);
    expect(await sum("rate_limited")).toBe(30);
    const tokens =
      (await counterValue(a.metrics, "svc_llm_tokens_total", { workspace: f.workspace.id, model: "fake-model", direction: "input" })) +
      (await counterValue(b.metrics, "svc_llm_tokens_total", { workspace: f.workspace.id, model: "fake-model", direction: "input" }));
    expect(tokens).toBe(20 * 100);
  });

  test("over the daily budget: 429 over_budget with Retry-After to the next UTC midnight, on every AI route", async () => {
    clock.t = Date.UTC(2026, 6, 2, 22, 0, 0);
    await ai.store.pool.query(
      "INSERT INTO workspace_limits (workspace_id, llm_daily_token_budget) VALUES ($1, 1000) ON CONFLICT (workspace_id) DO UPDATE SET llm_daily_token_budget = 1000",
      [f.workspace.id],
    );
    await ai.store.pool.query("INSERT INTO llm_usage_daily (workspace_id, day, tokens) VALUES ($1, '2026-07-02', 1000)", [f.workspace.id]);
    ai.fake.reset();
    const gen = await a.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "x", sourceId: f.sourceId }),
    });
    expect(gen.status).toBe(429);
    expect(gen.headers.get("retry-after")).toBe(String(2 * 3600));
    expect((await gen.json()).code).toBe("over_budget");
    const chat = await b.app.request(`/api/dashboards/${f.dashboardId}/chat`, {
      method: "POST",
      headers: { cookie: f.cookies.viewer!, "content-type": "application/json" },
      body: JSON.stringify({ message: "hi" }),
    });
    expect(chat.status).toBe(429);
    expect(chat.headers.get("content-type")).toContain("application/problem+json");
    const draft = await a.app.request(`/api/sources/${f.sourceId}/draft`, { method: "POST", headers: { cookie: f.cookies.admin! } });
    expect(draft.status).toBe(429);
    expect(ai.fake.requests).toHaveLength(0);
    expect(await counterValue(b.metrics, "svc_llm_requests_total", { route: "chat", outcome: "over_budget" })).toBe(1);
    expect(await counterValue(a.metrics, "svc_llm_requests_total", { route: "source_draft", outcome: "over_budget" })).toBe(1);
    // After midnight UTC the budget is fresh.
    clock.t = Date.UTC(2026, 6, 3, 0, 0, 1);
    const next = await a.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "x", sourceId: f.sourceId }),
    });
    expect(next.status).toBe(200);
  });
});

describe("another workspace's user can never read or spend this workspace's budget, chats or log", () => {
  let t: AiTestApp;
  let f: Awaited<ReturnType<typeof seedAiFixture>>;
  let g: Awaited<ReturnType<typeof seedAiFixture>>;
  beforeAll(async () => {
    t = buildAiApp({ pool: ai.store.pool, url: ai.store.url, clock, env: { ...ai.providerEnv(), LLM_RATE_PER_MINUTE: "100" } });
    f = await seedAiFixture(ai.store.pool, t.sessions, t.config.SESSION_COOKIE_NAME, { refreshedAt: new Date(NOW) });
    g = await seedAiFixture(ai.store.pool, t.sessions, t.config.SESSION_COOKIE_NAME, { refreshedAt: new Date(NOW) });
  });

  test("outsiders get 404 everywhere and spend nothing", async () => {
    clock.t = NOW;
    ai.fake.reset();
    ai.fake.enqueue({ kind: "text", text: "a private answer about 42 errors" });
    const mine = await t.app.request(`/api/dashboards/${f.dashboardId}/chat`, {
      method: "POST",
      headers: { cookie: f.cookies.viewer!, "content-type": "application/json" },
      body: JSON.stringify({ message: "private question" }),
    });
    await mine.text();
    ai.fake.reset();
    const outsider = f.cookies.outsider!; // admin of f.otherWorkspace only
    const calls = [
      t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
        method: "POST",
        headers: { cookie: outsider, "content-type": "application/json" },
        body: JSON.stringify({ prompt: "x", sourceId: f.sourceId }),
      }),
      t.app.request(`/api/dashboards/${f.dashboardId}/chat`, {
        method: "POST",
        headers: { cookie: outsider, "content-type": "application/json" },
        body: JSON.stringify({ message: "x" }),
      }),
      t.app.request(`/api/dashboards/${f.dashboardId}/chat`, { headers: { cookie: outsider } }),
      t.app.request(`/api/sources/${f.sourceId}/draft`, { method: "POST", headers: { cookie: outsider } }),
      t.app.request(`/api/workspaces/${f.workspace.id}/generation-log`, { headers: { cookie: outsider } }),
      // An admin of workspace g using g's workspace id with f's source: the source is not found there.
      t.app.request(`/api/workspaces/${g.workspace.id}/generate`, {
        method: "POST",
        headers: { cookie: g.cookies.admin!, "content-type": "application/json" },
        body: JSON.stringify({ prompt: "x", sourceId: f.sourceId }),
      }),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(404);
      expect(JSON.stringify(await res.json())).not.toContain("private");
    }
    expect(ai.fake.requests).toHaveLength(0);
    const buckets = await ai.store.pool.query("SELECT user_sub FROM llm_rate_buckets WHERE workspace_id = $1", [f.workspace.id]);
    expect(buckets.rows.map((r) => r.user_sub)).toEqual([f.users.viewer.sub]);

    // g's admin listing g's log sees nothing of f.
    const gl = await t.app.request(`/api/workspaces/${g.workspace.id}/generation-log`, { headers: { cookie: g.cookies.admin! } });
    expect((await gl.json()).entries).toEqual([]);
    // f's admin sees f's chat turn.
    const fl = await t.app.request(`/api/workspaces/${f.workspace.id}/generation-log`, { headers: { cookie: f.cookies.admin! } });
    expect((await fl.json()).entries.map((e: { route: string; prompt: string }) => [e.route, e.prompt])).toEqual([
      ["chat", "private question"],
    ]);
  });

  test("a proposal id from another thread cannot be applied on my dashboard", async () => {
    const { rows } = await ai.store.pool.query(
      `INSERT INTO chat_messages (workspace_id, dashboard_id, user_sub, role, content, proposal)
       VALUES ($1, $2, $3, 'assistant', 'p', $4::jsonb) RETURNING id::text`,
      [f.workspace.id, f.dashboardId, f.users.editor.sub, JSON.stringify({ spec: f.spec, baseVersion: 1 })],
    );
    const res = await t.app.request(`/api/dashboards/${g.dashboardId}/chat/apply`, {
      method: "POST",
      headers: { cookie: g.cookies.admin!, "content-type": "application/json" },
      body: JSON.stringify({ messageId: rows[0].id }),
    });
    expect(res.status).toBe(404);
  });
});

describe("redaction at the route: neither the stored row nor any log line holds the prompt's secrets", () => {
  const SECRETS = [
    "jane.doe@example.com",
    "sk-live-4f9a8b7c6d5e4f3a2b1c",
    "Pa55w0rd!",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5lIn0.c2lnbmF0dXJlLXZhbHVl",
    "4111 1111 1111 1111",
  ];
  const PROMPT = `errors for jane.doe@example.com, key sk-live-4f9a8b7c6d5e4f3a2b1c, db postgres://jane:Pa55w0rd!@db:5432/x, bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5lIn0.c2lnbmF0dXJlLXZhbHVl, card 4111 1111 1111 1111`;
  let t: AiTestApp;
  let f: Awaited<ReturnType<typeof seedAiFixture>>;
  beforeAll(async () => {
    t = buildAiApp({
      pool: ai.store.pool,
      url: ai.store.url,
      clock,
      env: { ...ai.providerEnv(), LLM_RATE_PER_MINUTE: "100", AI_REQUEST_TIMEOUT_MS: "1500" },
    });
    f = await seedAiFixture(ai.store.pool, t.sessions, t.config.SESSION_COOKIE_NAME, { refreshedAt: new Date(NOW) });
  });

  test.each([
    ["success", null],
    ["provider error", { kind: "error", status: 500, message: `echo ${PROMPT}` } as const],
    ["timeout", { kind: "hang" } as const],
  ])("generation (%s)", async (_name, reply) => {
    clock.t = NOW;
    ai.fake.reset();
    if (reply) ai.fake.enqueue(reply);
    const before = t.logLines.length;
    await t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
      body: JSON.stringify({ prompt: PROMPT, sourceId: f.sourceId }),
    });
    const { rows } = await ai.store.pool.query(
      "SELECT prompt, result::text FROM generation_log WHERE workspace_id = $1 ORDER BY id DESC LIMIT 1",
      [f.workspace.id],
    );
    expect(rows[0].prompt).toContain("[email]");
    const stored = JSON.stringify(rows[0]);
    const logged = t.logLines.slice(before).join("");
    for (const s of SECRETS) {
      expect(stored).not.toContain(s);
      expect(logged).not.toContain(s);
    }
    const listed = await t.app.request(`/api/workspaces/${f.workspace.id}/generation-log`, { headers: { cookie: f.cookies.admin! } });
    const text = await listed.text();
    for (const s of SECRETS) expect(text).not.toContain(s);
  });
});
