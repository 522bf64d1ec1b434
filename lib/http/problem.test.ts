import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { describe, expect, test } from "vitest";
import { configStoreFault, configStoreUnavailable, markConfigStoreError } from "../store/faults.ts";
import { AppError } from "./errors.ts";
import { onError } from "./problem.ts";

/** An app whose one route throws `err`, with the log lines onError wrote. */
function appThrowing(err: unknown) {
  const lines: Record<string, unknown>[] = [];
  const app = new Hono();
  app.use(requestId());
  app.onError(onError((l) => lines.push(l), configStoreFault));
  app.get("/x", () => {
    throw err;
  });
  return { app, lines };
}

/** pg's error for a refused connection: its message names the store's address. */
function refused() {
  return Object.assign(new Error("connect ECONNREFUSED 10.1.2.3:5432"), {
    code: "ECONNREFUSED",
    errno: -111,
    syscall: "connect",
    address: "10.1.2.3",
    port: 5432,
  });
}

describe("onError and config-store faults", () => {
  test.each([
    ["a refused connection", () => markConfigStoreError(refused()), "ECONNREFUSED"],
    ["the client-side query timeout", () => markConfigStoreError(new Error("Query read timeout")), "query_timeout"],
    [
      "a wait for a pooled client that timed out",
      () => markConfigStoreError(new Error("timeout exceeded when trying to connect")),
      "connect_timeout",
    ],
    [
      "a connect timeout (pg-pool wraps the socket error)",
      () =>
        markConfigStoreError(
          new Error("Connection terminated due to connection timeout", { cause: new Error("Connection terminated unexpectedly") }),
        ),
      "connect_timeout",
    ],
    ["a lost connection", () => markConfigStoreError(new Error("Connection terminated unexpectedly")), "connection_lost"],
    [
      "a statement cancelled by statement_timeout",
      () =>
        markConfigStoreError(
          Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014", severity: "ERROR" }),
        ),
      "57014",
    ],
    [
      "the server shutting down",
      () =>
        markConfigStoreError(
          Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01", severity: "FATAL" }),
        ),
      "57P01",
    ],
    ["a caller's own deadline", () => configStoreUnavailable("timeout"), "timeout"],
  ])("%s: 503 config_store_unavailable with Retry-After, logged with its code and the request id only", async (_name, make, cause) => {
    const { app, lines } = appThrowing(make());
    const res = await app.request("/x");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = await res.json();
    expect(body).toMatchObject({ code: "config_store_unavailable", status: 503, cause });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: "config store unavailable", cause, requestId: body.requestId, path: "/x" });
    const text = JSON.stringify({ body, lines });
    expect(text).not.toContain("10.1.2.3");
    expect(text).not.toContain("5432");
  });

  test("the same failure from anything but the config store (an unmarked error) stays a 500; its log keeps the code, not the address", async () => {
    const { app, lines } = appThrowing(refused());
    const res = await app.request("/x");
    expect(res.status).toBe(500);
    expect(lines[0]).toMatchObject({ msg: "unhandled error", code: "ECONNREFUSED", syscall: "connect" });
    expect(JSON.stringify(lines)).not.toContain("10.1.2.3");
  });

  test("a statement error of the config store (a bug, not an outage) stays a 500", async () => {
    const err = markConfigStoreError(Object.assign(new Error('relation "x" does not exist'), { code: "42P01", severity: "ERROR" }));
    const { app } = appThrowing(err);
    expect((await app.request("/x")).status).toBe(500);
  });

  test("other AppErrors are unchanged", async () => {
    const { app, lines } = appThrowing(new AppError("not_found", "Not found."));
    const res = await app.request("/x");
    expect(res.status).toBe(404);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(lines).toHaveLength(0);
  });
});
