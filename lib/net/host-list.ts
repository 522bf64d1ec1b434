import type ipaddr from "ipaddr.js";
import { type CidrRange, parseAddress, parseCidrEntry } from "./cidr.ts";
import { canonicalHost, nameMatches } from "./host-name.ts";

/**
 * One entry of a host list such as SOURCE_ALLOWED_HOSTS: an address range (a bare address is a /32 or /128), or a
 * host name (`db.internal`, or `*.suffix` for any name ending in `.suffix`), each optionally limited to one port.
 */
export type HostListEntry =
  | { kind: "range"; range: CidrRange; port: number | null }
  | { kind: "name"; pattern: string; port: number | null };

function parsePort(text: string): number | null {
  if (!/^\d{1,5}$/.test(text)) return null;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : null;
}

function parseTarget(text: string, port: number | null): HostListEntry | null {
  if (/^[0-9a-fA-F:.]+(?:\/\d{1,3})?$/.test(text) && (text.includes(":") || /^[\d./]+$/.test(text))) {
    const range = parseCidrEntry(text);
    return range ? { kind: "range", range, port } : null;
  }
  const wildcard = text.startsWith("*.");
  const c = canonicalHost(wildcard ? text.slice(2) : text);
  if (!c || (wildcard && c.address)) return null;
  if (c.address) {
    const range = parseCidrEntry(c.host);
    return range ? { kind: "range", range, port } : null;
  }
  return { kind: "name", pattern: wildcard ? `*.${c.host}` : c.host, port };
}

/**
 * Splits an entry's optional port off: `db.internal:5432`, `10.0.0.5:5432`, `[2001:db8::1]:5432` (an IPv6 address
 * with a port is bracketed), or no port (`db.internal`, `[::1]`, or a bare IPv6 address such as `2001:db8::1`). Null
 * when the port is not 1-65535 or the brackets hold no IPv6 text. The target is returned as written.
 */
export function splitHostPort(entry: string): { target: string; port: number | null } | null {
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracket) {
    const port = bracket[2] === undefined ? null : parsePort(bracket[2]);
    if (bracket[2] !== undefined && port === null) return null;
    return bracket[1].includes(":") ? { target: bracket[1], port } : null;
  }
  const colons = entry.split(":").length - 1;
  if (colons === 1) {
    const [target, portText] = entry.split(":");
    const port = parsePort(portText);
    return port === null || !target ? null : { target, port };
  }
  return { target: entry, port: null };
}

/**
 * Parses one entry: `10.0.0.0/8`, `10.0.0.5`, `2001:db8::/32`, `db.internal`, `*.rds.amazonaws.com`, with an optional
 * port as `127.0.0.1:5432`, `db.internal:5432` or `[::1]:5432` / `[fd00::/8]:5432`. Null when it does not parse.
 */
export function parseHostListEntry(entry: string): HostListEntry | null {
  const split = splitHostPort(entry);
  return split ? parseTarget(split.target, split.port) : null;
}

/** Splits a comma- or space-separated list; returns the entries and every entry that did not parse. */
export function parseHostList(text: string): { entries: HostListEntry[]; invalid: string[] } {
  const entries: HostListEntry[] = [];
  const invalid: string[] = [];
  for (const item of text.split(/[\s,]+/).filter(Boolean)) {
    const entry = parseHostListEntry(item);
    if (entry) entries.push(entry);
    else invalid.push(item);
  }
  return { entries, invalid };
}

/** True when an entry names the canonical host name `name` (from canonicalHost) on `port`. */
export function hostListHasName(entries: readonly HostListEntry[], name: string, port: number): boolean {
  return entries.some((e) => e.kind === "name" && (e.port === null || e.port === port) && nameMatches(e.pattern, name));
}

/** True when an entry's range holds `address` (IPv4-mapped IPv6 folded to IPv4) on `port`. */
export function hostListHasAddress(entries: readonly HostListEntry[], address: ipaddr.IPv4 | ipaddr.IPv6 | string, port: number): boolean {
  const addr = typeof address === "string" ? parseAddress(address) : address;
  if (!addr) return false;
  return entries.some(
    (e) =>
      e.kind === "range" && (e.port === null || e.port === port) && e.range[0].kind() === addr.kind() && addr.match(e.range[0], e.range[1]),
  );
}
