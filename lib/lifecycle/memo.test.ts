import { expect, test } from "vitest";
import { memoPerKey, memoUntilFailure } from "./memo.ts";

test("one load shared by concurrent and later callers; a failed load is tried again by the next call", async () => {
  let calls = 0;
  let fail = true;
  const load = memoUntilFailure(async () => {
    calls++;
    if (fail) throw new Error("chunk not readable");
    return calls;
  });
  const [a, b] = await Promise.allSettled([load(), load()]);
  expect(a.status).toBe("rejected");
  expect(b.status).toBe("rejected");
  expect(calls).toBe(1);
  fail = false;
  expect(await load()).toBe(2);
  expect(await load()).toBe(2);
  expect(calls).toBe(2);
});

test("memoPerKey: one load per key; a changed key loads anew, and an older key's failure leaves the newer load", async () => {
  let key = "k1";
  const loads: string[] = [];
  let failFirst!: (err: Error) => void;
  const load = memoPerKey(
    () => key,
    (k) => {
      loads.push(String(k));
      if (k === "k1") return new Promise<string>((_, reject) => (failFirst = reject));
      return Promise.resolve(`model for ${k}`);
    },
  );
  const first = load();
  expect(load()).toBe(first);
  key = "k2";
  const second = load();
  failFirst(new Error("k1 revoked"));
  await expect(first).rejects.toThrow("k1 revoked");
  expect(await second).toBe("model for k2");
  expect(load()).toBe(second);
  expect(loads).toEqual(["k1", "k2"]);
});
