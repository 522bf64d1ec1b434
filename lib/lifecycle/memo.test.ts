import { expect, test } from "vitest";
import { memoUntilFailure } from "./memo.ts";

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
