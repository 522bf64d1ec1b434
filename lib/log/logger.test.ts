import { describe, expect, test } from "vitest";
import { type LogLevel, createLogger } from "./logger.ts";

describe("LOG_LEVEL", () => {
  test.each([
    ["info", ["info", "warn", "error"]],
    ["warn", ["warn", "error"]],
    ["error", ["error"]],
    ["silent", []],
  ] as [LogLevel, string[]][])("%s writes %j", (level, written) => {
    const lines: string[] = [];
    const log = createLogger({ level, write: (l) => lines.push(l), now: () => 0 });
    log.info("i");
    log.warn("w");
    log.error("e");
    expect(lines.map((l) => JSON.parse(l).level)).toEqual(written);
  });

  test("one JSON object per line with time, level, message and fields", () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l), now: () => 0 }).info("request", { status: 200 });
    expect(lines).toEqual(['{"time":"1970-01-01T00:00:00.000Z","level":"info","msg":"request","status":200}\n']);
  });
});
