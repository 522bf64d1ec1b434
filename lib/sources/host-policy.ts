import { lookup as dnsLookup } from "node:dns/promises";
import { networkInterfaces } from "node:os";
import ipaddr from "ipaddr.js";
import type { Config } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { parseAddress } from "../net/cidr.ts";
import { type HostListEntry, hostListHasAddress, hostListHasName, parseHostList } from "../net/host-list.ts";
import { canonicalHost } from "../net/host-name.ts";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Resolves a host name to every address it has (never called for an address literal). */
export type HostLookup = (name: string) => Promise<string[]>;

/** Where a source would connect: its host as stored, its port and database. */
export interface HostTarget {
  host: string;
  port: number;
  database: string;
}

/** A target that passed the policy: the connection goes to `address` (one of the checked ones), never to the name again. */
export interface CheckedTarget {
  address: string;
  /** Every address the host resolved to; each passed. */
  addresses: string[];
  /** The host as stored when it is a name: the TLS server name and certificate identity. Null for an address. */
  servername: string | null;
}

/**
 * Why a host is refused. `address_class`: it is or resolves to a loopback, link-local (cloud metadata included),
 * unspecified, multicast or broadcast address. `service_address`: it is the config store's server or one of the
 * service's own listeners, or the config database itself (refused whatever SOURCE_ALLOWED_HOSTS says).
 */
export type HostRefusal = "address_class" | "service_address";

/** Decides where a source may connect (docs/query-runner.md, Host policy). */
export interface HostPolicy {
  /**
   * Resolves the host once and checks every address. Throws AppError `source_host_refused` (422, field `host`)
   * or `source_unavailable` (cause `host_not_found`) when it does not resolve.
   */
  check(target: HostTarget): Promise<CheckedTarget>;
}

/** The config store's server and database, from DATABASE_URL. */
export interface ConfigStoreTarget {
  /** A name, an address, or a socket directory (starts with `/`: the server is on this machine). */
  host: string;
  port: number;
  database: string;
}

export interface HostPolicyOptions {
  /** SOURCE_ALLOWED_HOSTS entries: allowed past every refusal except the config database. */
  allowed: readonly HostListEntry[];
  configStore: ConfigStoreTarget | null;
  /** Ports the service itself listens on (PORT, STREAM_PORT): refused on this machine's addresses. */
  listenerPorts: readonly number[];
  lookup?: HostLookup;
  /** This machine's interface addresses; read from the OS on every check by default. */
  localAddresses?: () => string[];
}

/** Cloud instance metadata endpoints outside the link-local ranges (AWS IPv6; Alibaba Cloud). */
const METADATA = ["fd00:ec2::254", "100.100.100.200"].map((a) => ipaddr.parse(a).toNormalizedString());

const REFUSED_V4 = new Set(["unspecified", "broadcast", "multicast", "linkLocal", "loopback"]);
const REFUSED_V6 = new Set(["unspecified", "multicast", "linkLocal", "loopback"]);

/**
 * The IPv4 address an IPv6 address carries to an IPv4 host (NAT64 64:ff9b::/96, SIIT ::ffff:0:0:0/96, 6to4,
 * Teredo, IPv4-compatible ::/96), or null. A refused IPv4 address must stay refused in any of these wrappings.
 */
export function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = addr.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (addr.range()) {
    case "ipv4Mapped":
    case "rfc6052":
    case "rfc6145":
      return v4(p[6], p[7]);
    case "6to4":
      return v4(p[1], p[2]);
    case "teredo":
      return v4(p[6] ^ 0xffff, p[7] ^ 0xffff);
  }
  if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7] > 1)) return v4(p[6], p[7]);
  return null;
}

/** True for an address no source may reach unless allowed: loopback, link-local, metadata, unspecified, multicast, broadcast. */
export function isRefusedAddressClass(addr: Address): boolean {
  if (METADATA.includes(addr.toNormalizedString())) return true;
  if (addr.kind() === "ipv4") return REFUSED_V4.has(addr.range());
  if (REFUSED_V6.has(addr.range())) return true;
  const inner = embeddedIPv4(addr as ipaddr.IPv6);
  return inner !== null && isRefusedAddressClass(inner);
}

/** The config store's server and database from a DATABASE_URL; null when it does not parse as a URL. */
export function configStoreTarget(databaseUrl: string): ConfigStoreTarget | null {
  let u: URL;
  try {
    u = new URL(databaseUrl);
  } catch {
    return null;
  }
  const hostParam = u.searchParams.get("host");
  const host = hostParam || decodeURIComponent(u.hostname).replace(/^\[(.*)\]$/, "$1") || "localhost";
  const portParam = u.searchParams.get("port");
  const port = Number(portParam || u.port || 5432);
  // libpq's default database is the user name.
  const database = decodeURIComponent(u.pathname.slice(1)) || u.searchParams.get("dbname") || decodeURIComponent(u.username);
  return { host, port: Number.isInteger(port) ? port : 5432, database };
}

