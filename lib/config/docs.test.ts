import { readFile } from "node:fs/promises";
import { expect, test } from "vitest";
import { spliceConfigDocs } from "./docs.ts";
import { variables } from "./variables.ts";

test("the README's configuration reference is generated from the schema and up to date", async () => {
  const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
  // If this fails: npm run config:docs -- --write
  expect(readme).toBe(spliceConfigDocs(readme));
  for (const name of Object.keys(variables)) expect(readme).toContain(`\`${name}\``);
});
