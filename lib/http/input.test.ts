import { describe, expect, test } from "vitest";
import { jsonValueIssue, refusedCharacter } from "./input.ts";

describe("refusedCharacter", () => {
  test.each([
    ["a\u0000b", /NUL/],
    ["\ud800", /surrogate/],
    ["x\udfff", /surrogate/],
    ["\udc00\ud800", /surrogate/],
    ["\ud83d", /surrogate/],
  ])("%j is refused", (s, why) => {
    expect(refusedCharacter(s)).toMatch(why);
  });

  test.each(["", "plain", "\ud83d\ude00", "\u007f", "\u200f\u202e", "'; DROP TABLE x; --", "../../etc", "\u0001\u001f"])(
    "%j is stored as is",
    (s) => {
      expect(refusedCharacter(s)).toBeNull();
    },
  );
});

describe("jsonValueIssue", () => {
  test("names the first refused value by its dotted path", () => {
    expect(jsonValueIssue({ spec: { panels: [{ title: "ok" }, { title: "a\u0000" }] } })).toEqual({
      path: "spec.panels.1.title",
      message: expect.stringMatching(/NUL/),
    });
  });

  test("a refused key is named by a placeholder, never echoed", () => {
    expect(jsonValueIssue({ spec: { "k\u0000": 1 } })?.path).toBe("spec.(key)");
    // Keys that are not short printable ASCII are client text too.
    expect(jsonValueIssue({ "long key with spaces": { x: "\ud800" } })?.path).toBe("(key).x");
  });

  test("nesting is bounded, and the walk itself survives any depth", () => {
    let deep: unknown = 0;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(jsonValueIssue(deep)?.message).toMatch(/deeper than 32/);
    expect(jsonValueIssue({ a: { b: 1 } }, 2)).toBeNull();
    expect(jsonValueIssue({ a: { b: { c: 1 } } }, 2)?.path).toBe("a.b");
  });

  test("numbers, booleans and null pass", () => {
    expect(jsonValueIssue([0, -0, 1e308, null, true, "x"])).toBeNull();
  });
});
