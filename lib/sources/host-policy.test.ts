import { describe, expect, test } from "vitest";
import { parseConfig } from "../config/parse.ts";
import type { AppError } from "../http/errors.ts";
import { parseHostList } from "../net/host-list.ts";
import { rejection } from "../testing/rejection.ts";
import {
  type HostPolicyOptions,
  configStoreTarget,
  createHostPolicy,
  embeddedIPv4,
  hostPolicyFromConfig,
  isRefusedAddressClass,
} from "./host-policy.ts";
import ipaddr from "ipaddr.js";
import { tableResolver } from "../net/testing/table-resolver.ts";

const DNS = tableResolver({
  "db.example.com": ["203.0.113.10"],
  localhost: ["127.0.0.1", "::1"],
  "metadata.attacker.example": ["169.254.169.254"],
  "mixed.attacker.example": ["203.0.113.11", "127.0.0.1"],
  "cfg.internal": ["10.0.0.5"],
  "cfg-alias.internal": ["10.0.0.5"],
  "v6.example.com": ["2001:db8::10"],
});

/** The machine's own interface addresses, as os.networkInterfaces() would list them. */
const LOCAL = ["127.0.0.1", "::1", "10.1.2.3"];

function policy(overrides: Partial<HostPolicyOptions> = {}) {
  return createHostPolicy({
    allowed: [],
    configStore: { host: "cfg.internal", port: 5432, database: "pulseboard" },
    listenerPorts: [8080, 8081],
    lookup: DNS.lookup,
    localAddresses: () => LOCAL,
    ...overrides,
  });
}

const allow = (list: string) => parseHostList(list).entries;

async function refusal(p: ReturnType<typeof policy>, host: string, port = 5432, database = "metrics"): Promise<AppError> {
  return rejection(p.check({ host, port, database }));
}

