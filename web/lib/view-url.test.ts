import fc from "fast-check";
import { expect, test } from "vitest";
import {
  ALL,
  formatRefresh,
  normalizeTime,
  parseRefresh,
  rangeExpressions,
  readView,
  relativeFrom,
  shift,
  writeView,
  zoomOut,
} from "./view-url.ts";

test("reads Grafana's parameters; invalid values fall back to the saved default", () => {
  const v = readView(
    new URLSearchParams(
      "from=now-6h&to=now&refresh=30s&tz=Europe/Paris&var-service=checkout&var-service=search&var-env=%24__all&viewPanel=rpm",
    ),
  );
  expect(v).toEqual({
    from: "now-6h",
    to: "now",
    refreshMs: 30_000,
    tz: "Europe/Paris",
    vars: { service: ["checkout", "search"], env: [ALL] },
    viewPanel: "rpm",
  });
  expect(readView(new URLSearchParams("from=yesterday&to=now-99999999999w&refresh=fast&tz=Mars/Olympus"))).toEqual({ vars: {} });
});

test("Grafana's epoch milliseconds become ISO instants", () => {
  expect(normalizeTime("1700000000000")).toBe("2023-11-14T22:13:20.000Z");
  expect(normalizeTime("2026-11-27T08:00:00Z")).toBe("2026-11-27T08:00:00Z");
  expect(normalizeTime("now-3661d")).toBeNull();
});

test.each([
  ["off", 0],
  ["5s", 5_000],
  ["1m", 60_000],
  ["2h", 7_200_000],
  ["1d", 86_400_000],
  ["0s", null],
  ["5", null],
  ["-5s", null],
])("refresh %s is %s ms", (text, ms) => {
  expect(parseRefresh(text)).toBe(ms);
  if (ms !== null) expect(formatRefresh(ms)).toBe(text);
});

test("a view written and read back is the same view, other parameters kept", () => {
  const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,10}$/);
  fc.assert(
    fc.property(
      fc.record({
        from: fc.constantFrom("now-5m", "now-6h", "2026-11-27T08:00:00.000Z"),
        to: fc.constantFrom("now", "2026-11-28T08:00:00.000Z"),
        refreshMs: fc.constantFrom(0, 5_000, 60_000, 86_400_000),
        tz: fc.constantFrom("browser", "utc", "Asia/Tokyo"),
        vars: fc.dictionary(name, fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 3 })),
        viewPanel: fc.constantFrom("a", "panel-2"),
      }),
      (view) => {
        const params = writeView(new URLSearchParams("workspace=w1"), view);
        expect(params.get("workspace")).toBe("w1");
        expect(readView(params)).toEqual(view);
      },
    ),
  );
});

test("zoom out doubles the span around its centre and shift moves by half, never past now", () => {
  const now = 10_000_000;
  expect(zoomOut([now - 3_600_000, now - 1_800_000], now)).toEqual([5_500_000, 9_100_000]);
  expect(zoomOut([now - 3_600_000, now], now)).toEqual([now - 7_200_000, now]);
  expect(zoomOut([1_000_000, 2_000_000], now)).toEqual([500_000, 2_500_000]);
  expect(shift([1_000_000, 2_000_000], -1, now)).toEqual([500_000, 1_500_000]);
  expect(shift([now - 1000, now], 1, now)).toEqual([now - 1000, now]);
});

test("a range still ending at now stays relative; anything else is absolute", () => {
  const now = Date.UTC(2026, 10, 27, 9);
  expect(rangeExpressions([now - 7_200_000, now], true, now)).toEqual({ from: "now-2h", to: "now" });
  expect(relativeFrom(90 * 60_000)).toBe("now-90m");
  expect(relativeFrom(2 * 86_400_000)).toBe("now-2d");
  expect(rangeExpressions([now - 7_200_000, now - 3_600_000], true, now)).toEqual({
    from: "2026-11-27T07:00:00.000Z",
    to: "2026-11-27T08:00:00.000Z",
  });
});
