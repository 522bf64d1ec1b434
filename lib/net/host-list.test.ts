import { describe, expect, test } from "vitest";
import { ConfigError, parseConfig } from "../config/parse.ts";
import { hostListHasAddress, hostListHasName, parseHostList } from "./host-list.ts";

describe("parseHostList", () => {
  test("names, wildcards, addresses and ranges, each with an optional port", () => {
    const { entries, invalid } = parseHostList(
      "db.internal, *.RDS.amazonaws.com. 10.0.0.0/8 127.0.0.1:5433,[::1]:5432 [fd00::/8]:6432 2001:db8::/32 ::ffff:192.168.0.1",
    );
    expect(invalid).toEqual([]);
    expect(entries.map((e) => (e.kind === "name" ? `${e.pattern}@${e.port}` : `${e.range[0].toString()}/${e.range[1]}@${e.port}`))).toEqual(
      [
        "db.internal@null",
        "*.rds.amazonaws.com@null",
        "10.0.0.0/8@null",
        "127.0.0.1/32@5433",
        "::1/128@5432",
        "fd00::/8@6432",
        "2001:db8::/32@null",
        "192.168.0.1/32@null",
      ],
    );
  });

  test.each([
    "10.1",
    "0x7f000001",
    "db..internal",
    "db.internal:0",
    "db.internal:70000",
    "[db.internal]:5432",
    "*.10.0.0.1",
    "10.0.0.0/33",
    "a/b",
    ":5432",
    "[::1]:x",
  ])("%j does not parse", (entry) => {
    expect(parseHostList(entry).invalid).toEqual([entry]);
  });

  test("matching: names by name (wildcards by suffix), addresses by range, and the port when the entry has one", () => {
    const { entries } = parseHostList("db.internal:5432 *.corp.example 10.0.0.0/8 [::1]:5433");
    expect(hostListHasName(entries, "db.internal", 5432)).toBe(true);
    expect(hostListHasName(entries, "db.internal", 5433)).toBe(false);
    expect(hostListHasName(entries, "pg.corp.example", 1)).toBe(true);
    expect(hostListHasName(entries, "corp.example", 1)).toBe(false);
    expect(hostListHasAddress(entries, "10.200.0.1", 5432)).toBe(true);
    expect(hostListHasAddress(entries, "::ffff:10.200.0.1", 5432)).toBe(true);
    expect(hostListHasAddress(entries, "11.0.0.1", 5432)).toBe(false);
    expect(hostListHasAddress(entries, "::1", 5433)).toBe(true);
    expect(hostListHasAddress(entries, "::1", 5432)).toBe(false);
  });
});

describe("SOURCE_ALLOWED_HOSTS in config", () => {
  const BASE = { DATABASE_URL: "postgres://u:p@db.internal:5432/cfg" };

  test("a valid list boots", () => {
    expect(parseConfig({ ...BASE, SOURCE_ALLOWED_HOSTS: "127.0.0.1:5433, 10.0.0.0/8" }).config.SOURCE_ALLOWED_HOSTS).toBe(
      "127.0.0.1:5433, 10.0.0.0/8",
    );
  });

  test("an entry that does not parse refuses boot, naming it", () => {
    let error: unknown;
    try {
      parseConfig({ ...BASE, SOURCE_ALLOWED_HOSTS: "10.0.0.0/8, db..internal" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((p) => p.variable)).toEqual(["SOURCE_ALLOWED_HOSTS"]);
    expect(problems[0].message).toContain('"db..internal"');
  });
});
