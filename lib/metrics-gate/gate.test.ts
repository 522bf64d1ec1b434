import { Hono } from "hono";
import { Registry } from "prom-client";
import { describe, expect, test } from "vitest";
import { onError } from "../http/problem.ts";
import { configStoreFault } from "../store/faults.ts";
import { createMetrics } from "../metrics/metrics.ts";
import { parseCidrList } from "../net/cidr.ts";
import { bearerToken, createMetricsGate, sourceAddress } from "./gate.ts";
import { registerMetrics } from "./route.ts";

const TOKEN = "s3cr3t-token-of-enough-length-000";

function cidrs(text: string) {
  const { ranges, invalid } = parseCidrList(text);
  expect(invalid).toEqual([]);
  return ranges;
}

/** A stream-host-like app with only the metrics route, served through app.request() with a fake socket. */
function appWith(opts: { token?: string; cidrs?: string }) {
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultCollectors: false });
  metrics.setSseSubscribers("db_1", 3);
  const app = new Hono();
  app.onError(onError(() => {}, configStoreFault));
  registerMetrics(app, { gate: createMetricsGate({ token: opts.token, cidrs: opts.cidrs ? cidrs(opts.cidrs) : null }), registry });
  return {
    registry,
    get: (headers: Record<string, string> = {}, socketAddress = "127.0.0.1") =>
      app.request("/api/metrics", { headers }, { incoming: { socket: { remoteAddress: socketAddress } } }),
  };
}

