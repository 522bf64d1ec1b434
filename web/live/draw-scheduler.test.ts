import { describe, expect, test } from "vitest";
import { createDrawScheduler, type Sighting } from "./draw-scheduler.ts";

/**
 * A scheduler over fake frames, a fake observer and a fake clock; elements are plain objects standing for panels.
 * A panel sits where `at` puts it (else in the order it was made, one per row) and its draw advances the clock by
 * `cost` ms (else 1).
 */
function setup(
  initiallyVisible: (el: Element) => boolean = () => true,
  opts: { at?: Record<string, { top: number; left: number }>; cost?: Record<string, number>; budgetMs?: number } = {},
) {
  const frames: (() => void)[] = [];
  let report: (entries: readonly Sighting[]) => void = () => {};
  const observed = new Set<Element>();
  const drawn: string[] = [];
  const layoutReads: Element[] = [];
  const order: string[] = [];
  let clock = 0;
  const nameOf = (el: Element) => (el as unknown as { name: string }).name;
  const scheduler = createDrawScheduler({
    requestFrame: (cb) => frames.push(cb),
    watch: (onChange) => {
      report = onChange;
      return { observe: (el) => observed.add(el), unobserve: (el) => observed.delete(el), disconnect: () => observed.clear() };
    },
    inViewport: (el) => {
      layoutReads.push(el);
      return initiallyVisible(el);
    },
    position: (el) => opts.at?.[nameOf(el)] ?? { top: order.indexOf(nameOf(el)) * 100, left: 0 },
    now: () => clock,
    budgetMs: opts.budgetMs ?? 6,
    onError: (err) => drawn.push(`error ${(err as Error).message}`),
  });
  /** A panel; `draw` runs on each of its draws (after the clock moves and the name is recorded). */
  const panel = (name: string, draw: () => void = () => {}) => {
    const el = { name } as unknown as Element;
    order.push(name);
    scheduler.add(el, () => {
      clock += opts.cost?.[name] ?? 1;
      drawn.push(name);
      draw();
    });
    return el;
  };
  /** Runs the frames requested so far (not those they request). */
  const runFrames = () => {
    const due = frames.splice(0);
    for (const f of due) f();
  };
  /** Runs one frame at a time until none is requested; returns the panels each frame drew. */
  const runAllFrames = () => {
    const perFrame: string[][] = [];
    while (frames.length > 0) {
      const before = drawn.length;
      runFrames();
      perFrame.push(drawn.slice(before));
    }
    return perFrame;
  };
  const see = (el: Element, isIntersecting: boolean) => report([{ target: el, isIntersecting }]);
  return { scheduler, frames, observed, drawn, layoutReads, panel, runFrames, runAllFrames, see };
}

