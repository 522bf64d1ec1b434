// Model output past the limits of a request body (nesting, size): refused as invalid_output before anything else walks
// it, with the generation_log row written and the tokens charged, in generation, source drafts and chat proposals.
import { beforeAll, beforeEach, describe, expect, test } from "vitest";
import { MAX_JSON_DEPTH } from "../../../lib/http/input.ts";
import { type AiTestApp, parseSse } from "../../testing/ai-harness.ts";
import { type SeededAiFixture, useAiRouteFixture } from "../../testing/ai-route-fixture.ts";
import { GOOD_PANEL } from "../../testing/generated-panels.ts";

const ai = useAiRouteFixture();
const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const clock = { t: NOW };

/** `{"a":{"a":…1…}}` nested `depth` levels, as JSON text (built without recursion). */
const nestedText = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

let t: AiTestApp;
let f: SeededAiFixture;
beforeAll(async () => {
  ({ t, f } = await ai.seededApp({ clock, refreshedAt: new Date(NOW - 86_400_000), env: { AI_REQUEST_TIMEOUT_MS: "10000" } }));
});
beforeEach(() => {
  clock.t = NOW;
  ai.fake.reset();
});

const lastLog = async (route: string) =>
  (
    await ai.store.pool.query(
      "SELECT outcome, input_tokens, output_tokens, result FROM generation_log WHERE workspace_id = $1 AND route = $2 ORDER BY id DESC LIMIT 1",
      [f.workspace.id, route],
    )
  ).rows[0];
const charged = async () =>
  (await ai.store.pool.query("SELECT coalesce(sum(tokens), 0)::int AS n FROM llm_usage_daily WHERE workspace_id = $1", [f.workspace.id]))
    .rows[0].n as number;

describe("generation", () => {
  test.each([MAX_JSON_DEPTH + 1, 2_000, 10_000])(
    "panel options nested %i levels deep: 502 invalid output, a generation_log row, tokens charged",
    async (depth) => {
      const spec = `{"title":"Deep","panels":[${JSON.stringify(GOOD_PANEL).slice(0, -1)},"options":${nestedText(depth)}}]}`;
      ai.fake.enqueue({ kind: "text", text: spec, usage: { input: 400, output: 90 } });
      const before = await charged();
      const res = await t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
        method: "POST",
        headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
        body: JSON.stringify({ sourceId: f.sourceId, prompt: "deep" }),
      });
      expect(res.status).toBe(502);
      const body = await res.json();
      expect(body.code).toBe("ai_provider_error");
      expect(body.detail).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
      expect(await lastLog("generate")).toMatchObject({ outcome: "invalid_output", input_tokens: 400, output_tokens: 90 });
      expect((await charged()) - before).toBe(490);
    },
  );

  test("a spec within the limits still works", async () => {
    ai.fake.enqueue({ kind: "text", text: JSON.stringify({ title: "Fine", panels: [{ ...GOOD_PANEL, options: { decimals: 1 } }] }) });
    const res = await t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json" },
      body: JSON.stringify({ sourceId: f.sourceId, prompt: "fine" }),
    });
    expect(res.status).toBe(200);
  });
});

describe("source draft", () => {
  test("a draft nested 10,000 levels deep is refused as invalid output and logged with its tokens", async () => {
    ai.fake.enqueue({ kind: "text", text: `{"summary":"s","tables":[],"extra":${nestedText(10_000)}}`, usage: { input: 50, output: 60 } });
    const before = await charged();
    const res = await t.app.request(`/api/sources/${f.sourceId}/draft`, { method: "POST", headers: { cookie: f.cookies.admin! } });
    expect(res.status).toBe(502);
    expect(await lastLog("source_draft")).toMatchObject({ outcome: "invalid_output", input_tokens: 50, output_tokens: 60 });
    expect((await charged()) - before).toBe(110);
  });
});

describe("chat", () => {
  test.each([2_000, 10_000])("a proposal nested %i levels deep is left out; the turn is stored, logged and charged", async (depth) => {
    await ai.store.pool.query("DELETE FROM chat_messages");
    const text = `Here it is.\n\`\`\`proposal\n{"title":"Deep","panels":[],"options":${nestedText(depth)}}\n\`\`\``;
    ai.fake.enqueue({ kind: "text", text, chunks: [text.slice(0, 5), text.slice(5)], usage: { input: 30, output: 40 } });
    const before = await charged();
    const res = await t.app.request(`/api/dashboards/${f.dashboardId}/chat`, {
      method: "POST",
      headers: { cookie: f.cookies.editor!, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ message: "make it deep" }),
    });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(events.filter((e) => e.event === "error")).toEqual([]);
    expect(events.find((e) => e.event === "proposal")).toBeUndefined();
    const rejected = events.find((e) => e.event === "proposal_rejected")!.data as { detail: string };
    expect(rejected.detail).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
    expect(events.at(-1)?.event).toBe("done");
    const row = await lastLog("chat");
    expect(row).toMatchObject({ outcome: "ok", input_tokens: 30, output_tokens: 40 });
    expect(row.result.proposal).toBeNull();
    expect((await charged()) - before).toBe(70);
  });
});
