import { describe, expect, test } from "vitest";
import { createSession } from "./session.ts";

describe("editor session", () => {
  test("undo and redo walk the changes; typing in one field is one step", () => {
    const s = createSession({ title: "a" });
    s.apply({ title: "ab" }, "title");
    s.apply({ title: "abc" }, "title");
    s.apply({ title: "abc!" });
    expect(s.undo()).toBe(true);
    expect(s.spec.title).toBe("abc");
    expect(s.undo()).toBe(true);
    expect(s.spec.title).toBe("a");
    expect(s.undo()).toBe(false);
    expect(s.redo()).toBe(true);
    expect(s.spec.title).toBe("abc");
    s.apply({ title: "x" });
    expect(s.canRedo()).toBe(false);
  });

  test("a snapshot is not changed by later mutation of the object applied", () => {
    const s = createSession({ list: [1] });
    const next = { list: [1, 2] };
    s.apply(next);
    next.list.push(3);
    expect(s.spec.list).toEqual([1, 2]);
  });
});
