import { describe, expect, test } from "vitest";
import { createCoalescer } from "./coalesce.ts";
import type { QueryResult } from "./types.ts";

const result = (n: number): QueryResult => ({ columns: [{ name: "n", type: "int4" }], rows: [[n]], truncated: false, elapsedMs: 1 });

/** A query the test settles by hand, recording the signal it was started with. */
function gated() {
  const started: { signal: AbortSignal; resolve(r: QueryResult): void; reject(e: unknown): void }[] = [];
  const start = (signal: AbortSignal) =>
    new Promise<QueryResult>((resolve, reject) => {
      started.push({ signal, resolve, reject });
    });
  return { started, start };
}

describe("createCoalescer", () => {
  test("identical runs while one is in flight share it; each caller gets its own result object", async () => {
    const c = createCoalescer({ now: () => 0 });
    const q = gated();
    const a = c.share("k", undefined, q.start);
    const b = c.share("k", undefined, q.start);
    expect(q.started).toHaveLength(1);
    q.started[0].resolve(result(7));
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.rows).toEqual([[7]]);
    expect(rb).toEqual(ra);
    expect(rb).not.toBe(ra);
    expect(c.stats).toEqual({ started: 1, joined: 1 });
  });

  test("different keys never share", async () => {
    const c = createCoalescer({ now: () => 0 });
    const q = gated();
    void c.share("k1", undefined, q.start);
    void c.share("k2", undefined, q.start);
    expect(q.started).toHaveLength(2);
    for (const s of q.started) s.resolve(result(1));
  });

  test("a result serves identical runs for keepMs after it came in, then the next run queries again", async () => {
    let t = 1_000;
    const c = createCoalescer({ now: () => t, keepMs: 500 });
    const q = gated();
    const first = c.share("k", undefined, q.start);
    q.started[0].resolve(result(1));
    await first;
    t += 500;
    expect((await c.share("k", undefined, q.start)).rows).toEqual([[1]]);
    expect(q.started).toHaveLength(1);
    t += 1;
    const again = c.share("k", undefined, q.start);
    expect(q.started).toHaveLength(2);
    q.started[1].resolve(result(2));
    expect((await again).rows).toEqual([[2]]);
  });

  test("a failure reaches the runs that waited for it and is not kept", async () => {
    const c = createCoalescer({ now: () => 0 });
    const q = gated();
    const a = c.share("k", undefined, q.start);
    const b = c.share("k", undefined, q.start);
    q.started[0].reject(new Error("boom"));
    await expect(a).rejects.toThrow("boom");
    await expect(b).rejects.toThrow("boom");
    void c.share("k", undefined, q.start);
    expect(q.started).toHaveLength(2);
    expect(c.size).toBe(1);
  });

  test("the query's signal aborts only when every waiting caller's signal has aborted", async () => {
    const c = createCoalescer({ now: () => 0 });
    const q = gated();
    const one = new AbortController();
    const two = new AbortController();
    void c.share("k", one.signal, q.start).catch(() => {});
    void c.share("k", two.signal, q.start).catch(() => {});
    one.abort();
    expect(q.started[0].signal.aborted).toBe(false);
    two.abort();
    expect(q.started[0].signal.aborted).toBe(true);
  });

  test("a run whose own signal is already aborted starts its query aborted", () => {
    const c = createCoalescer({ now: () => 0 });
    const q = gated();
    void c.share("k", AbortSignal.abort(), q.start).catch(() => {});
    expect(q.started[0].signal.aborted).toBe(true);
  });
});
