import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { STREAM_EVENTS, decodeFrame, streamUrl, viewParamsOf } from "./frames.ts";

describe("decodeFrame", () => {
  test.each([
    ["snapshot", { dashboard: { id: "d" }, view: { from: "now-1h" }, panels: [] }],
    ["panel", { panelId: "a", at: 1, result: { columns: [], rows: [] } }],
    ["panel", { panelId: "a", at: 1, error: { code: "keyword", message: "no" } }],
    ["dashboard", { id: "d", deleted: true }],
    ["view", { from: "now-1h", to: "2026-11-27T12:00:00Z", refreshMs: 5000, vars: {}, live: false, saved: false }],
    ["session_expired", { expiresAt: 5, reason: "revoked" }],
    ["draining", { retryMs: 2000 }],
  ])("reads %s", (event, data) => {
    expect(decodeFrame(event, JSON.stringify(data))).toEqual({ event, data });
  });

  test.each([
    ["unknown", "{}"],
    ["panel", "not json"],
    ["panel", "[]"],
    ["panel", JSON.stringify({ panelId: "a", at: 1 })],
    ["snapshot", JSON.stringify({ dashboard: {}, panels: [] })],
    ["draining", JSON.stringify({ retryMs: "2000" })],
    ["view", JSON.stringify({ from: "now-1h", to: "now", live: "false" })],
    ["session_expired", "null"],
  ])("refuses %s %s", (event, data) => {
    expect(decodeFrame(event, data)).toBeNull();
  });

  test("never throws on any text", () => {
    fc.assert(
      fc.property(fc.constantFrom(...STREAM_EVENTS, "x"), fc.string(), (event, data) => {
        decodeFrame(event, data);
      }),
    );
  });
});

describe("view parameters", () => {
  test("the stream URL carries from, to, refresh and repeated var-*", () => {
    const url = streamUrl("d_1", { from: "now-6h", to: "now", refresh: "30s", vars: { service: ["checkout", "search"] } });
    expect(url).toBe("/api/dashboards/d_1/stream?from=now-6h&to=now&refresh=30s&var-service=checkout&var-service=search");
    expect(streamUrl("d_1")).toBe("/api/dashboards/d_1/stream");
  });

  test("names such as __proto__ and constructor stay plain keys", () => {
    const back = viewParamsOf(new URLSearchParams("var-__proto__=a&var-constructor=b&var-constructor=c"));
    expect(Object.keys(back.vars ?? {})).toEqual(["__proto__", "constructor"]);
    expect(back.vars?.constructor).toEqual(["b", "c"]);
  });

  test("a page's query string round-trips, other parameters are left out", () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            from: fc.string(),
            to: fc.string(),
            refresh: fc.string(),
            vars: fc.dictionary(fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/), fc.array(fc.string(), { minLength: 1, maxLength: 3 })),
          },
          { requiredKeys: [] },
        ),
        (view) => {
          const url = streamUrl("d", view);
          const search = new URLSearchParams(`${url.split("?")[1] ?? ""}&tz=UTC&viewPanel=a`);
          const back = viewParamsOf(search);
          const expected = { ...view };
          if (expected.vars && Object.keys(expected.vars).length === 0) delete expected.vars;
          expect(back).toEqual(expected);
        },
      ),
    );
  });
});
