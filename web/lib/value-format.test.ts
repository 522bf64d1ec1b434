import { expect, test } from "vitest";
import { colorIndex, fnv1a, seriesColor } from "./series-color.ts";
import { BINARY_INCRS, legendStats, thresholdColor, valueFormatter } from "./value-format.ts";

test("a series keeps its colour whatever the order it comes in", () => {
  expect(fnv1a("")).toBe(0x811c9dc5);
  expect(fnv1a("a")).toBe(0xe40c292c);
  const hosts = ["web-1", "web-2", "db-1", "worker-1"];
  const first = hosts.map((h) => seriesColor(h, false));
  expect([...hosts].reverse().map((h) => seriesColor(h, false))).toEqual([...first].reverse());
  expect(seriesColor("web-1", true)).not.toBe(seriesColor("web-1", false));
  expect(colorIndex("web-1")).toBe(colorIndex("web-1"));
});

test.each([
  ["%", 2, 12.345, "12.35%"],
  ["ms", 0, 1234.5, "1,235 ms"],
  ["bytes", 1, 1536, "1.5 KiB"],
  [undefined, 3, 2, "2.000"],
  ["req/min", undefined, 41, "41 req/min"],
])("unit %s with %s decimals: %s is %s", (unit, decimals, n, text) => {
  expect(valueFormatter(unit, decimals)(n)).toBe(text);
});

test("bytes ticks step on binary round values", () => {
  expect(BINARY_INCRS).toContain(512 * 1024 ** 2);
  expect(BINARY_INCRS).toContain(1024 ** 3);
  expect(BINARY_INCRS).not.toContain(1_000_000_000);
});

test("legend statistics skip gaps", () => {
  expect(legendStats([1, null, 3, 2])).toEqual({ last: 2, min: 1, max: 3, mean: 2 });
  expect(legendStats([null])).toEqual({ last: null, min: null, max: null, mean: null });
});

test("a value takes the colour of the highest step it reaches", () => {
  const steps = [
    { value: null, color: "green" },
    { value: 80, color: "orange" },
    { value: 90, color: "red" },
  ];
  expect(thresholdColor(10, steps)).toBe("green");
  expect(thresholdColor(80, steps)).toBe("orange");
  expect(thresholdColor(95, steps)).toBe("red");
  expect(thresholdColor(null, steps)).toBeNull();
  expect(thresholdColor(5, [])).toBeNull();
});
