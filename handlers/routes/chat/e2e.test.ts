import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import type { AiTestApp } from "../../testing/ai-harness.ts";
import { type SeededAiFixture, useAiRouteFixture } from "../../testing/ai-route-fixture.ts";

// Over a real socket: a browser that goes away mid-answer stops the model call, and the half
// answer is never stored (the log row says `cancelled`).
const ai = useAiRouteFixture();
let t: AiTestApp;
let f: SeededAiFixture;
let server: ReturnType<typeof serve>;
let base: string;
const clock = { t: Date.UTC(2026, 8, 1, 12) };

beforeAll(async () => {
  ({ t, f } = await ai.seededApp({ clock, refreshedAt: new Date(clock.t) }));
  await new Promise<void>((resolve) => {
    server = serve({ fetch: t.app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve());
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test("the answer streams over HTTP; closing the connection mid-answer cancels the model call and stores nothing", async () => {
  // The provider sends two chunks and then holds the connection open for good.
  ai.fake.enqueue({
    kind: "text",
    text: "first second third",
    chunks: ["first ", "second ", "third"],
    dropAfterChunks: 2,
    dropWhen: new Promise<void>(() => {}),
  });
  const browser = new AbortController();
  const res = await fetch(`${base}/api/dashboards/${f.dashboardId}/chat`, {
    method: "POST",
    headers: { cookie: f.cookies.viewer!, "content-type": "application/json" },
    body: JSON.stringify({ message: "stream please" }),
    signal: browser.signal,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const reader = res.body!.getReader();
  let text = "";
  while (!text.includes("second")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  expect(text).toContain("event: delta");
  browser.abort();

  await vi.waitFor(
    async () => {
      const { rows } = await ai.store.pool.query("SELECT outcome FROM generation_log WHERE workspace_id = $1 AND route = 'chat'", [
        f.workspace.id,
      ]);
      expect(rows).toEqual([{ outcome: "cancelled" }]);
    },
    { timeout: 5_000, interval: 20 },
  );
  const stored = await ai.store.pool.query("SELECT count(*)::int AS n FROM chat_messages WHERE dashboard_id = $1", [f.dashboardId]);
  expect(stored.rows[0].n).toBe(0);
  // The provider reported no usage before the cut, but it read the whole prompt and wrote two chunks:
  // a cancelled turn still costs the workspace's budget (an estimate), or cancelling would dodge it.
  const used = await ai.store.pool.query("SELECT coalesce(sum(tokens), 0)::int AS n FROM llm_usage_daily WHERE workspace_id = $1", [
    f.workspace.id,
  ]);
  expect(used.rows[0].n).toBeGreaterThan(100);
});
