import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import type { DashboardSpec } from "../dashboards/spec.ts";
import { type Dashboard, getDashboard } from "../dashboards/store.ts";
import { createLogger } from "../log/logger.ts";
import { createGuard, loadGuardParser } from "../sql-guard/index.ts";
import { newId } from "../store/ids.ts";
import { createTestConfigStore } from "../testing/pg.ts";
import { createWorkspace } from "../workspaces/store.ts";
import { type ChatDeps, type ChatEvent, startChat } from "./chat.ts";
import { createChatStore } from "./chat-store.ts";
import { createGenerationLog } from "./generation-log.ts";
import { createAiProvider, requireProvider } from "./provider.ts";
import { type FakeOpenAI, startFakeOpenAI } from "./testing/fake-openai.ts";
import { recordingGate } from "./testing/recording-gate.ts";

// startChat with the real stores on a test database and the real provider code against the local
// OpenAI-compatible fake: what reaches the provider, and what is stored of a turn.

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let fake: FakeOpenAI;
let workspaceId: string;
let dashboard: Dashboard;

beforeAll(async () => {
  await loadGuardParser();
  store = await createTestConfigStore();
  fake = await startFakeOpenAI();
  workspaceId = (await createWorkspace(store.pool, { name: "chat", viewer_group: "v", editor_group: "e", admin_group: "a" })).id;
  const spec: DashboardSpec = { title: "HTTP", time: { from: "now-1h", to: "now" }, panels: [] };
  const id = newId("db");
  await store.pool.query(
    "INSERT INTO dashboards (id, workspace_id, spec, version, created_by, updated_by) VALUES ($1, $2, $3::jsonb, 1, 'seed', 'seed')",
    [id, workspaceId, JSON.stringify(spec)],
  );
  dashboard = (await getDashboard(store.pool, id))!;
});
afterAll(async () => {
  await fake?.close();
  await store?.close();
});
beforeEach(async () => {
  fake.reset();
  await store.pool.query("DELETE FROM chat_messages");
  await store.pool.query("DELETE FROM generation_log");
});

const MAX_OUTPUT_TOKENS = 640;

function deps(api: "chat" | "responses", opts: { logMaxChars?: number } = {}): ChatDeps {
  const provider = requireProvider(
    createAiProvider({
      AI_PROVIDER: "compat",
      AI_MODEL: "fake-model",
      AI_GATEWAY_API_KEY: undefined,
      AI_GATEWAY_BASE_URL: undefined,
      AI_COMPAT_BASE_URL: fake.baseURL,
      AI_COMPAT_API_KEY: fake.apiKey,
      AI_COMPAT_API: api,
    }),
  );
  return {
    model: { provider, gate: recordingGate(), log: createLogger({ silent: true }), timeoutMs: 5_000, maxOutputTokens: MAX_OUTPUT_TOKENS },
    pool: store.pool,
    guard: createGuard(),
    chats: createChatStore({ pool: store.pool, maxMessages: 20, retentionDays: 0 }),
    generationLog: createGenerationLog({
      pool: store.pool,
      retentionDays: 0,
      costPerMTok: { input: 0, output: 0 },
      maxChars: opts.logMaxChars ?? 20_000,
    }),
    config: { MIN_REFRESH_INTERVAL_MS: 2_000 },
  };
}

/** Runs one turn to its end: the events the browser got and the error the stream ended with, if any. */
async function ask(d: ChatDeps, message: string): Promise<{ events: ChatEvent[]; text: string; error?: unknown }> {
  const stream = await startChat(d, { workspaceId, userSub: "u1", dashboard, request: { message } });
  const events: ChatEvent[] = [];
  try {
    for await (const e of stream) events.push(e);
  } catch (error) {
    return { events, text: deltas(events), error };
  }
  return { events, text: deltas(events) };
}
const deltas = (events: ChatEvent[]) => events.flatMap((e) => (e.type === "delta" ? [e.text] : [])).join("");

