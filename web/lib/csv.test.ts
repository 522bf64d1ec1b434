import fc from "fast-check";
import { expect, test } from "vitest";
import { csvField, toCsv } from "./csv.ts";

test.each([
  [null, ""],
  [42, "42"],
  ["plain", "plain"],
  ['a "quote"', '"a ""quote"""'],
  ["a,b", '"a,b"'],
  ["line\nbreak", '"line\nbreak"'],
  ["=HYPERLINK(1)", "'=HYPERLINK(1)"],
  ["@cmd", "'@cmd"],
  ["-12.5", "-12.5"],
  [{ a: 1 }, '"{""a"":1}"'],
])("csvField(%j) is %j", (v, expected) => {
  expect(csvField(v)).toBe(expected);
});

test("time columns become ISO instants, rows keep their order", () => {
  const csv = toCsv({
    columns: [
      { name: "time", type: "timestamptz" },
      { name: "service", type: "text" },
      { name: "requests", type: "int8" },
    ],
    rows: [
      [Date.UTC(2026, 0, 1), "checkout", 3],
      [Date.UTC(2026, 0, 1, 0, 1), "search, fast", 4],
    ],
  });
  expect(csv).toBe('time,service,requests\r\n2026-01-01T00:00:00.000Z,checkout,3\r\n2026-01-01T00:01:00.000Z,"search, fast",4\r\n');
});

/** Parses one CSV line of quoted or bare fields (enough for the round trip below). */
function parseLine(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let v = "";
      i++;
      while (i < line.length) {
        if (line[i] === '"' && line[i + 1] === '"') {
          v += '"';
          i += 2;
        } else if (line[i] === '"') {
          i++;
          break;
        } else v += line[i++];
      }
      out.push(v);
      i++;
    } else {
      const end = line.indexOf(",", i);
      out.push(line.slice(i, end === -1 ? line.length : end));
      i = end === -1 ? line.length + 1 : end + 1;
    }
  }
  return out;
}

test("any text without a leading formula character round-trips through one field", () => {
  fc.assert(
    fc.property(
      fc.string().filter((s) => !/^[=+\-@\t\r]/.test(s)),
      fc.string(),
      (a, b) => {
        expect(parseLine(`${csvField(a)},${csvField(b).replace(/^'/, "")}`)[0]).toBe(a);
      },
    ),
  );
});
