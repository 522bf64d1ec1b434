// One deadline for the whole generation request: the Lambda function's, read from the web adapter's
// x-amzn-lambda-context header. A slow local model server (the OpenAI-compatible fake, answers held by gate
// promises or never sent) stands in for the provider.
import { beforeAll, beforeEach, describe, expect, test } from "vitest";
import { GENERATION_RESERVE_MS } from "../../../lib/ai/generate.ts";
import type { AiTestApp } from "../../testing/ai-harness.ts";
import { type SeededAiFixture, useAiRouteFixture } from "../../testing/ai-route-fixture.ts";
import { functionDeadline } from "./generate.ts";
import { GOOD_PANEL as GOOD, NO_TIME_PANEL as NO_TIME, specText as spec } from "../../testing/generated-panels.ts";

const ai = useAiRouteFixture();
const NOW = Date.UTC(2026, 3, 10, 12, 0, 0);
const clock = { t: NOW };

describe("generation within the function's deadline", () => {
  let t: AiTestApp;
  let f: SeededAiFixture;
  beforeAll(async () => {
    // Each model call alone may take a minute: only the request's deadline can cut it shorter.
    ({ t, f } = await ai.seededApp({ clock, refreshedAt: new Date(NOW - 86_400_000), env: { AI_REQUEST_TIMEOUT_MS: "60000" } }));
  });
  beforeEach(() => {
    clock.t = NOW;
    ai.fake.reset();
  });

  const generate = (deadline?: number) =>
    t.app.request(`/api/workspaces/${f.workspace.id}/generate`, {
      method: "POST",
      headers: {
        cookie: f.cookies.editor!,
        "content-type": "application/json",
        ...(deadline === undefined
          ? {}
          : { "x-amzn-lambda-context": JSON.stringify({ request_id: "r1", deadline, invoked_function_arn: "arn:fn" }) }),
      },
      body: JSON.stringify({ prompt: "requests and errors", sourceId: f.sourceId }),
    });
  const lastRow = async () =>
    (
      await ai.store.pool.query("SELECT outcome, result FROM generation_log WHERE workspace_id = $1 ORDER BY id DESC LIMIT 1", [
        f.workspace.id,
      ])
    ).rows[0];

  test("a model slower than the time left: a clear 504 problem before the function times out, and the row written", async () => {
    ai.fake.enqueue({ kind: "hang" });
    // 1.5 s left after the reserve, although AI_REQUEST_TIMEOUT_MS would wait a minute.
    const res = await generate(NOW + GENERATION_RESERVE_MS + 1500);
    expect(res.status).toBe(504);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const body = await res.json();
    expect(body).toMatchObject({ code: "ai_provider_timeout", status: 504 });
    expect(body.detail).toMatch(/did not answer within the 2 s this request had left/);
    expect(ai.fake.requests).toHaveLength(1);
    expect(await lastRow()).toMatchObject({ outcome: "provider_timeout", result: { error: "ai_provider_timeout" } });
  });

  test("no time left for a model call at all: 504 without calling the model, row written", async () => {
    const res = await generate(NOW + GENERATION_RESERVE_MS + 500);
    expect(res.status).toBe(504);
    expect((await res.json()).code).toBe("ai_provider_timeout");
    expect(ai.fake.requests).toHaveLength(0);
    expect(await lastRow()).toMatchObject({ outcome: "provider_timeout" });
  });

  test("the repair round runs only when it fits: a first answer that used most of the time skips it", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    ai.fake.enqueue({ kind: "text", text: spec([GOOD, NO_TIME]), usage: { input: 100, output: 20 }, wait: held });
    const pending = generate(NOW + 50_000);
    // The first answer takes 30 s on the request's clock; 18 s are left, less than another such call.
    while (ai.fake.requests.length < 1) await new Promise((r) => setTimeout(r, 5));
    clock.t = NOW + 30_000;
    release();
    const res = await pending;
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.spec.panels.map((p: { id: string }) => p.id)).toEqual(["rps"]);
    expect(body.dropped).toEqual([expect.objectContaining({ panelId: "errors", reason: "time" })]);
    expect(body.warnings).toContainEqual(expect.stringContaining("The repair round was skipped: not enough of this request's time"));
    expect(ai.fake.requests).toHaveLength(1);
    expect(await lastRow()).toMatchObject({ outcome: "ok" });
  });

  test("with time to spare the repair round runs as before", async () => {
    const FIXED = { ...NO_TIME, sql: "SELECT count(*) FROM http_requests WHERE status >= 500 AND $__timeFilter(ts)" };
    ai.fake.enqueue(
      { kind: "text", text: spec([GOOD, NO_TIME]), usage: { input: 100, output: 20 } },
      { kind: "text", text: JSON.stringify({ panels: [FIXED] }), usage: { input: 50, output: 10 } },
    );
    const res = await generate(NOW + 80_000);
    expect(res.status).toBe(200);
    expect((await res.json()).repaired).toEqual(["errors"]);
    expect(ai.fake.requests).toHaveLength(2);
  });
});

describe("the function's deadline header", () => {
  test.each([
    [undefined, undefined],
    ["", undefined],
    ["not json", undefined],
    [JSON.stringify({ deadline: "soon" }), undefined],
    [JSON.stringify({ deadline: -5 }), undefined],
    [JSON.stringify({ request_id: "x", deadline: 1_775_822_400_000 }), 1_775_822_400_000],
  ])("%s → %s", (header, expected) => {
    expect(functionDeadline(header)).toBe(expected);
  });
});
