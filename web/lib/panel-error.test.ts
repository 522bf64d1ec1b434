import { describe, expect, test } from "vitest";
import { panelErrorWords } from "./panel-error.ts";

describe("panelErrorWords", () => {
  test.each([
    ["connection_refused", /refused the connection/],
    ["connect_timeout", /did not answer the connection/],
    ["query_timeout", /did not finish/],
    ["config_store_unavailable", /configuration store/],
    ["keyword", /other than read/],
  ])("%s is said in words", (code, words) => {
    expect(panelErrorWords(code)).toMatch(words);
  });

  test("an unknown code is shown as it is; none gives nothing; inherited names are not codes", () => {
    expect(panelErrorWords("brand_new_code")).toBe("Failed (brand_new_code).");
    expect(panelErrorWords(undefined)).toBeNull();
    expect(panelErrorWords("constructor")).toBe("Failed (constructor).");
  });
});
