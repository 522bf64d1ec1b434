import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { type Cell, createRowDecoder, parseBigNumeric, parseTimestamp, typeName } from "./decode.ts";

describe("parseTimestamp", () => {
  test.each([
    ["2026-01-02", Date.UTC(2026, 0, 2)],
    ["2026-01-02 03:04:05", Date.UTC(2026, 0, 2, 3, 4, 5)],
    ["2026-01-02 03:04:05.5", Date.UTC(2026, 0, 2, 3, 4, 5, 500)],
    ["2026-01-02 03:04:05.123456", Date.UTC(2026, 0, 2, 3, 4, 5, 123) + 0.456],
    ["2026-01-02 03:04:05+00", Date.UTC(2026, 0, 2, 3, 4, 5)],
    ["2026-01-02 03:04:05.25+05:30", Date.UTC(2026, 0, 1, 21, 34, 5, 250)],
    ["2026-01-02 03:04:05-03", Date.UTC(2026, 0, 2, 6, 4, 5)],
    ["1901-12-13 20:45:52+00:09:21", Date.UTC(1901, 11, 13, 20, 36, 31)],
    ["0099-06-01", new Date(0).setUTCFullYear(99, 5, 1)],
    ["12026-01-01 00:00:00+00", new Date(0).setUTCFullYear(12026, 0, 1)],
    ["0044-03-15 12:00:00+00 BC", new Date(0).setUTCFullYear(-43, 2, 15) + 12 * 3_600_000],
  ])("%s", (text, expected) => {
    expect(parseTimestamp(text)).toBe(expected);
  });

  test.each(["infinity", "-infinity", "2026-01-02 03:04:05 garbage", "2026-13", ""])("%s is not a timestamp", (t) => {
    expect(parseTimestamp(t)).toBeNaN();
  });

  test("agrees with Date.parse on ISO instants", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date("1970-01-01"), max: new Date("2200-01-01"), noInvalidDate: true }), (d) => {
        const iso = d.toISOString(); // 2026-01-02T03:04:05.678Z
        const pg = `${iso.slice(0, 10)} ${iso.slice(11, 23)}+00`;
        expect(parseTimestamp(pg)).toBe(d.getTime());
      }),
    );
  });
});

describe("parseBigNumeric", () => {
  test.each([
    ["0", 0],
    ["-42", -42],
    ["9007199254740991", 9007199254740991],
    ["9007199254740992", "9007199254740992"],
    ["-9007199254740993", "-9007199254740993"],
    ["1.50", 1.5],
    ["0.000000000000000000001", 1e-21],
    ["123456789012345.6", "123456789012345.6"],
    ["12345678901234.5", 12345678901234.5],
    ["1000000000000000000000", 1e21],
    ["0.00000", 0],
    ["NaN", "NaN"],
    ["Infinity", "Infinity"],
  ])("%s", (text, expected) => {
    expect(parseBigNumeric(text)).toBe(expected);
  });

  test("a number result always prints back to the same decimal value", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.nat({ max: 20 }), (n, scale) => {
        const digits = (n < 0n ? -n : n).toString().padStart(scale + 1, "0");
        const text = `${n < 0n ? "-" : ""}${scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits}`;
        const v = parseBigNumeric(text);
        if (typeof v === "number") {
          expect(Number(text)).toBe(v);
          // Not a safe integer: at most 15 significant digits, so the decimal survives the double.
          if (!Number.isSafeInteger(v)) expect(Number(v.toPrecision(15))).toBe(v);
        } else expect(v).toBe(text);
      }),
    );
  });
});

describe("row decoder byte count", () => {
  const wire = (values: (string | null)[]) => 4 + 2 + values.reduce((n, v) => n + 4 + (v === null ? 0 : Buffer.byteLength(v)), 0);

  test("text cells are counted exactly as JSON.stringify writes them (escapes and UTF-8 included)", () => {
    const decoder = createRowDecoder([
      { name: "a", dataTypeID: 25 },
      { name: "b", dataTypeID: 25 },
    ]);
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.option(fc.string()), (a, b) => {
        const values = [a, b];
        const out: Cell[] = [];
        const size = decoder.decode(values, wire(values), out);
        // +1: the separator before the next row is counted with each row.
        expect(size).toBe(Buffer.byteLength(JSON.stringify(out)) + 1);
      }),
    );
  });

  test("numbers, booleans, nulls and timestamps are never under-counted", () => {
    const types = [20, 1700, 23, 701, 16, 1184, 3802];
    const decoder = createRowDecoder(types.map((t, i) => ({ name: `c${i}`, dataTypeID: t })));
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }),
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.boolean(),
        fc.date({ min: new Date("1980-01-01"), max: new Date("2100-01-01"), noInvalidDate: true }),
        (big, int, dbl, bool, date) => {
          const iso = date.toISOString();
          const values = [
            big.toString(),
            `${big}.25`,
            String(int),
            String(dbl),
            bool ? "t" : "f",
            `${iso.slice(0, 10)} ${iso.slice(11, 23)}+00`,
            '{"a": [1, 2]}',
          ];
          const out: Cell[] = [];
          const size = decoder.decode(values, wire(values), out);
          expect(size).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(out)) + 1);
        },
      ),
    );
  });

  test("type names", () => {
    expect([typeName(1184), typeName(20), typeName(999_999)]).toEqual(["timestamptz", "int8", "unknown"]);
  });
});
