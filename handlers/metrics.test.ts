import { afterAll, beforeAll, expect, test } from "vitest";
import { type ApiFixture, createApiFixture } from "./testing/api-fixture.ts";

const TOKEN = "handlers-metrics-token-0123456789abcdef";
let fx: ApiFixture;
let disabled: ApiFixture;

beforeAll(async () => {
  [fx, disabled] = await Promise.all([createApiFixture({ env: { METRICS_TOKEN: TOKEN } }), createApiFixture()]);
});
afterAll(() => Promise.all([fx.close(), disabled.close()]));

test("the handlers serve their own counters at /api/metrics behind the same gate", async () => {
  expect((await disabled.app.request("/api/metrics")).status).toBe(404);
  const denied = await fx.app.request("/api/metrics");
  expect(denied.status).toBe(401);
  expect(denied.headers.get("www-authenticate")).toBe("Bearer");
  const res = await fx.app.request("/api/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  const text = await res.text();
  // Counters only the handlers move (model admission, guard refusals of saves) are part of the scrape.
  expect(text).toContain("# TYPE svc_llm_requests_total counter");
  expect(text).toContain("# TYPE svc_sql_validation_rejections_total counter");
  expect(text).not.toContain(TOKEN);
});
