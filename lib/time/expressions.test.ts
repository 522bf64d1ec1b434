import { describe, expect, test } from "vitest";
import { parseConfig } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { MAX_INSTANT_MS, MAX_RELATIVE_MS, TimeExpressionError, parseTimeExpression, resolveTime } from "./expressions.ts";

const NOW = Date.UTC(2026, 10, 24, 12, 0, 0);

describe("time expressions", () => {
  test.each([
    ["now", NOW],
    ["now-15m", NOW - 15 * 60_000],
    ["now-3660d", NOW - MAX_RELATIVE_MS],
    ["now-522w", NOW - 522 * 604_800_000],
    ["now-87840h", NOW - MAX_RELATIVE_MS],
    ["1970-01-01T00:00:00Z", 0],
    ["2026-11-24", Date.UTC(2026, 10, 24)],
    ["9999-12-31T23:59:59.999Z", MAX_INSTANT_MS],
  ])("%s resolves", (expr, at) => {
    expect(resolveTime(expr, NOW)).toBe(at);
  });

  test.each([
    // Offsets past 3660 days: the first used to resolve to a date no Date can hold (RangeError on use).
    ["now-99999999999999w", /3660 days/],
    ["now-3661d", /3660 days/],
    ["now-523w", /3660 days/],
    ["now-316224001s", /3660 days/],
    ["now-99999999999999999999s", /now-<n>/],
    // Instants outside 1970..9999.
    ["1969-12-31T23:59:59.999Z", /1970/],
    ["0000-01-01", /1970/],
    ["+275760-09-13T00:00:00Z", /now-<n>/],
    // Not expressions at all.
    ["now+1h", /now-<n>/],
    ["now-1y", /now-<n>/],
    ["1", /now-<n>/],
    ["yesterday", /now-<n>/],
    ["", /now-<n>/],
  ])("%s is refused with a reason", (expr, reason) => {
    const parsed = parseTimeExpression(expr);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toMatch(reason);
    expect(() => resolveTime(expr, NOW)).toThrow(TimeExpressionError);
  });

  test("a stored expression that would reach back before 1970 at this `now` is an error, not a negative instant", () => {
    expect(() => resolveTime("now-3660d", MAX_RELATIVE_MS - 1)).toThrow(TimeExpressionError);
    // Coded, so one that reaches the HTTP edge is a 400, never a 500.
    const err = (() => {
      try {
        resolveTime("now-3661d", NOW);
      } catch (e) {
        return e as AppError;
      }
    })();
    expect(err).toBeInstanceOf(AppError);
    expect(err?.status).toBe(400);
    expect(resolveTime("now-3660d", MAX_RELATIVE_MS)).toBe(0);
  });

  test("every accepted expression resolves to an instant a Date can format", () => {
    for (const expr of ["now-3660d", "9999-12-31T23:59:59.999Z", "1970-01-01T00:00:00Z"]) {
      expect(() => new Date(resolveTime(expr, NOW)).toISOString()).not.toThrow();
    }
  });

  test("DEFAULT_TIME_FROM / DEFAULT_TIME_TO are held to the same bounds at startup", () => {
    const base = { DATABASE_URL: "postgres://u:p@127.0.0.1:5432/db" };
    expect(() => parseConfig({ ...base, DEFAULT_TIME_FROM: "now-99999999999999w" })).toThrow(/DEFAULT_TIME_FROM/);
    expect(() => parseConfig({ ...base, DEFAULT_TIME_TO: "1" })).toThrow(/DEFAULT_TIME_TO/);
    expect(parseConfig({ ...base, DEFAULT_TIME_FROM: "now-7d" }).config.DEFAULT_TIME_FROM).toBe("now-7d");
  });
});
