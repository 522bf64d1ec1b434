import { describe, expect, test } from "vitest";
import { STREAM_HOST_PATHS, isStreamHostPath } from "./stream-host-paths.ts";

describe("isStreamHostPath", () => {
  test.each(["/api/dashboards/db_1/stream", "/api/dashboards/abc-DEF_9/stream", "/api/metrics"])("%s is the stream host's", (path) => {
    expect(isStreamHostPath(path)).toBe(true);
  });

  test.each([
    "/api/dashboards/db_1",
    "/api/dashboards//stream",
    "/api/dashboards/a/b/stream",
    "/api/dashboards/db_1/stream/",
    "/api/dashboards/db_1/streams",
    "/api/metrics/",
    "/api/metricsx",
    "/xapi/metrics",
    "/api/health",
    "/api/ready",
    "/dashboards/db_1",
  ])("%s is the handlers'", (path) => {
    expect(isStreamHostPath(path)).toBe(false);
  });

  test("the patterns are CloudFront path patterns, each with at most one wildcard segment", () => {
    for (const pattern of STREAM_HOST_PATHS) {
      expect(pattern).toMatch(/^\/[a-z/]*(\*\/[a-z]+)?$/);
    }
  });
});