async function auditRows() {
  const { rows } = await store.pool.query<{ prompt: string; result: Record<string, unknown>; outcome: string }>(
    "SELECT prompt, result, outcome FROM generation_log WHERE workspace_id = $1 ORDER BY id",
    [workspaceId],
  );
  return rows;
}
const history = () =>
  createChatStore({ pool: store.pool, maxMessages: 20, retentionDays: 0 }).history({
    workspaceId,
    dashboardId: dashboard.id,
    userSub: "u1",
  });

describe.each(["chat", "responses"] as const)("chat turns over the %s API", (api) => {
  test("AI_MAX_OUTPUT_TOKENS reaches the provider's request body", async () => {
    fake.enqueue({ kind: "text", text: "Fine.", usage: { input: 10, output: 2 } });
    const turn = await ask(deps(api), "how is it?");
    expect(turn.error).toBeUndefined();
    const req = fake.requests.at(-1)!;
    expect(req.stream).toBe(true);
    expect(api === "chat" ? req.body.max_tokens : req.body.max_output_tokens).toBe(MAX_OUTPUT_TOKENS);
  });

  test("an answer carrying NUL and an unpaired surrogate is stored, as U+FFFD, in the history and the audit row", async () => {
    const answer = "bad\u0000byte and \uD800 half";
    fake.enqueue({ kind: "text", text: answer, usage: { input: 10, output: 5 }, chunks: [answer] });
    const turn = await ask(deps(api), "anything odd?");
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe(answer);
    expect(turn.events.at(-1)?.type).toBe("done");
    const stored = "bad\uFFFDbyte and \uFFFD half";
    expect((await history()).map((m) => m.content)).toEqual(["anything odd?", stored]);
    const rows = await auditRows();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ outcome: "ok", result: { text: stored } });
  });

  test("a turn whose insert fails still leaves its audit row; the stream ends with the failure", async () => {
    await store.pool.query(`
      CREATE FUNCTION refuse_chat_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'chat_messages refuses inserts in this test'; END $$;
      CREATE TRIGGER refuse_chat_insert BEFORE INSERT ON chat_messages FOR EACH ROW EXECUTE FUNCTION refuse_chat_insert();
    `);
    try {
      fake.enqueue({ kind: "text", text: "Traffic is flat.", usage: { input: 30, output: 4 } });
      const turn = await ask(deps(api), "and traffic?");
      expect(turn.text).toBe("Traffic is flat.");
      expect(turn.events.some((e) => e.type === "done")).toBe(false);
      expect(turn.error).toMatchObject({ code: "P0001" });
      expect(await history()).toEqual([]);
      const rows = await auditRows();
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ prompt: "and traffic?", outcome: "ok", result: { text: "Traffic is flat.", turnStored: false } });
    } finally {
      await store.pool.query("DROP TRIGGER refuse_chat_insert ON chat_messages; DROP FUNCTION refuse_chat_insert()");
    }
  });

  test("a 200 KB pathological answer reaches the person whole; its audit row keeps AI_LOG_MAX_CHARS characters", async () => {
    const answer = "a-".repeat(100_000);
    const chunks = Array.from({ length: 100 }, (_, i) => answer.slice(i * 2_000, (i + 1) * 2_000));
    fake.enqueue({ kind: "text", text: answer, usage: { input: 10, output: 50_000 }, chunks });
    const turn = await ask(deps(api, { logMaxChars: 1_000 }), "say a lot");
    expect(turn.error).toBeUndefined();
    expect(turn.text).toBe(answer);
    const rows = await auditRows();
    expect(rows).toHaveLength(1);
    // The row's strings share the budget: the dashboard id comes first, the answer gets the rest.
    expect(rows[0]!.result.dashboardId).toBe(dashboard.id);
    const kept = 1_000 - dashboard.id.length;
    expect(rows[0]!.result.text).toBe(`${answer.slice(0, kept)} …[truncated: ${answer.length} characters in all, AI_LOG_MAX_CHARS]`);
  });
});
