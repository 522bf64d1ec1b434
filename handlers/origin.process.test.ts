// The function URL cannot be used around the CDN: a real handlers process with ORIGIN_VERIFY_SECRET refuses
// every request without the CDN's header (probes included), while the Lambda Web Adapter's readiness check
// reaches /api/health on its own loopback port.
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { get } from "../stream-host/testing/child.ts";
import { freePort } from "../lib/embedded/postgres.ts";
import { createTestConfigStore } from "../lib/testing/pg.ts";
import { ORIGIN_VERIFY_HEADER } from "./origin-guard.ts";
import { spawnHandlers } from "./testing/spawn-handlers.ts";

const CURRENT = "origin-secret-current-0123456789abcdef";
const PREVIOUS = "origin-secret-previous-0123456789abcdef";
let store: Awaited<ReturnType<typeof createTestConfigStore>>;
let child: ChildProcess;
let port: number;
let checkPort: number;

beforeAll(async () => {
  store = await createTestConfigStore();
  port = await freePort();
  checkPort = await freePort();
  ({ child } = await spawnHandlers({
    DATABASE_URL: store.url,
    SESSION_SECRET: "origin-process-test-secret-0123456789",
    PORT: String(port),
    HEALTH_CHECK_PORT: String(checkPort),
    ORIGIN_VERIFY_SECRET: CURRENT,
    ORIGIN_VERIFY_SECRET_PREVIOUS: PREVIOUS,
  }));
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await store.close();
});

describe("origin secret", () => {
  test.each([
    ["no header", {}],
    ["a wrong value", { [ORIGIN_VERIFY_HEADER]: "nope" }],
    ["the secret with a suffix", { [ORIGIN_VERIFY_HEADER]: `${CURRENT}x` }],
    ["an empty value", { [ORIGIN_VERIFY_HEADER]: "" }],
  ])("%s: every path, probes included, is 403 forbidden without touching the app", async (_name, headers) => {
    for (const path of ["/api/health", "/api/ready", "/api/me", "/", "/api/nope"]) {
      const r = await get(port, path, headers as Record<string, string>);
      expect(r.status, path).toBe(403);
      expect(r.headers["content-type"]).toContain("application/problem+json");
      const body = JSON.parse(r.body);
      expect(body.code).toBe("forbidden");
      expect(r.body).not.toContain(CURRENT);
    }
  });

  test("the current and, during a rotation, the previous value pass", async () => {
    for (const value of [CURRENT, PREVIOUS]) {
      expect((await get(port, "/api/health", { [ORIGIN_VERIFY_HEADER]: value })).status).toBe(200);
      const ready = await get(port, "/api/ready", { [ORIGIN_VERIFY_HEADER]: value });
      expect(JSON.parse(ready.body).checks.database).toEqual({ status: "ok" });
    }
  });

  test("the adapter's readiness check: /api/health on the loopback check port without the header, nothing else there", async () => {
    const health = await get(checkPort, "/api/health");
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body).status).toBe("ok");
    expect((await get(checkPort, "/api/ready")).status).toBe(404);
    expect((await get(checkPort, "/api/me")).status).toBe(404);
  });
});