/** The policy an entry point builds from config: SOURCE_ALLOWED_HOSTS, DATABASE_URL, PORT and STREAM_PORT. */
export function hostPolicyFromConfig(
  config: Pick<Config, "SOURCE_ALLOWED_HOSTS" | "DATABASE_URL" | "PORT" | "STREAM_PORT">,
  overrides: Pick<HostPolicyOptions, "lookup" | "localAddresses"> = {},
): HostPolicy {
  const { entries, invalid } = parseHostList(config.SOURCE_ALLOWED_HOSTS ?? "");
  // parseConfig already refused a bad list; a hand-built config must not silently allow less or more.
  if (invalid.length > 0) throw new Error(`SOURCE_ALLOWED_HOSTS has entries that do not parse (${invalid.length})`);
  return createHostPolicy({
    allowed: entries,
    configStore: config.DATABASE_URL ? configStoreTarget(config.DATABASE_URL) : null,
    listenerPorts: [config.PORT, config.STREAM_PORT],
    ...overrides,
  });
}

async function systemLookup(name: string): Promise<string[]> {
  const answers = await dnsLookup(name, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

function systemLocalAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

function refused(reason: HostRefusal): AppError {
  const why =
    reason === "address_class"
      ? "it is, or resolves to, a loopback, link-local (cloud metadata), unspecified, multicast or broadcast address"
      : "it is the service's own config store or one of its own listeners";
  const message = `not allowed: ${why}`;
  // Neither the host nor what it resolved to is named: the answer must not become a map of the network.
  return new AppError(
    "source_host_refused",
    `The source's host is not allowed: ${why}. An operator can allow a host with SOURCE_ALLOWED_HOSTS.`,
    { field: "host", reason, issues: [{ path: "host", message }] },
  );
}

/** Builds a policy. Every check resolves the host once; the caller connects to the returned address. */
export function createHostPolicy(opts: HostPolicyOptions): HostPolicy {
  const lookup = opts.lookup ?? systemLookup;
  const localAddresses = opts.localAddresses ?? systemLocalAddresses;
  const { allowed, configStore, listenerPorts } = opts;

  async function resolve(host: string): Promise<Address[]> {
    const literal = parseAddress(host);
    if (literal) return [literal];
    let answers: string[];
    try {
      answers = await lookup(host);
    } catch {
      answers = [];
    }
    const parsed = answers.map((a) => parseAddress(a)).filter((a): a is Address => a !== null);
    if (parsed.length === 0 || parsed.length !== answers.length) {
      throw new AppError("source_unavailable", "The source is unavailable (host_not_found).", { cause: "host_not_found" });
    }
    return parsed;
  }

  return {
    async check(target) {
      const c = canonicalHost(target.host);
      if (!c) {
        throw new AppError("validation_failed", "Invalid source: host must be a host name or IP address", {
          issues: [{ path: "host", message: "must be a host name or IP address" }],
        });
      }
      const addresses = await resolve(c.host);
      const local = new Set(
        localAddresses()
          .map((a) => parseAddress(a)?.toNormalizedString())
          .filter((a): a is string => a !== undefined),
      );
      const isLocal = (a: Address) => local.has(a.toNormalizedString()) || a.range() === "loopback" || a.range() === "unspecified";

      // The config store's server: its own name, its addresses, or (when it runs on this machine) any local address.
      let storeAddresses: Address[] = [];
      let storeLocal = false;
      if (configStore) {
        if (configStore.host.startsWith("/")) storeLocal = true;
        else {
          const sc = canonicalHost(configStore.host);
          storeAddresses = sc ? await resolve(sc.host).catch(() => []) : [];
          storeLocal = storeAddresses.some(isLocal);
        }
      }
      const storeName = configStore && !configStore.host.startsWith("/") ? canonicalHost(configStore.host) : null;
      const onStoreServer = (a: Address) =>
        configStore !== null &&
        target.port === configStore.port &&
        ((!c.address && storeName?.host === c.host) ||
          storeAddresses.some((s) => s.toNormalizedString() === a.toNormalizedString()) ||
          (storeLocal && isLocal(a)));

      const nameAllowed = !c.address && hostListHasName(allowed, c.host, target.port);
      for (const a of addresses) {
        const storeServer = onStoreServer(a);
        // Never a source, whatever is allowed: editors would run queries inside the service's own database.
        if (storeServer && target.database === configStore?.database) throw refused("service_address");
        if (nameAllowed || hostListHasAddress(allowed, a, target.port)) continue;
        if (isRefusedAddressClass(a)) throw refused("address_class");
        if (storeServer || (isLocal(a) && listenerPorts.includes(target.port))) throw refused("service_address");
      }
      const first = addresses[0] as Address;
      return {
        address: first.toString(),
        addresses: addresses.map((a) => a.toString()),
        servername: c.address ? null : c.host,
      };
    },
  };
}
