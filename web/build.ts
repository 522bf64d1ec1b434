import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { uplotLazyIntl } from "./uplot-lazy-intl.ts";

/**
 * What buildWebAssets wrote: logical name → hashed file name (also written to manifest.json); `main.imports`, the
 * chunks main.js imports statically, which the pages preload (a module's imports are found only once it is parsed).
 */
export type WebManifest = { "main.js": string; "main.css"?: string; "main.imports"?: string[]; "chart-worker.js"?: string };

export interface BuildWebAssetsOptions {
  /** Output folder; files in it from an earlier build of ours are replaced. */
  outdir: string;
  /** Minify (production); off keeps the bundle readable while debugging. */
  minify?: boolean;
  /** Source maps next to the files (default true; they reveal only our own browser code). */
  sourcemap?: boolean;
}

const ENTRY = fileURLToPath(new URL("./main.ts", import.meta.url));
const CHART_WORKER_ENTRY = fileURLToPath(new URL("./charts/chart-worker.entry.ts", import.meta.url));
/**
 * Files a previous build of ours left: main-<HASH>.js/.css, chunk-<HASH>.js (lazily loaded pages), the chart worker,
 * their maps, the manifest.
 */
const OURS = /^((main|chunk|chart-worker)-[A-Z0-9]+\.(js|css)(\.map)?|manifest\.json)$/;

/** What the page's bundle and the chart worker's are both built with: hashed names, the browsers, a metafile. */
function shared(outdir: string, opts: { minify?: boolean; sourcemap?: boolean }) {
  return {
    outdir,
    entryNames: "[name]-[hash]",
    bundle: true,
    platform: "browser" as const,
    target: ["es2022", "chrome111", "firefox113", "safari16.4"],
    minify: opts.minify ?? false,
    sourcemap: opts.sourcemap ?? true,
    metafile: true as const,
    logLevel: "silent" as const,
    legalComments: "none" as const,
  };
}

/**
 * Bundles the chart worker's script (web/charts/chart-worker.entry.ts) into `outdir` as chart-worker-<HASH>.js, a
 * classic script (module workers came later to Firefox than the rest of the bundle's targets), and returns its file
 * name, which the page's bundle is built with (`__CHART_WORKER__`, resolved beside it).
 */
export async function buildChartWorker(outdir: string, opts: { minify?: boolean; sourcemap?: boolean } = {}): Promise<string> {
  const result = await esbuild.build({ ...shared(outdir, opts), entryPoints: { "chart-worker": CHART_WORKER_ENTRY }, format: "iife" });
  const name = Object.keys(result.metafile.outputs)
    .map((p) => basename(p))
    .find((f) => /^chart-worker-[A-Z0-9]+\.js$/.test(f));
  if (!name) throw new Error("web build produced no chart-worker-<hash>.js");
  return name;
}

/**
 * Bundles the browser code (web/main.ts and the CSS it imports) with esbuild into content-hashed
 * files plus manifest.json, which the pages read to reference them. Serve the folder at /assets/
 * (createApp's `webAssetsDir`): the hashed names are cached for a year.
 */
export async function buildWebAssets(opts: BuildWebAssetsOptions): Promise<{ outdir: string; manifest: WebManifest; files: string[] }> {
  const outdir = resolve(opts.outdir);
  await mkdir(outdir, { recursive: true });
  for (const name of await readdir(outdir)) if (OURS.test(name)) await rm(join(outdir, name), { force: true });

  const worker = await buildChartWorker(outdir, opts);
  const result = await esbuild.build({
    ...shared(outdir, opts),
    entryPoints: { main: ENTRY },
    // The editor page (CodeMirror) is imported on demand: no other page downloads or parses it.
    splitting: true,
    chunkNames: "chunk-[hash]",
    format: "esm",
    define: {
      "process.env.NODE_ENV": JSON.stringify(opts.minify ? "production" : "development"),
      __CHART_WORKER__: JSON.stringify(worker),
    },
    // uPlot's module-level Intl objects made on first use: the first chart is drawn without Intl.
    plugins: [uplotLazyIntl],
  });

  let files = [
    ...Object.keys(result.metafile.outputs).map((p) => basename(p)),
    worker,
    ...(opts.sourcemap === false ? [] : [`${worker}.map`]),
  ];
  const js = files.find((f) => /^main-[A-Z0-9]+\.js$/.test(f));
  const css = files.find((f) => /^main-[A-Z0-9]+\.css$/.test(f));
  if (!js) throw new Error("web build produced no main-<hash>.js");
  await dropChunkStylesheets(outdir, files, css);
  files = files.filter((f) => !/^chunk-[A-Z0-9]+\.css(\.map)?$/.test(f));
  // The chunks main.js imports statically (code it shares with the editor's chunk): fetched only once main.js is
  // parsed, unless the page names them for preloading.
  const mainOut = Object.entries(result.metafile.outputs).find(([p]) => basename(p) === js)?.[1];
  const imports = (mainOut?.imports ?? []).filter((i) => i.kind === "import-statement").map((i) => basename(i.path));
  const manifest: WebManifest = {
    "main.js": js,
    ...(css ? { "main.css": css } : {}),
    ...(imports.length ? { "main.imports": imports } : {}),
    "chart-worker.js": worker,
  };
  await writeFile(join(outdir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return { outdir, manifest, files: [...files, "manifest.json"] };
}

/**
 * With splitting, a stylesheet imported by code shared with a lazily loaded chunk (uPlot's) is also written as
 * chunk-<HASH>.css, which no page links: main.ts imports it too, so main.css holds the same rules. The build
 * checks that every such file is inside main.css (a stylesheet only a chunk imports would never reach the
 * page) and removes it.
 */
async function dropChunkStylesheets(outdir: string, files: readonly string[], mainCss: string | undefined): Promise<void> {
  const main = mainCss ? await readFile(join(outdir, mainCss), "utf8") : "";
  for (const name of files.filter((f) => /^chunk-[A-Z0-9]+\.css$/.test(f))) {
    const rules = (await readFile(join(outdir, name), "utf8")).replace(/\/\*# sourceMappingURL=.*\*\/\s*$/, "").trim();
    if (rules && !main.includes(rules)) {
      throw new Error(`web build: ${name} holds styles that main.css lacks; import that stylesheet from web/main.ts`);
    }
    await rm(join(outdir, name), { force: true });
    await rm(join(outdir, `${name}.map`), { force: true });
  }
}
