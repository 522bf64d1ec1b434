import { readFile } from "node:fs/promises";
import type { Plugin } from "esbuild";

/**
 * uPlot (1.6) builds an `Intl.NumberFormat` and an `Intl.DateTimeFormat` when its module is evaluated. The first Intl
 * object a page makes loads the locale data (about 20 ms on a quiet 2-core machine, 35 ms under load, whichever object
 * it is), and the live page draws its first chart without Intl at all (our axes, legends and labels format by hand in
 * the common cases: web/lib/format.ts), so those two lines put that cost in front of the first chart for nothing. This
 * build step rewrites them to make each object on first use: `fmtNum` (uPlot's default axis and legend values, which
 * our charts replace) and `tzDate`'s comparison with the local zone. The module's behaviour is otherwise unchanged.
 * When uPlot's text no longer has these lines (an upgrade), the build fails and names them rather than losing the
 * change silently.
 */
export const UPLOT_INTL_REWRITES: readonly { find: string; replace: string }[] = [
  {
    find: "const numFormatter = new Intl.NumberFormat(domEnv ? nav.language : 'en-US');\nconst fmtNum = val => numFormatter.format(val);",
    replace:
      "let numFormatter = null;\nconst fmtNum = val => (numFormatter ??= new Intl.NumberFormat(domEnv ? nav.language : 'en-US')).format(val);",
  },
  {
    find: "const localTz = new Intl.DateTimeFormat().resolvedOptions().timeZone;",
    replace: "let localTzName = null;\nconst localTz = () => (localTzName ??= new Intl.DateTimeFormat().resolvedOptions().timeZone);",
  },
  { find: "\telse if (tz == localTz)\n", replace: "\telse if (tz == localTz())\n" },
];

/** Applies the rewrites to uPlot's ES module text; throws naming the first line not found. */
export function rewriteUplotIntl(source: string): string {
  let out = source.replace(/\r\n/g, "\n");
  for (const r of UPLOT_INTL_REWRITES) {
    const at = out.indexOf(r.find);
    if (at === -1 || out.indexOf(r.find, at + 1) !== -1) {
      throw new Error(`uPlot's module no longer has exactly one "${r.find.split("\n")[0]}": update web/uplot-lazy-intl.ts`);
    }
    out = out.slice(0, at) + r.replace + out.slice(at + r.find.length);
  }
  return out;
}

/** The esbuild plugin: uPlot's ES module (`uplot/dist/uPlot.esm.js`) loaded with its Intl objects made on first use. */
export const uplotLazyIntl: Plugin = {
  name: "uplot-lazy-intl",
  setup(build) {
    build.onLoad({ filter: /[\\/]uplot[\\/]dist[\\/]uPlot\.esm\.js$/ }, async (args) => ({
      contents: rewriteUplotIntl(await readFile(args.path, "utf8")),
      loader: "js",
    }));
  },
};
