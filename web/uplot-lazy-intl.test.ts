import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { afterEach, describe, expect, test } from "vitest";
import { rewriteUplotIntl, uplotLazyIntl } from "./uplot-lazy-intl.ts";

const UPLOT_ESM = createRequire(import.meta.url).resolve("uplot/dist/uPlot.esm.js");
const RealNumberFormat = Intl.NumberFormat;
const RealDateTimeFormat = Intl.DateTimeFormat;

const TZ = process.env.TZ;

afterEach(() => {
  if (TZ === undefined) delete process.env.TZ;
  else process.env.TZ = TZ;
  Intl.NumberFormat = RealNumberFormat;
  Intl.DateTimeFormat = RealDateTimeFormat;
});

/** Counts the Intl formatters made while `fn` runs. */
async function countingIntl<T>(fn: () => Promise<T>): Promise<{ made: string[]; value: T }> {
  const made: string[] = [];
  const counting = <F extends object>(Real: F, name: string): F =>
    new Proxy(Real, {
      construct(target, args) {
        made.push(name);
        return Reflect.construct(target as never, args) as object;
      },
      apply(target, self, args) {
        made.push(name);
        return Reflect.apply(target as never, self, args) as unknown;
      },
    });
  Intl.NumberFormat = counting(RealNumberFormat, "NumberFormat");
  Intl.DateTimeFormat = counting(RealDateTimeFormat, "DateTimeFormat");
  const value = await fn();
  return { made, value };
}

describe("uPlot's Intl objects made on first use", () => {
  test("the installed uPlot's module has the lines the rewrite replaces, and none of them after it", async () => {
    const source = await readFile(UPLOT_ESM, "utf8");
    expect(source).toMatch(/^const numFormatter = new Intl\.NumberFormat/m);
    const out = rewriteUplotIntl(source);
    expect(out).not.toMatch(/^const \w+ = new Intl\./m);
    expect(out).toContain("tz == localTz()");
  });

  test("a uPlot that lost a line fails the build, naming it", () => {
    expect(() => rewriteUplotIntl("const fmtNum = val => val;")).toThrow(/numFormatter.*web\/uplot-lazy-intl\.ts/);
  });

  test("bundled with the plugin, uPlot's module makes no Intl object when evaluated, and formats as before when asked", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pulseboard-uplot-intl-"));
    try {
      const outfile = join(dir, "uplot.mjs");
      await esbuild.build({
        stdin: { contents: 'export { default } from "uplot";', resolveDir: import.meta.dirname },
        outfile,
        bundle: true,
        format: "esm",
        platform: "neutral",
        mainFields: ["module", "main"],
        logLevel: "silent",
        plugins: [uplotLazyIntl],
      });
      const { made, value: uPlot } = await countingIntl(
        async () =>
          ((await import(pathToFileURL(outfile).href)) as { default: { fmtNum(n: number): string; tzDate(d: Date, tz: string): Date } })
            .default,
      );
      expect(made).toEqual([]);
      expect(uPlot.fmtNum(1234.5)).toBe(new RealNumberFormat("en-US").format(1234.5));
      // The local zone's comparison (uPlot returns the same Date for it): a zone other than UTC, which has its own branch.
      process.env.TZ = "Europe/Paris";
      const local = new RealDateTimeFormat().resolvedOptions().timeZone;
      expect(local).toBe("Europe/Paris");
      const d = new Date(Date.UTC(2026, 0, 1, 12));
      expect(uPlot.tzDate(d, local)).toBe(d);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
