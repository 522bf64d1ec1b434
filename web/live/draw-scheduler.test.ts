import { describe, expect, test } from "vitest";
import { createDrawScheduler, type Sighting } from "./draw-scheduler.ts";

/** A scheduler over fake frames and a fake observer; elements are plain objects standing for panels. */
function setup(initiallyVisible: (el: Element) => boolean = () => true) {
  const frames: (() => void)[] = [];
  let report: (entries: readonly Sighting[]) => void = () => {};
  const observed = new Set<Element>();
  const drawn: string[] = [];
  const layoutReads: Element[] = [];
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
    onError: (err) => drawn.push(`error ${(err as Error).message}`),
  });
  const panel = (name: string) => {
    const el = { name } as unknown as Element;
    scheduler.add(el, () => drawn.push(name));
    return el;
  };
  const runFrames = () => {
    const due = frames.splice(0);
    for (const f of due) f();
  };
  const see = (el: Element, isIntersecting: boolean) => report([{ target: el, isIntersecting }]);
  return { scheduler, frames, observed, drawn, layoutReads, panel, runFrames, see };
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
});