describe("the four configurations of the gate table", () => {
  test("neither set: 404, the endpoint is disabled, whatever is presented", async () => {
    const { get } = appWith({});
    const res = await get({ authorization: `Bearer ${TOKEN}` });
    expect(res.status).toBe(404);
  });

  test("token only: the bearer token is required; the address does not matter", async () => {
    const { get, registry } = appWith({ token: TOKEN });
    const ok = await get({ authorization: `Bearer ${TOKEN}` }, "203.0.113.9");
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toBe(registry.contentType);
    expect(await ok.text()).toContain('svc_sse_subscribers{dashboard="db_1"} 3');

    const missing = await get({});
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe("Bearer");
    const wrong = await get({ authorization: `Bearer ${TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toBe("Bearer");
    expect(await wrong.text()).not.toContain(TOKEN);
  });

  test("CIDRs only: the source address must be listed; no token needed", async () => {
    const { get } = appWith({ cidrs: "10.0.0.0/8" });
    expect((await get({}, "10.1.2.3")).status).toBe(200);
    expect((await get({}, "192.168.0.1")).status).toBe(403);
    expect((await get({ authorization: `Bearer ${TOKEN}` }, "192.168.0.1")).status).toBe(403);
  });

  test("both: token AND address, never OR", async () => {
    const { get } = appWith({ token: TOKEN, cidrs: "10.0.0.0/8" });
    expect((await get({ authorization: `Bearer ${TOKEN}` }, "10.1.2.3")).status).toBe(200);
    // Right token from the wrong address.
    expect((await get({ authorization: `Bearer ${TOKEN}` }, "192.168.0.1")).status).toBe(403);
    // Right address without or with a wrong token.
    const noToken = await get({}, "10.1.2.3");
    expect(noToken.status).toBe(401);
    expect(noToken.headers.get("www-authenticate")).toBe("Bearer");
    expect((await get({ authorization: "Bearer nope" }, "10.1.2.3")).status).toBe(401);
  });
});

test("a token read from the live config: a rotated METRICS_TOKEN applies at the next scrape, the old one is refused", () => {
  const config = { METRICS_TOKEN: TOKEN as string | undefined };
  const gate = createMetricsGate({ token: () => config.METRICS_TOKEN, cidrs: null });
  const scrape = (token: string) => gate.check({ authorization: `Bearer ${token}`, socketAddress: "127.0.0.1" });
  expect(scrape(TOKEN)).toEqual({ ok: true });
  config.METRICS_TOKEN = `${TOKEN}-rotated`;
  expect(scrape(TOKEN)).toMatchObject({ ok: false, status: 401, reason: "token_invalid" });
  expect(scrape(`${TOKEN}-rotated`)).toEqual({ ok: true });
  config.METRICS_TOKEN = undefined;
  expect(gate.enabled).toBe(false);
  expect(scrape(TOKEN)).toMatchObject({ ok: false, status: 404 });
});

describe("source address", () => {
  const gate = createMetricsGate({ cidrs: cidrs("10.0.0.0/8, 2001:db8::/32, 192.0.2.7") });

  test.each([
    // [description, request, allowed]
    ["last XFF hop inside", { xForwardedFor: "198.51.100.1, 10.0.0.5" }, true],
    ["spoofed allowed first hop, real last hop outside", { xForwardedFor: "10.0.0.5, 198.51.100.1" }, false],
    ["spoofed allowed prefix hops", { xForwardedFor: "10.0.0.1,10.0.0.2, 203.0.113.4" }, false],
    ["XFF wins over X-Real-IP", { xForwardedFor: "198.51.100.1", xRealIp: "10.0.0.5" }, false],
    ["XFF wins over socket", { xForwardedFor: "198.51.100.1", socketAddress: "10.0.0.5" }, false],
    ["X-Real-IP when XFF absent", { xRealIp: "10.9.9.9", socketAddress: "198.51.100.1" }, true],
    ["X-Real-IP outside", { xRealIp: "198.51.100.1", socketAddress: "10.0.0.5" }, false],
    ["socket when both headers absent", { socketAddress: "10.0.0.5" }, true],
    ["socket outside", { socketAddress: "198.51.100.1" }, false],
    ["IPv4-mapped socket address folds to IPv4", { socketAddress: "::ffff:10.0.0.5" }, true],
    ["IPv4-mapped XFF hop folds to IPv4", { xForwardedFor: "::ffff:192.0.2.7" }, true],
    ["IPv4-mapped outside", { xForwardedFor: "::ffff:192.0.2.8" }, false],
    ["IPv6 inside range", { xForwardedFor: "2001:db8:1::42" }, true],
    ["IPv6 bracketed with port", { xForwardedFor: "[2001:db8::1]:443" }, true],
    ["IPv6 outside range", { xForwardedFor: "2001:db9::1" }, false],
    ["IPv4 with port", { xForwardedFor: "10.0.0.5:51234" }, true],
    ["single-address entry", { xRealIp: "192.0.2.7" }, true],
    ["neighbour of single-address entry", { xRealIp: "192.0.2.6" }, false],
    ["no address at all", {}, false],
  ])("%s", (_name, req, allowed) => {
    expect(gate.check(req).ok).toBe(allowed);
  });

  test("an IPv6 range does not match IPv4 addresses and vice versa", () => {
    const v6 = createMetricsGate({ cidrs: cidrs("::/0") });
    expect(v6.check({ socketAddress: "10.0.0.1" }).ok).toBe(false);
    expect(v6.check({ socketAddress: "::1" }).ok).toBe(true);
    const v4 = createMetricsGate({ cidrs: cidrs("0.0.0.0/0") });
    expect(v4.check({ socketAddress: "::1" }).ok).toBe(false);
    expect(v4.check({ socketAddress: "::ffff:127.0.0.1" }).ok).toBe(true);
  });

  test("an IPv4-mapped CIDR entry matches the plain IPv4 form", () => {
    const g = createMetricsGate({ cidrs: cidrs("::ffff:10.0.0.0/104") });
    expect(g.check({ xForwardedFor: "10.200.0.1" }).ok).toBe(true);
    expect(g.check({ xForwardedFor: "11.0.0.1" }).ok).toBe(false);
  });
});

describe("garbage headers are a clean deny, never a 500", () => {
  const hostile = [
    "",
    " ",
    ",",
    "10.0.0.5,",
    "unknown",
    "10.0.0.5, ",
    "10.0.0.256",
    "010.000.000.005",
    "0x0a.0.0.5",
    "10.1",
    "10.0.0.5/8",
    "10.0.0.5 10.0.0.6",
    "10.0.0.5;",
    "::ffff:999.0.0.1",
    "fe80::1%eth0",
    "[",
    "]:80",
    "%%%%",
    "1".repeat(10_000),
    `10.0.0.5${",10.0.0.5".repeat(1200)}`,
  ];

  // Values fetch's Headers refuses to carry, as Node's parser would hand them over (latin1 bytes), straight to the gate.
  test.each(["10.0.0.5\u0000", "\u00e2\u0080\u00ae10.0.0.5", "\u00f0\u009d\u009f\u008f0.0.0.5"])("raw header value %j", (value) => {
    const gate = createMetricsGate({ cidrs: cidrs("10.0.0.0/8") });
    expect(gate.check({ xForwardedFor: value, socketAddress: "10.0.0.5" }).ok).toBe(false);
    expect(gate.check({ xRealIp: value, socketAddress: "10.0.0.5" }).ok).toBe(false);
    const tokenGate = createMetricsGate({ token: TOKEN, cidrs: null });
    expect(tokenGate.check({ authorization: `Bearer ${TOKEN}${value}` }).ok).toBe(false);
  });

  test.each(hostile)("X-Forwarded-For %j", async (value) => {
    const { get } = appWith({ token: TOKEN, cidrs: "10.0.0.0/8" });
    const res = await get({ authorization: `Bearer ${TOKEN}`, "x-forwarded-for": value }, "10.0.0.5");
    expect(res.status).toBe(403);
  });

  test.each(hostile)("X-Real-IP %j", async (value) => {
    const { get } = appWith({ cidrs: "10.0.0.0/8" });
    const res = await get({ "x-real-ip": value }, "10.0.0.5");
    expect(res.status).toBe(403);
  });

  test.each([
    "",
    "Bearer",
    "Bearer ",
    `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}`,
    `Bearer ${TOKEN} extra`,
    `Bearer\t${TOKEN}`,
    `Token ${TOKEN}`,
    `${TOKEN}`,
    `Bearer ${TOKEN.slice(0, -1)}`,
    `Bearer ${TOKEN}${"x".repeat(10_000)}`,
    `Bearer ${"\u00e9".repeat(40)}`,
  ])("Authorization %j", async (value) => {
    const { get } = appWith({ token: TOKEN });
    const res = await get({ authorization: value });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  test("the scheme is case-insensitive", async () => {
    const { get } = appWith({ token: TOKEN });
    expect((await get({ authorization: `bearer ${TOKEN}` })).status).toBe(200);
    expect((await get({ authorization: `BEARER ${TOKEN}` })).status).toBe(200);
  });
});

describe("helpers", () => {
  test("bearerToken", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken(undefined)).toBeNull();
    expect(bearerToken("Bearer a b")).toBeNull();
  });
  test("sourceAddress takes the last XFF hop", () => {
    expect(sourceAddress({ xForwardedFor: "1.1.1.1, 2.2.2.2 ,3.3.3.3" })).toBe("3.3.3.3");
    expect(sourceAddress({ xForwardedFor: "1.1.1.1," })).toBeNull();
  });
});
