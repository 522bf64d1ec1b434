import { describe, expect, test } from "vitest";
import { MAX_REFRESH_INTERVAL_MS, effectiveRefreshMs } from "./spec.ts";

describe("refresh cadence ceiling", () => {
  test("a stored refresh interval past a day is read as a day, so the poller's timer never overflows", () => {
    const cfg = { DEFAULT_REFRESH_INTERVAL_MS: 15_000, MIN_REFRESH_INTERVAL_MS: 2_000 };
    expect(effectiveRefreshMs({ refreshIntervalMs: 2 ** 53 }, cfg)).toBe(MAX_REFRESH_INTERVAL_MS);
    expect(effectiveRefreshMs({ refreshIntervalMs: 60_000 }, cfg)).toBe(60_000);
    expect(effectiveRefreshMs({}, { ...cfg, DEFAULT_REFRESH_INTERVAL_MS: 10 ** 12 })).toBe(MAX_REFRESH_INTERVAL_MS);
  });
});
