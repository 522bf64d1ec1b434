import { beforeAll, beforeEach, describe, expect, test } from "vitest";
import { type AiTestApp, parseSse } from "../../testing/ai-harness.ts";
import { type SeededAiFixture, useAiRouteFixture } from "../../testing/ai-route-fixture.ts";

const ai = useAiRouteFixture();
const NOW = Date.UTC(2026, 4, 1, 9, 0, 0);
const DAY = 86_400_000;
const clock = { t: NOW };

describe.each(["chat", "responses"] as const)("dashboard chat over the %s API (streaming)", (api) => {
  let t: AiTestApp;
  let f: SeededAiFixture;
  beforeAll(async () => {
    ({ t, f } = await ai.seededApp({
      clock,
      api,
      refreshedAt: new Date(NOW - DAY),
      env: {
        AI_REQUEST_TIMEOUT_MS: "1500",
        CHAT_HISTORY_MAX_MESSAGES: "4",
        CHAT_HISTORY_RETENTION_DAYS: "7",
      },
    }));
  });
  beforeEach(async () => {
    clock.t = NOW;
    ai.fake.reset();
    await ai.store.pool.query("DELETE FROM chat_messages");
  });

  type Persona = "viewer" | "editor" | "admin" | "outsider";
  const ask = (message: string, persona: Persona = "viewer", extra: Record<string, unknown> = {}) =>
    t.app.request(`/api/dashboards/${f.dashboardId}/chat`, {
      method: "POST",
      headers: { cookie: f.cookies[persona]!, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ message, ...extra }),
    });
  const history = async (persona: Persona = "viewer") => {
    const res = await t.app.request(`/api/dashboards/${f.dashboardId}/chat`, { headers: { cookie: f.cookies[persona]! } });
    expect(res.status).toBe(200);
    return (await res.json()).messages as { id: string; role: string; content: string; proposal: unknown }[];
  };
  const apply = (messageId: string, persona: Persona = "editor") =>
    t.app.request(`/api/dashboards/${f.dashboardId}/chat/apply`, {
      method: "POST",
      headers: { cookie: f.cookies[persona]!, "content-type": "application/json" },
      body: JSON.stringify({ messageId }),
    });

  test("the answer streams as SSE; the model saw the spec and a bounded summary of the panel results", async () => {
    ai.fake.enqueue({
      kind: "text",
      text: "Traffic peaked at 120 requests per minute.",
      usage: { input: 400, output: 12 },
      chunks: ["Traffic peaked ", "at 120 ", "requests per minute."],
    });
    const rows = Array.from({ length: 1500 }, (_, i) => [NOW - (1500 - i) * 60_000, i === 1499 ? 120 : 10 + (i % 7)]);
    const res = await ask("when was the peak?", "viewer", {
      panelResults: [
        {
          panelId: "rps",
          columns: [
            { name: "t", type: "timestamptz" },
            { name: "count", type: "int8" },
          ],
          rows,
        },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache, no-transform");
    const events = parseSse(await res.text());
    expect(
      events
        .filter((e) => e.event === "delta")
        .map((e) => (e.data as { text: string }).text)
        .join(""),
    ).toBe("Traffic peaked at 120 requests per minute.");
    const done = events.at(-1)!;
    expect(done.event).toBe("done");
    expect(done.data).toMatchObject({ usage: { input: 400, output: 12 }, model: "fake-model" });

    const req = ai.fake.requests.at(-1)!;
    expect(req.stream).toBe(true);
    expect(req.text).toContain('"title":"HTTP"');
    expect(req.text).toContain('panel rps "Requests": 1500 rows');
    expect(req.text).toContain("120");
    expect(req.text.length).toBeLessThan(40_000); // 1500 rows were summarised, not replayed

    const msgs = await history();
    expect(msgs.map((m) => [m.role, m.content])).toEqual([
      ["user", "when was the peak?"],
      ["assistant", "Traffic peaked at 120 requests per minute."],
    ]);
    const log = await ai.store.pool.query(
      "SELECT route, input_tokens, output_tokens, outcome FROM generation_log WHERE workspace_id = $1 ORDER BY id DESC LIMIT 1",
      [f.workspace.id],
    );
    expect(log.rows[0]).toEqual({ route: "chat", input_tokens: 400, output_tokens: 12, outcome: "ok" });
  });

  test("history is per person, replayed to the model, and capped at CHAT_HISTORY_MAX_MESSAGES on write and on read", async () => {
    for (const n of [1, 2, 3]) {
      ai.fake.enqueue({ kind: "text", text: `answer ${n}` });
      const res = await ask(`question ${n}`);
      await res.text();
      clock.t += 1000;
    }
    // The third call replayed what was kept at that time (4 messages = turns 1 and 2).
    expect(ai.fake.requests[2]!.text).toContain("question 1");
    expect(ai.fake.requests[2]!.text).toContain("answer 2");
    // Write cap: only the newest 4 rows are stored.
    const stored = await ai.store.pool.query("SELECT content FROM chat_messages WHERE dashboard_id = $1 ORDER BY id", [f.dashboardId]);
    expect(stored.rows.map((r) => r.content)).toEqual(["question 2", "answer 2", "question 3", "answer 3"]);
    // Read cap: rows beyond the cap that got in some other way are never returned.
    await ai.store.pool.query(
      `INSERT INTO chat_messages (workspace_id, dashboard_id, user_sub, role, content, created_at)
       SELECT $1, $2, $3, 'user', 'extra ' || g, $4::timestamptz + g * interval '1 second' FROM generate_series(1, 3) g`,
      [f.workspace.id, f.dashboardId, f.users.viewer.sub, new Date(clock.t).toISOString()],
    );
    expect((await history()).map((m) => m.content)).toEqual(["answer 3", "extra 1", "extra 2", "extra 3"]);
    // Another person on the same dashboard has a history of their own.
    expect(await history("editor")).toEqual([]);
  });

  test("messages expire after CHAT_HISTORY_RETENTION_DAYS: hidden on read, not replayed, swept on write", async () => {
    ai.fake.enqueue({ kind: "text", text: "old answer" });
    await (await ask("old question")).text();
    clock.t = NOW + 8 * DAY;
    expect(await history()).toEqual([]);
    ai.fake.enqueue({ kind: "text", text: "new answer" });
    await (await ask("new question")).text();
    expect(ai.fake.requests.at(-1)!.text).not.toContain("old question");
    const stored = await ai.store.pool.query("SELECT content FROM chat_messages WHERE dashboard_id = $1 ORDER BY id", [f.dashboardId]);
    expect(stored.rows.map((r) => r.content)).toEqual(["new question", "new answer"]);
  });

  test("a proposed change is returned as a structured change and applied with one call through the normal save", async () => {
    const newSpec = {
      ...f.spec,
      title: "HTTP (errors too)",
      panels: [
        ...f.spec.panels,
        {
          id: "err",
          title: "5xx",
          type: "stat",
          sourceId: f.sourceId,
          sql: "SELECT count(*) FROM http_requests WHERE status >= 500 AND $__timeFilter(ts)",
        },
      ],
    };
    const text = `I added a 5xx panel.\n\`\`\`proposal\n${JSON.stringify(newSpec)}\n\`\`\``;
    ai.fake.enqueue({ kind: "text", text, chunks: text.match(/[\s\S]{1,5}/g)! });
    const events = parseSse(await (await ask("add an error count", "editor")).text());
    const shown = events
      .filter((e) => e.event === "delta")
      .map((e) => (e.data as { text: string }).text)
      .join("");
    expect(shown).toBe("I added a 5xx panel.\n");
    const proposal = events.find((e) => e.event === "proposal")!.data as {
      messageId: string;
      proposal: { baseVersion: number; spec: { title: string } };
    };
    expect(proposal.proposal).toMatchObject({ baseVersion: 1, spec: { title: "HTTP (errors too)" } });

    const msgs = await history("editor");
    expect(msgs[1]).toMatchObject({ id: proposal.messageId, role: "assistant", content: "I added a 5xx panel." });

    // A viewer may chat but not apply; nobody applies someone else's proposal.
    expect((await apply(proposal.messageId, "viewer")).status).toBe(403);
    expect((await apply(proposal.messageId, "admin")).status).toBe(404);

    const res = await apply(proposal.messageId, "editor");
    expect(res.status).toBe(200);
    const saved = await res.json();
    expect(saved).toMatchObject({ version: 2, spec: { title: "HTTP (errors too)" } });
    const row = await ai.store.pool.query("SELECT version, spec->>'title' AS title FROM dashboards WHERE id = $1", [f.dashboardId]);
    expect(row.rows[0]).toEqual({ version: 2, title: "HTTP (errors too)" });
    // The proposal was written against version 1: applying it again is a conflict, not a silent overwrite.
    const again = await apply(proposal.messageId, "editor");
    expect(again.status).toBe(409);
    expect((await again.json()).code).toBe("version_conflict");
    await ai.store.pool.query("UPDATE dashboards SET spec = $2::jsonb, version = 1 WHERE id = $1", [f.dashboardId, JSON.stringify(f.spec)]);
  });

  test("a proposal the guard refuses is reported and not stored", async () => {
    const bad = { ...f.spec, panels: [{ ...f.spec.panels[0]!, sql: "SELECT usename FROM pg_catalog.pg_user" }] };
    const text = `Here you go.\n\`\`\`proposal\n${JSON.stringify(bad)}\n\`\`\``;
    ai.fake.enqueue({ kind: "text", text });
    const events = parseSse(await (await ask("show users", "editor")).text());
    expect(events.find((e) => e.event === "proposal")).toBeUndefined();
    const rejected = events.find((e) => e.event === "proposal_rejected")!.data as { panels: { reason: string }[] };
    expect(rejected.panels[0]!.reason).toBe("catalog");
    const msgs = await history("editor");
    expect(msgs[1]!.proposal).toBeNull();
  });

  test.each([
    ["HTTP 500", { kind: "error", status: 500 } as const, 502, "ai_provider_error"],
    ["HTTP 401", { kind: "error", status: 401 } as const, 502, "ai_provider_error"],
    ["timeout", { kind: "hang" } as const, 504, "ai_provider_timeout"],
  ])("a provider failing before the first token (%s) is a plain problem+json; nothing is stored", async (_n, reply, status, code) => {
    ai.fake.enqueue(reply);
    const res = await ask("hello?");
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect((await res.json()).code).toBe(code);
    expect(await history()).toEqual([]);
  });

  test("a provider dropping the connection mid-answer ends the stream with an error event and stores nothing", async () => {
    let release!: () => void;
    const dropWhen = new Promise<void>((r) => {
      release = r;
    });
    ai.fake.enqueue({
      kind: "text",
      text: "partial answer that never ends",
      chunks: ["partial ", "answer ", "that ", "never ends"],
      dropAfterChunks: 2,
      dropWhen,
    });
    const res = await ask("tell me everything");
    expect(res.status).toBe(200);
    // Read until the first delta has reached us, then let the provider drop the connection.
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("event: delta")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    release();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    const events = parseSse(text);
    expect(events[0]).toMatchObject({ event: "delta" });
    expect(events.at(-1)).toMatchObject({ event: "error", data: { code: "ai_provider_error" } });
    expect(await history()).toEqual([]);
    const log = await ai.store.pool.query(
      "SELECT outcome FROM generation_log WHERE workspace_id = $1 AND route = 'chat' ORDER BY id DESC LIMIT 1",
      [f.workspace.id],
    );
    expect(log.rows[0].outcome).toBe("provider_error");
  });

  test("DELETE clears only my history", async () => {
    ai.fake.enqueue({ kind: "text", text: "a" }, { kind: "text", text: "b" });
    await (await ask("mine")).text();
    await (await ask("theirs", "editor")).text();
    const res = await t.app.request(`/api/dashboards/${f.dashboardId}/chat`, { method: "DELETE", headers: { cookie: f.cookies.viewer! } });
    expect(await res.json()).toEqual({ deleted: 2 });
    expect(await history()).toEqual([]);
    expect(await history("editor")).toHaveLength(2);
  });
});
