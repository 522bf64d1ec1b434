import { beforeAll, describe, expect, test } from "vitest";
import { DEMO_CATALOG } from "../catalog/testing/demo-catalog.ts";
import { type Guard, createGuard, loadGuardParser } from "./index.ts";
import { charOffsetOfByte } from "./offsets.ts";

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
});
