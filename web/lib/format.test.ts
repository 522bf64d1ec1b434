import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  describeRange,
  formatAgo,
  formatAxisValue,
  formatCell,
  formatDuration,
  formatNumber,
  formatTime,
  formatTimestamp,
  formatValue,
  TIMESTAMP_PARTS,
} from "./format.ts";

const T = Date.UTC(2026, 10, 21, 14, 5, 9); // 2026-11-21 14:05:09 UTC
const UTC = { timeZone: "UTC" };

describe("time formatting", () => {
  test.each([
    [5 * 60_000, "14:05:09"],
    [6 * 3_600_000, "14:05"],
    [7 * 86_400_000, "21 Nov, 14:05"],
    [365 * 86_400_000, "21 Nov 2026"],
  ])("span %i ms → %s", (span, expected) => {
    expect(formatTime(T, span, UTC)).toBe(expected);
  });

  test("full timestamps are ISO-like and honour the time zone", () => {
    expect(formatTimestamp(T, UTC)).toBe("2026-11-21 14:05:09");
    expect(formatTimestamp(T, { timeZone: "Asia/Tokyo" })).toBe("2026-11-21 23:05:09");
  });

  // The browser's zone and UTC are written from the Date without Intl: the same text as Intl's en-CA parts.
  test.each([["UTC"], [undefined]])("full timestamps in zone %s match Intl's", (timeZone) => {
    const intl = new Intl.DateTimeFormat("en-CA", { ...TIMESTAMP_PARTS, timeZone });
    const viaIntl = (ms: number) => {
      const parts = intl.formatToParts(new Date(ms));
      const p = (t: string) => parts.find((x) => x.type === t)?.value ?? "";
      return `${p("year")}-${p("month")}-${p("day")} ${p("hour")}:${p("minute")}:${p("second")}`;
    };
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(900, 0, 1), max: Date.UTC(10_100, 0, 1) }), (ms) => {
        expect(formatTimestamp(ms, { timeZone })).toBe(viaIntl(ms));
      }),
      { numRuns: 2000 },
    );
  });

  test("numbers from 100 to 9,999 are grouped as en-US's toLocaleString groups them", () => {
    fc.assert(
      fc.property(fc.double({ min: -10_000, max: 10_000, noNaN: true }), (n) => {
        fc.pre(Math.abs(n) >= 100 && Math.abs(n) < 10_000);
        expect(formatNumber(n)).toBe(Math.round(n).toLocaleString("en-US"));
      }),
      { numRuns: 2000 },
    );
  });

  test.each([
    [0, "just now"],
    [4_999, "just now"],
    [12_000, "12 s ago"],
    [3 * 60_000 + 5, "3 min ago"],
    [2 * 3_600_000, "2 h ago"],
    [3 * 86_400_000, "3 d ago"],
    [-5_000, "just now"],
  ])("%i ms ago → %s", (d, expected) => {
    expect(formatAgo(T - d, T)).toBe(expected);
  });

  test.each([
    [250, "250 ms"],
    [5000, "5 s"],
    [90_000, "1.5 min"],
    [7_200_000, "2 h"],
  ])("duration %i → %s", (ms, expected) => {
    expect(formatDuration(ms)).toBe(expected);
  });

  test.each([
    [{ from: "now-1h", to: "now" }, "Last hour"],
    [{ from: "now-6h", to: "now" }, "Last 6 hours"],
    [{ from: "now-30m", to: "now" }, "Last 30 minutes"],
    [{ from: "now-2d", to: "now-1d" }, "now-2d → now-1d"],
    [{ from: "2026-01-01T00:00:00Z", to: "now" }, "2026-01-01T00:00:00Z → now"],
  ])("range %j → %s", (range, expected) => {
    expect(describeRange(range)).toBe(expected);
  });
});

describe("value formatting", () => {
  test.each([
    [0, "0"],
    [0.0423, "0.042"],
    [1.5, "1.5"],
    [12.345, "12.35"],
    [1234, "1,234"],
    [12_345, "12.3k"],
    [4_500_000, "4.5M"],
    [250_000_000, "250M"],
    [-12_345, "-12.3k"],
    [0.00001, "1.0e-5"],
    [Number.NaN, "–"],
  ])("%d → %s", (n, expected) => {
    expect(formatNumber(n)).toBe(expected);
  });

  test.each([
    [12.5, "%", "12.5%"],
    [1536, "bytes", "1.5 KiB"],
    [3 * 1024 ** 3, "B", "3 GiB"],
    [512, "bytes", "512 B"],
    [1500, "ms", "1.5 s"],
    [85, "ms", "85 ms"],
    [42, "req/min", "42 req/min"],
    [null, "ms", "–"],
    [7, undefined, "7"],
  ])("%s %s → %s", (n, unit, expected) => {
    expect(formatValue(n as number | null, unit)).toBe(expected);
  });

  test("table cells", () => {
    expect(formatCell(T, true, UTC)).toBe("2026-11-21 14:05:09");
    expect(formatCell(123456, false)).toBe("123,456");
    expect(formatCell(null, false)).toBe("–");
    expect(formatCell({ a: 1 }, false)).toBe('{"a":1}');
    expect(formatCell("<b>", false)).toBe("<b>");
  });
});

describe("axis labels", () => {
  test.each([
    [80, "req/min", "80"],
    [40, "%", "40%"],
    [400, "ms", "400 ms"],
    [2048, "bytes", "2 KiB"],
    [12_000, undefined, "12k"],
  ])("%d %s → %s", (n, unit, expected) => {
    expect(formatAxisValue(n, unit)).toBe(expected);
  });
});
