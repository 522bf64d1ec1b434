import type pg from "pg";
import { Registry } from "prom-client";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { AppError } from "../http/errors.ts";
import { type Metrics, createMetrics } from "../metrics/metrics.ts";
import { createConfigStorePool } from "../store/pool.ts";
import { createTestConfigStore } from "../testing/pg.ts";
import { createWorkspace, setWorkspaceLimits } from "../workspaces/store.ts";
import { type AdmissionGate, createAdmissionGate, secondsToUtcMidnight, utcDay } from "./admission.ts";

let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let poolB: pg.Pool;
let ws: string;
let other: string;

beforeAll(async () => {
  store = await createTestConfigStore();
  // A second pool on the same database plays the second app instance.
  poolB = createConfigStorePool({ connectionString: store.url, max: 5 });
});
afterAll(async () => {
  await poolB.end();
  await store.close();
});

let seq = 0;
beforeEach(async () => {
  seq += 1;
  ws = (await createWorkspace(store.pool, { name: `gate ${seq}`, viewer_group: "v", editor_group: "e", admin_group: "a" })).id;
  other = (await createWorkspace(store.pool, { name: `other ${seq}`, viewer_group: "v2", editor_group: "e2", admin_group: "a2" })).id;
});

function metricsPair(): Metrics {
  return createMetrics(new Registry(), { defaultCollectors: false });
}

async function counter(m: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await m.registry.getSingleMetric(name)?.get();
  const v = metric?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val));
  return v?.value ?? 0;
}

function gate(pool: pg.Pool, metrics: Metrics, clock: { t: number }, defaults = { ratePerMinute: 20, dailyTokenBudget: 1000 }) {
  return createAdmissionGate({ pool, metrics, defaults, now: () => clock.t });
}

async function outcome(g: AdmissionGate, userSub: string, workspaceId = ws): Promise<string> {
  try {
    await g.admit({ route: "generate", workspaceId, userSub });
    return "admitted";
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

describe("token bucket", () => {
  test("50 concurrent requests at rate 20 admit exactly 20 across two instances sharing the database", async () => {
    const clock = { t: Date.UTC(2026, 0, 10, 12, 0, 0) };
    const mA = metricsPair();
    const mB = metricsPair();
    const a = gate(store.pool, mA, clock);
    const b = gate(poolB, mB, clock);
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => outcome(i % 2 ? a : b, "alice")));
    expect(results.filter((r) => r === "admitted")).toHaveLength(20);
    expect(results.filter((r) => r === "rate_limited")).toHaveLength(30);
    const admitted =
      (await counter(mA, "svc_llm_requests_total", { route: "generate", outcome: "admitted" })) +
      (await counter(mB, "svc_llm_requests_total", { route: "generate", outcome: "admitted" }));
    const limited =
      (await counter(mA, "svc_llm_requests_total", { route: "generate", outcome: "rate_limited" })) +
      (await counter(mB, "svc_llm_requests_total", { route: "generate", outcome: "rate_limited" }));
    expect([admitted, limited]).toEqual([20, 30]);
  });

  test("refills at the per-minute rate and Retry-After names the wait for the next token", async () => {
    const clock = { t: Date.UTC(2026, 0, 10, 12, 0, 0) };
    const g = gate(store.pool, metricsPair(), clock, { ratePerMinute: 6, dailyTokenBudget: 0 });
    for (let i = 0; i < 6; i++) expect(await outcome(g, "bob")).toBe("admitted");
    const err = await g.admit({ route: "chat", workspaceId: ws, userSub: "bob" }).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("rate_limited");
    expect(err.status).toBe(429);
    expect(err.headers["Retry-After"]).toBe("10"); // one token every 10 s at 6/min
    clock.t += 4_000;
    const later = await g.admit({ route: "chat", workspaceId: ws, userSub: "bob" }).catch((e) => e);
    expect(later.headers["Retry-After"]).toBe("6");
    clock.t += 6_000;
    expect(await outcome(g, "bob")).toBe("admitted");
    expect(await outcome(g, "bob")).toBe("rate_limited");
    // A full minute refills the burst, never beyond it.
    clock.t += 10 * 60_000;
    const burst = [];
    for (let i = 0; i < 8; i++) burst.push(await outcome(g, "bob"));
    expect(burst.filter((r) => r === "admitted")).toHaveLength(6);
  });

  test("buckets are per user and per workspace", async () => {
    const clock = { t: Date.UTC(2026, 0, 10, 12, 0, 0) };
    const g = gate(store.pool, metricsPair(), clock, { ratePerMinute: 1, dailyTokenBudget: 0 });
    expect(await outcome(g, "carol")).toBe("admitted");
    expect(await outcome(g, "carol")).toBe("rate_limited");
    expect(await outcome(g, "dave")).toBe("admitted");
    // The same person in another workspace has a bucket of their own, and spends nothing here.
    expect(await outcome(g, "carol", other)).toBe("admitted");
    expect(await outcome(g, "carol")).toBe("rate_limited");
  });

  test("a workspace override replaces the default, and 0 disables the rate limit", async () => {
    const clock = { t: Date.UTC(2026, 0, 10, 12, 0, 0) };
    const g = gate(store.pool, metricsPair(), clock, { ratePerMinute: 1, dailyTokenBudget: 0 });
    await setWorkspaceLimits(store.pool, ws, { llm_rate_per_minute: 3, llm_daily_token_budget: null });
    const three = [];
    for (let i = 0; i < 4; i++) three.push(await outcome(g, "erin"));
    expect(three).toEqual(["admitted", "admitted", "admitted", "rate_limited"]);
    await setWorkspaceLimits(store.pool, ws, { llm_rate_per_minute: 0, llm_daily_token_budget: null });
    for (let i = 0; i < 30; i++) expect(await outcome(g, "erin")).toBe("admitted");
    // Default 0 disables too, for workspaces without an override.
    const open = gate(store.pool, metricsPair(), clock, { ratePerMinute: 0, dailyTokenBudget: 0 });
    for (let i = 0; i < 30; i++) expect(await outcome(open, "frank", other)).toBe("admitted");
  });
});

