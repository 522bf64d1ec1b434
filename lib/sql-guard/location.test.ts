import fc from "fast-check";
import { beforeAll, describe, expect, test } from "vitest";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { codeDollars, expandMacros } from "./macros.ts";
import { type Guard, createGuard, loadGuardParser } from "./index.ts";
import { charOffsetOfByte, writtenOffset } from "./offsets.ts";

// The verdict's `location`: where, in the SQL as written, the refused name or syntax error starts.

let guard: Guard;
beforeAll(async () => {
  await loadGuardParser();
  guard = createGuard();
});

const F = "$__timeFilter(ts)";

describe("refusals point at what they name", () => {
  // [sql, reason, the text that starts at the location]
  test.each([
    ["SELECT * FROM pg_shadow", "catalog", "pg_shadow"],
    [
      `SELECT $__timeGroup(ts, '1m') AS t, count(*) FROM http_requests h JOIN pg_authid a ON true WHERE ${F} GROUP BY 1`,
      "catalog",
      "pg_authid",
    ],
    [`SELECT nope FROM http_requests WHERE ${F}`, "catalog", "nope"],
    [`SELECT ctid FROM http_requests WHERE ${F}`, "catalog", "ctid"],
    [`SELECT $__timeGroup(ts, $__interval), pg_sleep(1) FROM http_requests WHERE ${F}`, "function", "pg_sleep"],
    [`SELECT 'é€😀', pg_sleep(1) FROM http_requests WHERE ${F}`, "function", "pg_sleep"],
    [`SELECT "é", current_user FROM http_requests WHERE ${F}`, "function", "current_user"],
    ["SELECT count(*) FROM http_requests", "time", "http_requests"],
    [`SELECT 1 FROM http_requests WHERE ${F} -- hi`, "comment", "-- hi"],
    [`SELECT 'ü' /* c */ FROM http_requests`, "comment", "/* c */"],
    ["SELECT * FROM http_requests WHER ts > now()", "structure", "ts > now()"],
    [`SELECT $__timeGroup(ts, '5m'), count(*) FROM http_requests WHERE ${F} GROUP BY 1 ORDER BY 1 LIMT 5`, "structure", "LIMT 5"],
    ["SELECT $1 FROM http_requests", "structure", "$1"],
    ["SELECT $__nope() FROM http_requests", "structure", "$__nope()"],
    ["DELETE FROM http_requests", "keyword", "DELETE"],
    [`SELECT 1 FROM http_requests WHERE ${F} FOR UPDATE`, "keyword", "FOR UPDATE"],
  ])("%s", (sql, reason, at) => {
    const v = guard.check(sql, DEMO_CATALOG);
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.reason).toBe(reason);
    expect(v.location, v.message).toBeTypeOf("number");
    expect(sql.slice(v.location)).toMatch(new RegExp(`^${at.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}`));
  });

  test("a refusal about the whole statement has no location", () => {
    const v = guard.check("SELECT 1; SELECT 2", DEMO_CATALOG);
    expect(v).toMatchObject({ ok: false, reason: "structure" });
    expect(v).not.toHaveProperty("location");
  });
});

describe("offsets", () => {
  test("UTF-8 byte offsets become UTF-16 offsets", () => {
    const s = "aé€😀b";
    const bytes = [0, 1, 3, 6, 10];
    expect(bytes.map((b) => charOffsetOfByte(s, b))).toEqual([0, 1, 2, 3, 5]);
    expect(charOffsetOfByte(s, 99)).toBe(s.length);
  });

  test("property: a character outside every macro maps back to itself", () => {
    const macro = fc.constantFrom(
      F,
      "$__timeFrom()",
      "$__interval",
      "$__timeGroup(ts, $__interval)",
      "$__timeGroup(ts, '5m')",
      "$__timeTo()",
    );
    const text = fc.stringMatching(/^[a-z é'(),=<>]{0,12}$/).filter((t) => (t.match(/'/g) ?? []).length % 2 === 0);
    fc.assert(
      fc.property(fc.array(fc.tuple(text, macro), { maxLength: 4 }), text, (parts, tail) => {
        const written = parts.map(([t, m]) => t + m).join("") + tail;
        const e = expandMacros(written);
        if (!e.ok) return;
        const dollars = codeDollars(written)?.dollars ?? [];
        const expand = (p: string) => {
          const x = expandMacros(p);
          return x.ok ? x.sql : null;
        };
        // Every character of the verbatim stretches, located in the expansion by walking both texts.
        let w = 0;
        let x = 0;
        for (const [t, m] of parts) {
          for (let i = 0; i < t.length; i++) expect(writtenOffset(written, e.sql, x + i, dollars, expand)).toBe(w + i);
          w += t.length + m.length;
          x += t.length + (expandMacros(written.slice(0, w)) as { sql: string }).sql.length - (x + t.length);
        }
        for (let i = 0; i < tail.length; i++) expect(writtenOffset(written, e.sql, x + i, dollars, expand)).toBe(w + i);
      }),
    );
  });
});
