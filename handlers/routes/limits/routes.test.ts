import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { getWorkspaceLimits } from "../../../lib/workspaces/store.ts";
import { type ApiFixture, call, createApiFixture } from "../../testing/api-fixture.ts";

let fx: ApiFixture;
let path: string;

beforeAll(async () => {
  fx = await createApiFixture({ env: { LLM_RATE_PER_MINUTE: "12", LLM_DAILY_TOKEN_BUDGET: "500000" } });
  path = `/api/workspaces/${fx.roles.workspace.id}/limits`;
});
afterAll(() => fx.close());

describe("workspace limits", () => {
  test("read shows no overrides, the defaults and what applies", async () => {
    const res = await call(fx.app, fx.roles.cookies.admin, "GET", path);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      workspaceId: fx.roles.workspace.id,
      overrides: { llmRatePerMinute: null, llmDailyTokenBudget: null },
      defaults: { llmRatePerMinute: 12, llmDailyTokenBudget: 500000 },
      effective: { llmRatePerMinute: 12, llmDailyTokenBudget: 500000 },
    });
  });

  test("update sets overrides (0 disables), null clears one back to the default", async () => {
    const put = await call(fx.app, fx.roles.cookies.admin, "PUT", path, { llmRatePerMinute: 0, llmDailyTokenBudget: 9_000_000_000 });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({
      overrides: { llmRatePerMinute: 0, llmDailyTokenBudget: 9_000_000_000 },
      effective: { llmRatePerMinute: 0, llmDailyTokenBudget: 9_000_000_000 },
    });
    expect(await getWorkspaceLimits(fx.pool, fx.roles.workspace.id)).toMatchObject({
      llm_rate_per_minute: 0,
      llm_daily_token_budget: 9_000_000_000,
    });

    const clear = await call(fx.app, fx.roles.cookies.admin, "PUT", path, { llmRatePerMinute: null, llmDailyTokenBudget: 100 });
    expect(await clear.json()).toMatchObject({
      overrides: { llmRatePerMinute: null },
      effective: { llmRatePerMinute: 12, llmDailyTokenBudget: 100 },
    });
  });

  test.each([
    [{ llmRatePerMinute: -1, llmDailyTokenBudget: null }, "llmRatePerMinute"],
    [{ llmRatePerMinute: 1.5, llmDailyTokenBudget: null }, "llmRatePerMinute"],
    [{ llmRatePerMinute: 2 ** 31, llmDailyTokenBudget: null }, "llmRatePerMinute"],
    [{ llmRatePerMinute: null, llmDailyTokenBudget: "lots" }, "llmDailyTokenBudget"],
    [{ llmRatePerMinute: null }, "llmDailyTokenBudget"],
  ])("%j is a 400 naming %s and changes nothing", async (body, field) => {
    const before = await getWorkspaceLimits(fx.pool, fx.roles.workspace.id);
    const res = await call(fx.app, fx.roles.cookies.admin, "PUT", path, body);
    expect(res.status).toBe(400);
    expect((await res.json()).issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: field })]));
    expect(await getWorkspaceLimits(fx.pool, fx.roles.workspace.id)).toEqual(before);
  });

  test("an editor can neither read nor change limits", async () => {
    expect((await call(fx.app, fx.roles.cookies.editor, "GET", path)).status).toBe(403);
    expect((await call(fx.app, fx.roles.cookies.editor, "PUT", path, { llmRatePerMinute: 1, llmDailyTokenBudget: 1 })).status).toBe(403);
  });
});
