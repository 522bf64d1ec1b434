// npm run config:docs            prints the configuration reference generated from lib/config/variables.ts
// npm run config:docs -- --write rewrites the generated block of README.md
import { readFile, writeFile } from "node:fs/promises";
import { renderConfigDocs, spliceConfigDocs } from "../lib/config/docs.ts";

if (process.argv.includes("--write")) {
  const path = new URL("../README.md", import.meta.url);
  await writeFile(path, spliceConfigDocs(await readFile(path, "utf8")));
  console.log("README.md configuration reference updated");
} else {
  console.log(renderConfigDocs());
}
