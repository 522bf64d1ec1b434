import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { DashboardSpec } from "../lib/dashboards/spec.ts";
import { AppError } from "../lib/http/errors.ts";
import { endsInPast, parseDuration, resolveView, viewKey, viewQueryOf } from "./view.ts";

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const spec: DashboardSpec = {
  title: "t",
  time: { from: "now-24h", to: "now" },
  refreshIntervalMs: 15_000,
  panels: [],
  variables: [{ name: "service", type: "custom", values: ["checkout", "search"], multi: true }],
};
const opts = { savedRefreshMs: 15_000, minRefreshMs: 2_000, now: NOW };
const resolve = (url: string) => resolveView(viewQueryOf(`http://h/api/dashboards/d/stream?${url}`), spec, opts);

function refusal(url: string): { status: number; parameter: unknown; detail: string } {
  try {
    resolve(url);
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, parameter: err.extra.parameter, detail: err.detail };
    throw err;
  }
  throw new Error(`accepted: ${url.slice(0, 80)}`);
}

describe("resolveView", () => {
  test("absent parameters are the saved defaults; others (tz, viewPanel) are ignored", () => {
    expect(resolve("tz=UTC&viewPanel=a")).toEqual({ from: "now-24h", to: "now", refreshMs: 15_000, vars: {} });
  });

  test("from, to, refresh and repeated var-* in Grafana's names", () => {
    expect(resolve("from=now-6h&to=now&refresh=30s&var-service=checkout&var-service=search")).toEqual({
      from: "now-6h",
      to: "now",
      refreshMs: 30_000,
      vars: { service: ["checkout", "search"] },
    });
  });

  test.each([
    ["5s", 5_000],
    ["1m", 60_000],
    ["1h", 3_600_000],
    ["1d", 86_400_000],
    ["2500ms", 2_500],
  ])("refresh=%s is %i ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
    expect(resolve(`refresh=${text}`).refreshMs).toBe(ms);
  });

  const hostile: [string, string, string][] = [
    ["NUL in from", `from=now-1h${"%00"}`, "from"],
    ["10,000 characters", `from=${"9".repeat(10_000)}`, "from"],
    ["an offset past ten years", "from=now-99999999999w", "from"],
    ["garbage to", "to=yesterday", "to"],
    ["an empty range", "from=now&to=now-1h", "from"],
    ["refresh below the floor", "refresh=1s", "refresh"],
    ["refresh not a duration", "refresh=fast", "refresh"],
    ["refresh above a day", "refresh=2d", "refresh"],
    ["refresh as a number", "refresh=30000", "refresh"],
    ["from repeated", "from=now-1h&from=now-2h", "from"],
    ["from repeated 10,000 times", Array.from({ length: 10_000 }, () => "from=now-1h").join("&"), "from"],
    ["an undeclared variable", "var-region=eu", "var-region"],
    ["a variable name that is no identifier", "var-a%20b=x", "var-*"],
    ["a variable value of 10,000 characters", `var-service=${"x".repeat(10_000)}`, "var-service"],
    ["a variable value with NUL", "var-service=a%00b", "var-service"],
    ["a variable repeated 10,000 times", Array.from({ length: 10_000 }, (_, i) => `var-service=v${i}`).join("&"), "var-service"],
  ];
  test.each(hostile)("%s is a 400 naming the parameter", (_name, url, parameter) => {
    const r = refusal(url);
    expect(r.status).toBe(400);
    expect(r.parameter).toBe(parameter);
    expect(r.detail).toContain(parameter);
    expect(r.detail.length).toBeLessThan(300);
  });

  test("any query string is a view or a 4xx, never another error", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("from", "to", "refresh", "var-service", "var-x", "tz"), fc.string({ maxLength: 30 })), {
          maxLength: 6,
        }),
        (pairs) => {
          const q = new URLSearchParams(pairs);
          try {
            resolve(q.toString());
          } catch (err) {
            expect(err).toBeInstanceOf(AppError);
            expect((err as AppError).status).toBe(400);
          }
        },
      ),
    );
  });
});

describe("viewKey", () => {
  test("equal views share a key; a value cannot forge another view's key", () => {
    const a = resolve("from=now-6h&var-service=checkout&var-service=search");
    const b = resolve("var-service=checkout&from=now-6h&var-service=search");
    expect(viewKey("d", a)).toBe(viewKey("d", b));
    const forged = resolve("var-service=checkout%22%2C%22search");
    expect(viewKey("d", forged)).not.toBe(viewKey("d", a));
    expect(viewKey("d", resolve("refresh=30s"))).not.toBe(viewKey("d", resolve("refresh=1m")));
  });
});

test("a range ending in the past is not live; one ending at now is", () => {
  expect(endsInPast({ to: "2026-11-26T00:00:00Z" }, NOW)).toBe(true);
  expect(endsInPast({ to: "now" }, NOW)).toBe(false);
  expect(endsInPast({ to: "now-1h" }, NOW)).toBe(false);
  expect(endsInPast({ to: "2027-01-01T00:00:00Z" }, NOW)).toBe(false);
});