describe("refused address classes", () => {
  test.each([
    ["127.0.0.1", "loopback"],
    ["127.9.9.9", "loopback (all of 127/8)"],
    ["::1", "IPv6 loopback"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
    ["localhost", "a name resolving to loopback"],
    ["169.254.169.254", "the cloud metadata address"],
    ["169.254.0.1", "IPv4 link-local"],
    ["fd00:ec2::254", "the AWS IPv6 metadata address"],
    ["fe80::1", "IPv6 link-local"],
    ["64:ff9b::a9fe:a9fe", "metadata through NAT64"],
    ["2002:a9fe:a9fe::1", "metadata through 6to4"],
    ["::7f00:1", "IPv4-compatible loopback"],
    ["metadata.attacker.example", "a name resolving to the metadata address"],
    ["mixed.attacker.example", "a name with one public and one loopback address"],
    ["0.0.0.0", "unspecified"],
    ["::", "IPv6 unspecified"],
    ["255.255.255.255", "broadcast"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "IPv6 multicast"],
  ])("%s (%s) is a 422 naming the host field, without echoing the host", async (host) => {
    const err = await refusal(policy(), host);
    expect(err.code).toBe("source_host_refused");
    expect(err.status).toBe(422);
    expect(err.extra).toMatchObject({ field: "host", reason: "address_class" });
    expect(err.detail).not.toContain(host);
    expect(err.detail).toContain("SOURCE_ALLOWED_HOSTS");
  });

  test("embedded IPv4 addresses are found in every IPv6 wrapping", () => {
    const inner = (a: string) => embeddedIPv4(ipaddr.parse(a) as ipaddr.IPv6)?.toString() ?? null;
    expect(inner("64:ff9b::a9fe:a9fe")).toBe("169.254.169.254");
    expect(inner("2002:7f00:1::")).toBe("127.0.0.1");
    expect(inner("2001:0:4136:e378:8000:63bf:80ff:fffe")).toBe("127.0.0.1");
    expect(inner("::ffff:0:a9fe:a9fe")).toBe("169.254.169.254");
    expect(inner("2001:db8::1")).toBeNull();
    expect(isRefusedAddressClass(ipaddr.parse("10.0.0.1"))).toBe(false);
    expect(isRefusedAddressClass(ipaddr.parse("100.100.100.200"))).toBe(true);
  });
});

describe("the service's own addresses", () => {
  test("the config store's server (by its name, an alias or its address, same port) is refused", async () => {
    const p = policy();
    for (const host of ["cfg.internal", "CFG.internal.", "cfg-alias.internal", "10.0.0.5"]) {
      const err = await refusal(p, host);
      expect(err.code).toBe("source_host_refused");
      expect(err.extra).toMatchObject({ field: "host", reason: "service_address" });
    }
    // Another port on that machine is another server.
    await expect(p.check({ host: "10.0.0.5", port: 6432, database: "metrics" })).resolves.toMatchObject({ address: "10.0.0.5" });
  });

  test("the service's own listeners (PORT, STREAM_PORT) on this machine's interface addresses are refused", async () => {
    for (const port of [8080, 8081]) {
      expect((await refusal(policy(), "10.1.2.3", port)).extra).toMatchObject({ reason: "service_address" });
    }
    // The same port on another machine is fine; so is another port here.
    await expect(policy().check({ host: "10.9.9.9", port: 8080, database: "m" })).resolves.toBeTruthy();
    await expect(policy().check({ host: "10.1.2.3", port: 5432, database: "m" })).resolves.toBeTruthy();
  });

  test("a config store on this machine makes every local address with its port the config store", async () => {
    const p = policy({ configStore: { host: "localhost", port: 5433, database: "pulseboard" } });
    expect((await refusal(p, "10.1.2.3", 5433)).extra).toMatchObject({ reason: "service_address" });
    await expect(p.check({ host: "10.1.2.3", port: 5434, database: "m" })).resolves.toBeTruthy();
  });

  test("DATABASE_URL gives the config store's server and database", () => {
    expect(configStoreTarget("postgres://u:p@cfg.internal:6543/pulse%20board")).toEqual({
      host: "cfg.internal",
      port: 6543,
      database: "pulse board",
    });
    expect(configStoreTarget("postgres://u@[::1]/cfg")).toEqual({ host: "::1", port: 5432, database: "cfg" });
    expect(configStoreTarget("postgres://app@db/?host=/var/run/postgresql")).toEqual({
      host: "/var/run/postgresql",
      port: 5432,
      database: "app",
    });
  });
});

describe("SOURCE_ALLOWED_HOSTS", () => {
  test("an address, a CIDR range or a name allows what it names; a port limits it to that port", async () => {
    await expect(policy({ allowed: allow("127.0.0.1") }).check({ host: "127.0.0.1", port: 5432, database: "m" })).resolves.toEqual({
      address: "127.0.0.1",
      addresses: ["127.0.0.1"],
      servername: null,
    });
    await expect(policy({ allowed: allow("127.0.0.0/8") }).check({ host: "127.9.9.9", port: 1, database: "m" })).resolves.toBeTruthy();
    await expect(policy({ allowed: allow("localhost") }).check({ host: "localhost", port: 5432, database: "m" })).resolves.toMatchObject({
      address: "127.0.0.1",
      servername: "localhost",
    });
    const portOnly = policy({ allowed: allow("127.0.0.1:5433") });
    await expect(portOnly.check({ host: "127.0.0.1", port: 5433, database: "m" })).resolves.toBeTruthy();
    expect((await refusal(portOnly, "127.0.0.1", 8080)).code).toBe("source_host_refused");
    // A name entry allows that name, not every name resolving to the same place.
    expect((await refusal(policy({ allowed: allow("localhost") }), "127.0.0.1")).code).toBe("source_host_refused");
  });

  test("allowing the config store's server allows its other databases, never the config database itself", async () => {
    const p = policy({ allowed: allow("10.0.0.5, cfg.internal") });
    await expect(p.check({ host: "cfg.internal", port: 5432, database: "metrics" })).resolves.toBeTruthy();
    for (const host of ["cfg.internal", "10.0.0.5", "cfg-alias.internal"]) {
      const err = await refusal(p, host, 5432, "pulseboard");
      expect(err.code).toBe("source_host_refused");
      expect(err.extra).toMatchObject({ field: "host", reason: "service_address" });
    }
  });

  test("a local config store's database stays refused whatever local address names it", async () => {
    const p = policy({
      configStore: { host: "127.0.0.1", port: 5433, database: "pulseboard" },
      allowed: allow("127.0.0.0/8, ::1, 10.1.2.3"),
    });
    for (const host of ["127.0.0.1", "127.0.0.2", "::1", "10.1.2.3", "localhost"]) {
      expect((await refusal(p, host, 5433, "pulseboard")).extra).toMatchObject({ reason: "service_address" });
    }
    await expect(p.check({ host: "127.0.0.1", port: 5433, database: "metrics" })).resolves.toBeTruthy();
  });

  test("built from config: SOURCE_ALLOWED_HOSTS, DATABASE_URL, PORT and STREAM_PORT", async () => {
    const { config } = parseConfig({
      DATABASE_URL: "postgres://u:p@127.0.0.1:5433/pulseboard",
      SOURCE_ALLOWED_HOSTS: "127.0.0.1:5433",
      PORT: "3000",
    });
    const p = hostPolicyFromConfig(config, { lookup: DNS.lookup, localAddresses: () => LOCAL });
    await expect(p.check({ host: "127.0.0.1", port: 5433, database: "metrics" })).resolves.toBeTruthy();
    expect((await refusal(p, "127.0.0.1", 5433, "pulseboard")).extra).toMatchObject({ reason: "service_address" });
    expect((await refusal(p, "127.0.0.1", 3000)).code).toBe("source_host_refused");
    expect((await refusal(p, "10.1.2.3", 3000)).extra).toMatchObject({ reason: "service_address" });
    expect((await refusal(p, "10.1.2.3", 8081)).extra).toMatchObject({ reason: "service_address" });
  });
});

describe("resolution", () => {
  test("a public name passes with every address it has; the connection goes to the first, the name stays the TLS name", async () => {
    await expect(policy().check({ host: "db.example.com", port: 5432, database: "m" })).resolves.toEqual({
      address: "203.0.113.10",
      addresses: ["203.0.113.10"],
      servername: "db.example.com",
    });
    await expect(policy().check({ host: "v6.example.com", port: 5432, database: "m" })).resolves.toMatchObject({
      address: "2001:db8::10",
    });
  });

  test("an address literal is never looked up; a name is looked up once per check", async () => {
    const dns = tableResolver({ "db.example.com": ["203.0.113.10"], "cfg.internal": ["10.0.0.5"] });
    const p = policy({ lookup: dns.lookup });
    await p.check({ host: "203.0.113.7", port: 5432, database: "m" });
    expect(dns.asked.filter((n) => n !== "cfg.internal")).toEqual([]);
    await p.check({ host: "db.example.com", port: 5432, database: "m" });
    expect(dns.asked.filter((n) => n === "db.example.com")).toEqual(["db.example.com"]);
  });

  test("a name that does not resolve is source_unavailable (host_not_found), naming no host", async () => {
    const err = await refusal(policy(), "nowhere.example.com");
    expect(err.code).toBe("source_unavailable");
    expect(err.extra).toEqual({ cause: "host_not_found" });
    expect(err.detail).not.toContain("nowhere");
  });
});
