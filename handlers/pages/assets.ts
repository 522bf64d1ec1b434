import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Env, Hono } from "hono";

/** What a page needs to reference the browser bundle: URLs of the script and the stylesheet. */
export interface AssetUrls {
  script: string | null;
  style: string | null;
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
      const manifest = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")) as Record<string, string>;
      const url = (key: string) => (manifest[key] && SAFE_NAME.test(manifest[key]) ? `/assets/${manifest[key]}` : null);
      return { script: url("main.js"), style: url("main.css") };
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
    let body: Buffer;
    try {
      body = await readFile(join(dir, name));
    } catch {
      return c.notFound();
    }
    const hashed = /-[A-Z0-9]{8,}\.[a-z]+$/.test(name) || c.req.query("v") !== undefined;
    return c.body(new Uint8Array(body), 200, {
      "content-type": type,
      "cache-control": hashed ? IMMUTABLE : "no-cache",
      "x-content-type-options": "nosniff",
    });
  });
}
