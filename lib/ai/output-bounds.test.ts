import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { MAX_JSON_BODY_BYTES, MAX_JSON_DEPTH, jsonValueIssue } from "../http/input.ts";
import { redactDeep } from "./generation-log.ts";
import { TOO_DEEP_MARKER, modelOutputIssue, modelOutputTextIssue } from "./output-bounds.ts";
import { storableJson } from "./storable.ts";

/** `{"a":{"a":…leaf…}}` nested `depth` levels (built without recursion). */
function nested(depth: number, leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

describe("modelOutputIssue", () => {
  test.each([
    [MAX_JSON_DEPTH, null],
    [MAX_JSON_DEPTH + 1, `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`],
    [2_000, `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`],
    [100_000, `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`],
  ])("a value nested %i levels: %s", (depth, issue) => {
    expect(modelOutputIssue(nested(depth))).toBe(issue);
  });

  test("the same depth limit as request bodies, on any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 40 }), (v) => {
        const requestIssue = jsonValueIssue(v);
        // Only values the request check refuses for depth or not at all (it also refuses characters).
        fc.pre(requestIssue === null || requestIssue.message.startsWith("must not nest"));
        const requestRefusesDepth = requestIssue !== null;
        expect(modelOutputIssue(v)?.startsWith("nests") ?? false).toBe(requestRefusesDepth);
      }),
    );
  });

  test("size: past the request body limit is refused, as text and as a value", () => {
    const big = "x".repeat(MAX_JSON_BODY_BYTES);
    expect(modelOutputIssue({ big })).toContain(`larger than ${MAX_JSON_BODY_BYTES} bytes`);
    expect(modelOutputTextIssue(JSON.stringify({ big }))).toContain("larger than");
    expect(modelOutputIssue({ small: "x".repeat(1000) })).toBeNull();
  });

  test("answer text: fenced JSON is checked, text that is not JSON is left to the schema", () => {
    const deep = `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`;
    expect(modelOutputTextIssue(deep)).toContain("deeper than");
    expect(modelOutputTextIssue(`\`\`\`json\n${deep}\n\`\`\``)).toContain("deeper than");
    expect(modelOutputTextIssue("not json {")).toBeNull();
  });
});

describe("redaction and storage stop at the nesting limit", () => {
  test.each([2_000, 10_000, 100_000])("a value %i levels deep is redacted and stored without overflowing", (depth) => {
    const v = nested(depth, "password: hunter2");
    const out = JSON.stringify(storableJson(redactDeep(v, 20_000)));
    expect(out).toContain(TOO_DEEP_MARKER);
    expect(out).not.toContain("hunter2");
  });

  test("within the limit nothing changes but the redaction", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: MAX_JSON_DEPTH - 1 }), (v) => {
        expect(JSON.stringify(storableJson(v))).not.toContain(TOO_DEEP_MARKER);
      }),
    );
  });
});
