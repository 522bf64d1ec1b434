import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { SESSION_RESET, encodePipeline, fixedMessages, isoTimestamp } from "./wire.ts";

/** Splits a buffer of frontend messages into [code, body] pairs. */
function messages(buf: Buffer): [string, Buffer][] {
  const out: [string, Buffer][] = [];
  let o = 0;
  while (o < buf.length) {
    const code = String.fromCharCode(buf[o] as number);
    const len = buf.readInt32BE(o + 1);
    out.push([code, buf.subarray(o + 5, o + 1 + len)]);
    o += 1 + len;
  }
  expect(o).toBe(buf.length);
  return out;
}

describe("encodePipeline", () => {
  const fixed = fixedMessages(20_000);

  const FIXED = [
    ["pb_ro_begin", "BEGIN READ ONLY"],
    ["pb_ro_timeout_20000", "SET LOCAL statement_timeout = 20000"],
    ["pb_ro_work_mem_4096", "SET LOCAL work_mem = '4096kB'"],
    ["pb_ro_unlock", SESSION_RESET],
    ["pb_ro_rollback", "ROLLBACK"],
  ];

  test("a fresh connection gets the five named statements first, then the transaction around the statement", () => {
    const buf = encodePipeline(fixed, true, "SELECT $1::text, $2", [25, 0], ["é", null], 5001);
    const msgs = messages(buf);
    expect(msgs.map(([c]) => c).join("")).toBe("PPPPPBEBEBEPBDEBEBES");
    const texts = msgs.filter(([c]) => c === "P").map(([, b]) => b.toString("utf8").split("\0").slice(0, 2));
    expect(texts).toEqual([...FIXED, ["", "SELECT $1::text, $2"]]);
    const bind = msgs[12]?.[1] as Buffer;
    // portal "", statement "", 0 format codes, 2 values: "é" (2 bytes), NULL (-1), 0 result format codes
    expect([...bind]).toEqual([0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0xc3, 0xa9, 0xff, 0xff, 0xff, 0xff, 0, 0]);
    const execute = msgs[14]?.[1] as Buffer;
    expect(execute.readInt32BE(1)).toBe(5001);
  });

  test("a connection that has them skips the Parse of the fixed statements at the start", () => {
    const msgs = messages(encodePipeline(fixed, false, "SELECT 1", [], [], 2));
    expect(msgs.map(([c]) => c).join("")).toBe("BEBEBEPBDEBEBES");
  });

  test("after the statement: the advisory-lock release, then ROLLBACK, then Sync", () => {
    const msgs = messages(encodePipeline(fixed, false, "SELECT 1", [], [], 2));
    const boundAfter = msgs.slice(msgs.findIndex(([c]) => c === "D") + 2);
    expect(boundAfter.map(([c]) => c).join("")).toBe("BEBES");
    expect(boundAfter.filter(([c]) => c === "B").map(([, b]) => b.toString("utf8").split("\0")[1])).toEqual([
      "pb_ro_unlock",
      "pb_ro_rollback",
    ]);
    expect(SESSION_RESET).toBe("SELECT pg_advisory_unlock_all()");
  });
});

describe("isoTimestamp", () => {
  test("matches Date#toISOString", () => {
    fc.assert(
      fc.property(fc.integer({ min: -40_000_000_000_000, max: 260_000_000_000_000 }), (ms) => {
        expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 2000 },
    );
    for (const ms of [0, -1, 86_399_999, 951_782_400_000, 1_709_164_800_000, 253_402_300_799_999, 1.5]) {
      expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
    }
  });
});
