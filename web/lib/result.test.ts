import { describe, expect, test } from "vitest";
import { barData, columnRoles, isPartial, lastComplete, statValue, toNumber, toSeries, type ResultData, withGaps } from "./result.ts";

const rpm: ResultData = {
  columns: [
    { name: "time", type: "timestamptz" },
    { name: "service", type: "text" },
    { name: "requests", type: "int8" },
  ],
  rows: [
    [1000, "api", 5],
    [1000, "web", 7],
    [2000, "api", "6"],
    [2000, "web", null],
  ],
};

describe("result interpretation", () => {
  test("numbers: numeric strings from int8/numeric parse; other strings do not", () => {
    expect(toNumber(3)).toBe(3);
    expect(toNumber("12.50")).toBe(12.5);
    expect(toNumber("9007199254740993")).toBe(9007199254740992);
    expect(toNumber("abc")).toBeNull();
    expect(toNumber("")).toBeNull();
    expect(toNumber(null)).toBeNull();
    expect(toNumber(Number.POSITIVE_INFINITY)).toBeNull();
  });

  test("column roles from declared types", () => {
    expect(columnRoles(rpm)).toEqual({ time: 0, values: [2], labels: [1] });
  });

  test("a label column splits series; nulls are gaps", () => {
    expect(toSeries(rpm)).toEqual([
      {
        key: "api",
        points: [
          [1000, 5],
          [2000, 6],
        ],
      },
      {
        key: "web",
        points: [
          [1000, 7],
          [2000, null],
        ],
      },
    ]);
  });

  test("without labels, each value column is a series named after it", () => {
    const r: ResultData = {
      columns: [
        { name: "time", type: "timestamptz" },
        { name: "p50", type: "float8" },
        { name: "p95", type: "float8" },
      ],
      rows: [[1, 2, 3]],
    };
    expect(toSeries(r)?.map((s) => s.key)).toEqual(["p50", "p95"]);
  });

  test("an epoch-ms number column named time counts as the time column when the type is unknown", () => {
    const r: ResultData = {
      columns: [
        { name: "time", type: "unknown" },
        { name: "v", type: "unknown" },
      ],
      rows: [[5, "1.5"]],
    };
    expect(toSeries(r)).toEqual([{ key: "v", points: [[5, 1.5]] }]);
  });

  test("no time column or no numeric column: not a time series", () => {
    expect(
      toSeries({
        columns: [
          { name: "a", type: "text" },
          { name: "n", type: "int4" },
        ],
        rows: [["x", 1]],
      }),
    ).toBeNull();
    expect(
      toSeries({
        columns: [
          { name: "time", type: "timestamptz" },
          { name: "s", type: "text" },
        ],
        rows: [[1, "x"]],
      }),
    ).toBeNull();
  });

  test("stat: the latest row by time, else the first row", () => {
    expect(statValue(rpm)).toEqual({ value: 6, column: "requests", at: 2000, partial: false });
    expect(statValue({ columns: [{ name: "error_pct", type: "numeric" }], rows: [[1.25]] })).toEqual({
      value: 1.25,
      column: "error_pct",
      at: null,
      partial: false,
    });
    expect(statValue({ columns: [{ name: "x", type: "numeric" }], rows: [] }).value).toBeNull();
  });

  test("bar: first label column against first numeric column", () => {
    const r: ResultData = {
      columns: [
        { name: "status", type: "text" },
        { name: "n", type: "int8" },
      ],
      rows: [
        ["200", 10],
        ["500", "2"],
      ],
    };
    expect(barData(r)).toEqual([
      { label: "200", value: 10 },
      { label: "500", value: 2 },
    ]);
    expect(barData({ columns: [{ name: "s", type: "text" }], rows: [["a"]] })).toBeNull();
  });
});

describe("gaps and the still-filling bucket", () => {
  const M = 60_000;
  const bucketed: ResultData = {
    columns: [
      { name: "time", type: "timestamptz" },
      { name: "v", type: "float8" },
    ],
    rows: [
      [0, 1],
      [M, 2],
      // 2M..4M missing
      [5 * M, 3],
      [6 * M, 0.2],
    ],
    stepMs: M,
    partialFrom: 6 * M,
  };

  test("a missing bucket inside the series is a null point one step after the last one, so the line breaks", () => {
    const [s] = toSeries(bucketed)!;
    expect(s.points).toEqual([
      [0, 1],
      [M, 2],
      [2 * M, null],
      [5 * M, 3],
      [6 * M, 0.2],
    ]);
    expect(s.partialFrom).toBe(6 * M);
  });

  test("without a step nothing is inserted; points come sorted", () => {
    expect(
      withGaps(
        [
          [5 * M, 1],
          [0, 2],
        ],
        undefined,
      ),
    ).toEqual([
      [0, 2],
      [5 * M, 1],
    ]);
    expect(
      withGaps(
        [
          [0, 1],
          [M, 2],
        ],
        M,
      ),
    ).toEqual([
      [0, 1],
      [M, 2],
    ]);
  });

  test("stat and legend 'last' use the last complete bucket, the partial one only when alone", () => {
    expect(statValue(bucketed)).toEqual({ value: 3, column: "v", at: 5 * M, partial: false });
    expect(statValue({ ...bucketed, rows: [[6 * M, 0.2]] })).toEqual({ value: 0.2, column: "v", at: 6 * M, partial: true });
    const [s] = toSeries(bucketed)!;
    expect(lastComplete(s.points, s.partialFrom)).toEqual([5 * M, 3]);
    expect(isPartial(6 * M, s.partialFrom)).toBe(true);
    expect(lastComplete([[6 * M, 1]], 6 * M)).toEqual([6 * M, 1]);
    expect(lastComplete([[0, null]], undefined)).toBeNull();
  });
});
