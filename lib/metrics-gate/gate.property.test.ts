import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { parseCidrList } from "../net/cidr.ts";
import { type GateRequest, createMetricsGate } from "./gate.ts";

const TOKEN = "s3cret-metrics-token-0123456789";
const ranges = (text: string) => parseCidrList(text).ranges;

// Arbitrary header values, including control characters, huge strings and unicode.
const headerValue = fc.option(
  fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: "binary", maxLength: 200 }), fc.string({ maxLength: 10_000 })),
  {
    nil: undefined,
  },
);
const request = fc.record<GateRequest>({
  authorization: headerValue,
  xForwardedFor: headerValue,
  xRealIp: headerValue,
  socketAddress: headerValue,
});
const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join("."));

describe("metrics gate properties", () => {
  test.each([
    ["disabled", undefined, null],
    ["token", TOKEN, null],
    ["cidrs", undefined, "10.0.0.0/8 2001:db8::/32"],
    ["both", TOKEN, "10.0.0.0/8"],
  ] as const)("%s: any headers give a verdict, never a throw, and only the gate's statuses", (_n, token, cidrs) => {
    const gate = createMetricsGate({ token, cidrs: cidrs ? ranges(cidrs) : null });
    fc.assert(
      fc.property(request, (req) => {
        const v = gate.check(req);
        if (v.ok) return;
        expect([404, 401, 403]).toContain(v.status);
        if (!token && !cidrs) expect(v.status).toBe(404);
      }),
      { numRuns: 500 },
    );
  });

  test("token only: nothing but the exact bearer token passes", () => {
    const gate = createMetricsGate({ token: TOKEN, cidrs: null });
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (presented) => {
        fc.pre(presented !== TOKEN);
        expect(gate.check({ authorization: `Bearer ${presented}` }).ok).toBe(false);
        expect(gate.check({ authorization: presented }).ok).toBe(false);
      }),
    );
    expect(gate.check({ authorization: `Bearer ${TOKEN}` }).ok).toBe(true);
  });

  test("CIDRs: the last X-Forwarded-For hop alone decides, whatever the client prepended", () => {
    const gate = createMetricsGate({ cidrs: ranges("10.0.0.0/8"), token: undefined });
    fc.assert(
      fc.property(fc.array(fc.oneof(ipv4, fc.string({ maxLength: 30 })), { maxLength: 5 }), ipv4, (spoofed, last) => {
        const inRange = last.startsWith("10.");
        const xff = [...spoofed, last].join(", ");
        expect(gate.check({ xForwardedFor: xff, socketAddress: "10.1.1.1" }).ok).toBe(inRange);
        // The IPv4-mapped IPv6 form of the same hop gets the same answer.
        expect(gate.check({ xForwardedFor: [...spoofed, `::ffff:${last}`].join(", ") }).ok).toBe(inRange);
      }),
      { numRuns: 500 },
    );
  });

  test("both set: allowed only with an allowed address AND the token (never OR)", () => {
    const gate = createMetricsGate({ token: TOKEN, cidrs: ranges("192.168.0.0/16") });
    fc.assert(
      fc.property(ipv4, fc.boolean(), (addr, rightToken) => {
        const ok = gate.check({ xRealIp: addr, authorization: `Bearer ${rightToken ? TOKEN : `${TOKEN}x`}` }).ok;
        expect(ok).toBe(addr.startsWith("192.168.") && rightToken);
      }),
      { numRuns: 500 },
    );
  });
});
