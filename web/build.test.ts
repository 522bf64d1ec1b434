import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { buildWebAssets } from "./build.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pulseboard-web-build-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test("builds hashed JS and CSS with a manifest; a rebuild replaces only its own files", async () => {
  await writeFile(join(dir, "keep.txt"), "not ours");
  await writeFile(join(dir, "main-OLDHASH1.js"), "old");
  const { manifest, files } = await buildWebAssets({ outdir: dir, minify: true });
  expect(manifest["main.js"]).toMatch(/^main-[A-Z0-9]+\.js$/);
  expect(manifest["main.css"]).toMatch(/^main-[A-Z0-9]+\.css$/);
  expect(JSON.parse(await readFile(join(dir, "manifest.json"), "utf8"))).toEqual(manifest);
  const names = await readdir(dir);
  expect(names).toContain("keep.txt");
  expect(names).not.toContain("main-OLDHASH1.js");
  expect(files).toContain(manifest["main.js"]);

  const js = await readFile(join(dir, manifest["main.js"]), "utf8");
  // Browser code only: no Node built-ins, no server modules, no external URLs to fetch from.
  expect(js).not.toMatch(/from\s*["']node:|require\(["'](fs|pg)["']\)/);
  expect(js).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)[a-z]/i);
  const css = await readFile(join(dir, manifest["main.css"]!), "utf8");
  expect(css).not.toMatch(/@import|url\(\s*["']?https?:/);
});

test("the editor is a chunk of its own: main.js imports it on demand, and every stylesheet is in main.css", async () => {
  const { manifest, files } = await buildWebAssets({ outdir: dir, minify: true });
  const main = await readFile(join(dir, manifest["main.js"]), "utf8");
  const chunks = files.filter((f) => /^chunk-[A-Z0-9]+\.js$/.test(f));
  const texts = await Promise.all(chunks.map(async (f) => [f, await readFile(join(dir, f), "utf8")] as const));
  // CodeMirror's view code (its class names) is only in a chunk that main.js imports with import().
  const codemirror = texts.filter(([, t]) => t.includes("cm-content")).map(([f]) => f);
  expect(codemirror).toHaveLength(1);
  expect(main).not.toContain("cm-content");
  expect(main).toContain(`import("./${codemirror[0]}")`);
  expect(main).not.toMatch(new RegExp(`from\\s*"\\./${codemirror[0]}"`));
  // The chunks main.js imports statically are in the manifest, for the pages to preload; the editor's is not.
  const statics = [...main.matchAll(/from\s*"\.\/(chunk-[A-Z0-9]+\.js)"/g)].map((m) => m[1]);
  expect(statics.length).toBeGreaterThan(0);
  expect(manifest["main.imports"]).toEqual(statics);
  expect(manifest["main.imports"]).not.toContain(codemirror[0]);
  // uPlot's stylesheet reaches every page through main.css; no chunk stylesheet is left for no page to link.
  expect(await readFile(join(dir, manifest["main.css"]!), "utf8")).toContain(".u-legend");
  expect((await readdir(dir)).filter((f) => f.endsWith(".css") && !f.startsWith("main-"))).toEqual([]);
});

test("the chart worker is a script of its own, hashed, named in the manifest and by the bundle that starts it", async () => {
  const { manifest, files } = await buildWebAssets({ outdir: dir, minify: true });
  const worker = manifest["chart-worker.js"]!;
  expect(worker).toMatch(/^chart-worker-[A-Z0-9]+\.js$/);
  expect(files).toContain(worker);
  const text = await readFile(join(dir, worker), "utf8");
  // A classic script (no module syntax) that draws lines and figures, and none of the page's code.
  expect(text).not.toMatch(/^\s*(import|export)\s/m);
  expect(text).toContain("drawn");
  expect(text).not.toContain("cm-content");
  expect(text).not.toContain("uPlot");
  // The live page's code names it (a chunk or main.js, wherever the chart code went).
  const js = await Promise.all(files.filter((f) => /^(main|chunk)-[A-Z0-9]+\.js$/.test(f)).map((f) => readFile(join(dir, f), "utf8")));
  expect(js.some((t) => t.includes(JSON.stringify(worker)))).toBe(true);
});