describe("daily token budget", () => {
  test("over budget until the next UTC midnight, with Retry-After to it, then admitted again", async () => {
    const clock = { t: Date.UTC(2026, 0, 10, 23, 59, 0) };
    const m = metricsPair();
    const g = gate(store.pool, m, clock, { ratePerMinute: 0, dailyTokenBudget: 1000 });
    expect(await outcome(g, "gina")).toBe("admitted");
    await g.recordUsage(ws, "model-x", { input: 700, output: 299 });
    expect(await outcome(g, "gina")).toBe("admitted"); // 999 < 1000
    await g.recordUsage(ws, "model-x", { input: 1, output: 0 });
    const err = await g.admit({ route: "source_draft", workspaceId: ws, userSub: "gina" }).catch((e) => e);
    expect(err.code).toBe("over_budget");
    expect(err.status).toBe(429);
    expect(err.headers["Retry-After"]).toBe("60");
    clock.t = Date.UTC(2026, 0, 10, 23, 59, 59, 500);
    const last = await g.admit({ route: "source_draft", workspaceId: ws, userSub: "gina" }).catch((e) => e);
    expect(last.headers["Retry-After"]).toBe("1");
    clock.t = Date.UTC(2026, 0, 11, 0, 0, 0);
    expect(await outcome(g, "gina")).toBe("admitted");
    expect(await counter(m, "svc_llm_requests_total", { route: "source_draft", outcome: "over_budget" })).toBe(2);
    expect(await counter(m, "svc_llm_tokens_total", { workspace: ws, model: "model-x", direction: "input" })).toBe(701);
    expect(await counter(m, "svc_llm_tokens_total", { workspace: ws, model: "model-x", direction: "output" })).toBe(299);
    const { rows } = await store.pool.query("SELECT day::text, tokens::int FROM llm_usage_daily WHERE workspace_id = $1", [ws]);
    expect(rows).toEqual([{ day: "2026-01-10", tokens: 1000 }]);
  });

  test("the budget is per workspace: another workspace's usage neither blocks nor is visible here", async () => {
    const clock = { t: Date.UTC(2026, 0, 12, 8, 0, 0) };
    const g = gate(store.pool, metricsPair(), clock, { ratePerMinute: 0, dailyTokenBudget: 100 });
    await g.recordUsage(other, "m", { input: 500, output: 0 });
    expect(await outcome(g, "hank", other)).toBe("over_budget");
    expect(await outcome(g, "hank", ws)).toBe("admitted");
  });

  test("budget override and 0 = disabled; over budget is checked before the bucket is spent", async () => {
    const clock = { t: Date.UTC(2026, 0, 13, 8, 0, 0) };
    const g = gate(store.pool, metricsPair(), clock, { ratePerMinute: 2, dailyTokenBudget: 10 });
    await g.recordUsage(ws, "m", { input: 50, output: 0 });
    expect(await outcome(g, "ivy")).toBe("over_budget");
    await setWorkspaceLimits(store.pool, ws, { llm_rate_per_minute: null, llm_daily_token_budget: 100 });
    // The rejected request did not take a token: both of the burst of 2 are still there.
    expect(await outcome(g, "ivy")).toBe("admitted");
    expect(await outcome(g, "ivy")).toBe("admitted");
    expect(await outcome(g, "ivy")).toBe("rate_limited");
    await setWorkspaceLimits(store.pool, ws, { llm_rate_per_minute: 0, llm_daily_token_budget: 0 });
    await g.recordUsage(ws, "m", { input: 10_000_000, output: 0 });
    expect(await outcome(g, "ivy")).toBe("admitted");
  });
});

test("time helpers", () => {
  expect(utcDay(Date.UTC(2026, 5, 1, 23, 59, 59))).toBe("2026-06-01");
  expect(secondsToUtcMidnight(Date.UTC(2026, 5, 1, 0, 0, 0))).toBe(86_400);
  expect(secondsToUtcMidnight(Date.UTC(2026, 5, 1, 23, 59, 59, 999))).toBe(1);
});