describe("the live page's draw scheduler", () => {
  test("many invalidations before a frame are one draw per panel, in that frame", () => {
    const t = setup();
    const a = t.panel("a");
    const b = t.panel("b");
    for (let i = 0; i < 5; i++) {
      t.scheduler.invalidate(a);
      t.scheduler.invalidate(b);
    }
    expect(t.drawn).toEqual([]);
    expect(t.frames).toHaveLength(1);
    t.runFrames();
    expect(t.drawn).toEqual(["a", "b"]);
    t.runFrames();
    expect(t.drawn).toEqual(["a", "b"]);
  });

  test("a panel outside the viewport is not drawn until it scrolls in, then once, from its latest data", () => {
    const below = new Set<string>(["c"]);
    const t = setup((el) => !below.has((el as unknown as { name: string }).name));
    const a = t.panel("a");
    const c = t.panel("c");
    t.scheduler.invalidateAll();
    t.runFrames();
    // Before the observer reports, the layout says where each panel is: one read per panel, on the first frame.
    expect(t.layoutReads).toEqual([a, c]);
    expect(t.drawn).toEqual(["a"]);
    t.see(a, true);
    t.see(c, false);
    for (let tick = 0; tick < 3; tick++) {
      t.scheduler.invalidate(a);
      t.scheduler.invalidate(c);
      t.runFrames();
    }
    expect(t.drawn).toEqual(["a", "a", "a", "a"]);
    expect(t.scheduler.visibleCount()).toBe(1);
    t.see(c, true);
    expect(t.frames).toHaveLength(1);
    t.runFrames();
    expect(t.drawn.at(-1)).toBe("c");
    expect(t.drawn.filter((n) => n === "c")).toHaveLength(1);
    expect(t.layoutReads).toHaveLength(2);
  });

  test("a panel with something to draw outside the viewport is reported held (first frame's layout read, invalidation, the observer); one in view is not", () => {
    const below = new Set<string>(["c"]);
    const t = setup((el) => !below.has((el as unknown as { name: string }).name));
    const held: string[] = [];
    const a = { name: "a" } as unknown as Element;
    const c = { name: "c" } as unknown as Element;
    t.scheduler.add(
      a,
      () => t.drawn.push("a"),
      () => held.push("a"),
    );
    t.scheduler.add(
      c,
      () => t.drawn.push("c"),
      () => held.push("c"),
    );
    // Nothing to draw yet: nothing held.
    t.runFrames();
    expect(held).toEqual([]);
    t.scheduler.invalidateAll();
    t.runFrames();
    expect(t.drawn).toEqual(["a"]);
    expect(held).toEqual(["c"]);
    t.scheduler.invalidate(c);
    expect(held).toEqual(["c", "c"]);
    // Scrolled in: drawn, and no longer held; scrolled out with new data: held again.
    t.see(c, true);
    t.runFrames();
    expect(t.drawn).toEqual(["a", "c"]);
    t.see(c, false);
    expect(held).toEqual(["c", "c"]);
    t.scheduler.invalidate(c);
    t.see(c, false);
    expect(held).toEqual(["c", "c", "c", "c"]);
    expect(held).not.toContain("a");
  });

  test("a theme change (invalidateAll everywhere) draws the panels drawn before outside the viewport too, after the visible ones, within the budget; one never drawn still waits", () => {
    const below = new Set<string>(["c", "d", "e"]);
    const t = setup((el) => !below.has((el as unknown as { name: string }).name), {
      at: {
        a: { top: 300, left: 0 },
        b: { top: 400, left: 0 },
        c: { top: -500, left: 0 },
        d: { top: 1200, left: 0 },
        e: { top: 2000, left: 0 },
      },
      cost: { a: 2, b: 2, c: 4, d: 4, e: 4 },
      budgetMs: 3,
    });
    const held: string[] = [];
    const [a, b, c, d] = ["a", "b", "c", "d"].map((n) => t.panel(n));
    const e = { name: "e" } as unknown as Element;
    t.scheduler.add(
      e,
      () => t.drawn.push("e"),
      () => held.push("e"),
    );
    t.scheduler.invalidateAll();
    t.runAllFrames();
    // c and d were drawn once, when they were in view; e never was.
    for (const el of [c!, d!]) {
      t.see(el, true);
      t.runAllFrames();
      t.see(el, false);
    }
    t.see(a!, true);
    t.see(b!, true);
    t.see(e, false);
    t.drawn.length = 0;
    held.length = 0;
    t.scheduler.invalidateAll(true);
    // The visible ones first (a, b), then those above and below the viewport in viewport order, split by the budget.
    expect(t.runAllFrames()).toEqual([["a", "b"], ["c"], ["d"]]);
    expect(held).toEqual(["e"]);
    // Drawn once: scrolled in afterwards without new data, not again; a later tick leaves them waiting as before.
    t.see(c!, true);
    expect(t.frames).toHaveLength(0);
    t.scheduler.invalidateAll();
    expect(t.runAllFrames()).toEqual([["c"], ["a", "b"]]);
    expect(t.drawn.filter((n) => n === "d")).toHaveLength(1);
    expect(t.drawn).not.toContain("e");
  });

  test("a panel scrolled out is left as drawn; scrolled back in without new data, it is not drawn again", () => {
    const t = setup();
    const a = t.panel("a");
    t.scheduler.invalidate(a);
    t.runFrames();
    t.see(a, false);
    t.see(a, true);
    expect(t.frames).toHaveLength(0);
    expect(t.drawn).toEqual(["a"]);
  });

  test("a draw that throws is reported and the others are still drawn; removed panels are unobserved", () => {
    const t = setup();
    const bad = { name: "bad" } as unknown as Element;
    t.scheduler.add(bad, () => {
      throw new Error("boom");
    });
    const a = t.panel("a");
    t.scheduler.invalidateAll();
    t.runFrames();
    expect(t.drawn).toEqual(["error boom", "a"]);
    t.scheduler.remove(a);
    expect(t.observed.has(a)).toBe(false);
    t.scheduler.invalidate(a);
    expect(t.frames).toHaveLength(0);
    t.scheduler.clear();
    expect(t.observed.size).toBe(0);
  });

  test("a frame draws in viewport order until its budget is spent, then the rest on the next frames", () => {
    // Two columns, made out of order: viewport order is a, b (top row, left to right), c, d, then e.
    const at = {
      d: { top: 300, left: 600 },
      b: { top: 0, left: 600 },
      e: { top: 600, left: 0 },
      a: { top: 0, left: 0 },
      c: { top: 300, left: 0 },
    };
    const t = setup(() => true, { at, cost: { a: 4, b: 4, c: 1, d: 1, e: 1 } });
    for (const name of Object.keys(at)) t.panel(name);
    t.scheduler.invalidateAll();
    // a (4 ms) leaves budget, b brings it to 8 >= 6: the frame ends; c, d and e (1 ms each) fit in the next one.
    expect(t.runAllFrames()).toEqual([
      ["a", "b"],
      ["c", "d", "e"],
    ]);
  });

  test("past the budget, a rest that fits in the budget again (at this frame's mean draw) is drawn in this frame", () => {
    // Six 1.25 ms draws: the budget is spent after five (6.25 ms), the sixth (about 1.25 ms more) is drawn too rather
    // than costing a frame of its own.
    const six = setup(() => true, { cost: { a: 1.25, b: 1.25, c: 1.25, d: 1.25, e: 1.25, f: 1.25 } });
    for (const name of ["a", "b", "c", "d", "e", "f"]) six.panel(name);
    six.scheduler.invalidateAll();
    expect(six.runAllFrames()).toEqual([["a", "b", "c", "d", "e", "f"]]);
    // Eight 2 ms draws: after three (6 ms) the other five would take about 10 ms: three now; in the next frame, after
    // three more, the last two (about 4 ms) are drawn too.
    const eight = setup(() => true, { cost: Object.fromEntries([..."abcdefgh"].map((n) => [n, 2])) });
    for (const name of "abcdefgh") eight.panel(name);
    eight.scheduler.invalidateAll();
    expect(eight.runAllFrames()).toEqual([
      ["a", "b", "c"],
      ["d", "e", "f", "g", "h"],
    ]);
  });

  test("a draw longer than the budget is still one panel per frame, and nothing is lost", () => {
    const t = setup(() => true, { cost: { a: 50, b: 50, c: 50 } });
    const panels = ["a", "b", "c"].map((n) => t.panel(n));
    for (const p of panels) t.scheduler.invalidate(p);
    expect(t.runAllFrames()).toEqual([["a"], ["b"], ["c"]]);
  });

  test("a panel invalidated again before its turn is drawn once, with the data it has then", () => {
    const t = setup(() => true, { cost: { a: 10 } });
    let data = 1;
    const drawnB: number[] = [];
    const a = t.panel("a");
    const b = t.panel("b", () => drawnB.push(data));
    t.scheduler.invalidate(a);
    t.scheduler.invalidate(b);
    t.runFrames();
    expect(drawnB).toEqual([]);
    data = 2;
    t.scheduler.invalidate(b);
    t.scheduler.invalidate(b);
    expect(t.runAllFrames()).toEqual([["b"]]);
    expect(drawnB).toEqual([2]);
  });

  test("invisible panels are left untouched across split frames; a panel removed before its turn is not drawn", () => {
    const t = setup((el) => (el as unknown as { name: string }).name !== "hidden", { cost: { a: 10 } });
    t.panel("a");
    const hidden = t.panel("hidden");
    const b = t.panel("b");
    t.panel("c");
    t.scheduler.invalidateAll();
    t.runFrames();
    expect(t.drawn).toEqual(["a"]);
    t.scheduler.remove(b);
    expect(t.runAllFrames()).toEqual([["c"]]);
    expect(t.drawn).not.toContain("hidden");
    // Still due: drawn once it scrolls in.
    t.see(hidden, true);
    expect(t.runAllFrames()).toEqual([["hidden"]]);
  });
});
