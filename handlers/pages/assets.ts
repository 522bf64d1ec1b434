import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { brotliCompress, constants as zlib, gzip } from "node:zlib";
import { join } from "node:path";
import type { Env, Hono } from "hono";

/** What a page needs to reference the browser bundle: URLs of the script and the stylesheet. */
export interface AssetUrls {
  script: string | null;
  style: string | null;
  /** Modules the script imports statically, for `<link rel="modulepreload">`. */
  preload?: string[];
}

/** Hashed names (main-ABC123.js) never change content, so browsers may keep them for a year. */
const IMMUTABLE = "public, max-age=31536000, immutable";
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

/**
 * Resolves the bundle's URLs from `dir`: manifest.json written by buildWebAssets ({"main.js":
 * "main-HASH.js", ...}), or else plain main.js/main.css versioned by a content-hash query.
 * Read once and cached; the lead's start-up builds the assets before the first page is served.
 */
export function createAssetCatalog(dir: string | undefined) {
  let cached: Promise<AssetUrls> | null = null;

  async function load(): Promise<AssetUrls> {
    if (!dir) return { script: null, style: null };
    try {
      const manifest = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")) as Record<string, unknown>;
      const safe = (name: unknown): name is string => typeof name === "string" && SAFE_NAME.test(name);
      const url = (key: string) => (safe(manifest[key]) ? `/assets/${manifest[key]}` : null);
      const imports = Array.isArray(manifest["main.imports"]) ? (manifest["main.imports"] as unknown[]) : [];
      return { script: url("main.js"), style: url("main.css"), preload: imports.filter(safe).map((n) => `/assets/${n}`) };
    } catch {
      const versioned = async (name: string) => {
        try {
          const hash = createHash("sha256")
            .update(await readFile(join(dir, name)))
            .digest("hex")
            .slice(0, 12);
          return `/assets/${name}?v=${hash}`;
        } catch {
          return null;
        }
      };
      return { script: await versioned("main.js"), style: await versioned("main.css") };
    }
  }

  return {
    /** The bundle URLs; a missing build gives nulls (the page then says the assets are not built). */
    urls(): Promise<AssetUrls> {
      cached ??= load().then((u) => {
        // Do not cache a miss: the assets may be built after the first request.
        if (!u.script) cached = null;
        return u;
      });
      return cached;
    },
  };
}

/**
 * GET /assets/:name: files of the built bundle, flat, no directory traversal. `sourceMaps: false`
 * (production) answers 404 for every `.map` file, whether or not the build wrote one.
 */
export function registerAssets<E extends Env>(app: Hono<E>, dir: string | undefined, opts: { sourceMaps: boolean }): void {
  app.get("/assets/:name", async (c) => {
    const name = c.req.param("name");
    if (!dir || !SAFE_NAME.test(name) || name.includes("..") || name === "manifest.json") return c.notFound();
    const ext = name.slice(name.lastIndexOf("."));
    if (ext === ".map" && !opts.sourceMaps) return c.notFound();
    const type = TYPES[ext];
    if (!type) return c.notFound();
    const hashed = /-[A-Z0-9]{8,}\.[a-z]+$/.test(name) || c.req.query("v") !== undefined;
    const file = await encodings(join(dir, name), hashed);
    if (!file) return c.notFound();
    const encoding = pickEncoding(c.req.header("accept-encoding"), file);
    const body = encoding === "br" ? file.br! : encoding === "gzip" ? file.gzip! : file.raw;
    return c.body(new Uint8Array(body), 200, {
      "content-type": type,
      "cache-control": hashed ? IMMUTABLE : "no-cache",
      "x-content-type-options": "nosniff",
      vary: "accept-encoding",
      ...(encoding ? { "content-encoding": encoding } : {}),
    });
  });
}

/** A file with its brotli and gzip forms (absent for types that do not shrink). */
interface EncodedFile {
  raw: Buffer;
  br?: Buffer;
  gzip?: Buffer;
}

const brotli = promisify(brotliCompress);
const gz = promisify(gzip);
/** Files under this size go out as they are: compression would save less than a packet. */
const MIN_COMPRESS_BYTES = 1024;
/** Compressed hashed files, by path: their content never changes, so each is compressed once per process. */
const compressed = new Map<string, Promise<EncodedFile | null>>();

async function encode(path: string): Promise<EncodedFile | null> {
  let raw: Buffer;
  try {
    raw = await readFile(path);
  } catch {
    return null;
  }
  if (raw.length < MIN_COMPRESS_BYTES || /\.(png|ico)$/.test(path)) return { raw };
  const [br, gzipped] = await Promise.all([
    brotli(raw, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
    gz(raw, { level: 9 }),
  ]);
  return { raw, br, gzip: gzipped };
}

/** The file and its compressed forms; hashed (immutable) files are compressed once and kept. */
function encodings(path: string, hashed: boolean): Promise<EncodedFile | null> {
  if (!hashed) return encode(path);
  let entry = compressed.get(path);
  if (!entry) {
    entry = encode(path).then((f) => {
      if (!f) compressed.delete(path); // a file built later is read again
      return f;
    });
    compressed.set(path, entry);
  }
  return entry;
}

/** br when the browser takes it, else gzip, else none; a q=0 refuses that coding. */
export function pickEncoding(header: string | undefined, file: EncodedFile): "br" | "gzip" | null {
  const accepted = new Map<string, number>();
  for (const part of (header ?? "").toLowerCase().split(",")) {
    const [coding, ...params] = part.trim().split(";");
    if (!coding) continue;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    accepted.set(coding, q === undefined ? 1 : Number(q));
  }
  const ok = (coding: string) => (accepted.get(coding) ?? accepted.get("*") ?? 0) > 0;
  if (file.br && ok("br")) return "br";
  if (file.gzip && ok("gzip")) return "gzip";
  return null;
}
