import { expect, test } from "vitest";
import type { AppError } from "../http/errors.ts";
import { createRateLimiter } from "./rate-limit.ts";

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

function refused(fn: () => void): AppError {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error("expected a refusal");
}

test("a burst of `perMinute`, then one token every 60/perMinute seconds, per key", () => {
  const c = clock();
  const limiter = createRateLimiter({ perMinute: 3, now: c.now, what: "tests" });
  for (let i = 0; i < 3; i++) limiter.take("alice");
  const err = refused(() => limiter.take("alice"));
  expect(err.code).toBe("rate_limited");
  expect(err.status).toBe(429);
  expect(err.headers).toEqual({ "Retry-After": "20" });
  expect(err.detail).toContain("3 per minute per person");
  // Another person has their own bucket.
  limiter.take("bob");
  c.advance(19_000);
  expect(refused(() => limiter.take("alice")).headers).toEqual({ "Retry-After": "1" });
  c.advance(1_000);
  limiter.take("alice");
  expect(refused(() => limiter.take("alice")).code).toBe("rate_limited");
});

test("0 disables", () => {
  const limiter = createRateLimiter({ perMinute: 0, what: "tests" });
  for (let i = 0; i < 100; i++) limiter.take("alice");
});

test("memory stays bounded: past maxKeys the buckets that refilled are dropped first", () => {
  const c = clock();
  const limiter = createRateLimiter({ perMinute: 1, now: c.now, maxKeys: 2, what: "tests" });
  limiter.take("a");
  c.advance(60_000);
  limiter.take("b");
  // "a" has refilled: dropping it loses nothing. "b" is still empty and must stay so.
  limiter.take("c");
  expect(refused(() => limiter.take("b")).code).toBe("rate_limited");
  expect(refused(() => limiter.take("c")).code).toBe("rate_limited");
});
