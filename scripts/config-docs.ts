// npm run config:docs            prints the configuration reference generated from lib/config/variables.ts
// npm run config:docs -- --write rewrites the generated block of README.md (and says whether anything changed)
import { readFile, writeFile } from "node:fs/promises";
import { renderConfigDocs, spliceConfigDocs } from "../lib/config/docs.ts";

if (process.argv.includes("--write")) {
  const path = new URL("../README.md", import.meta.url);
  const before = await readFile(path, "utf8");
  const after = spliceConfigDocs(before);
  if (after === before) {
    console.log("README.md configuration reference already up to date");
  } else {
    await writeFile(path, after);
    console.log("README.md configuration reference updated");
  }
} else {
  console.log(renderConfigDocs());
}
