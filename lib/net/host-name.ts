import { parseAddress } from "./cidr.ts";

/** A DNS name: letters, digits, `-` and `_` labels; the last label starts with a letter (so "10.1" or "0x7f.1" is not a name). */
const HOST_NAME = /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * The canonical form a host is compared in: an IP address in full normalized form (IPv4-mapped IPv6 folded to
 * IPv4), else the name in lower case without a trailing dot. Null when it is neither an address nor a valid name.
 */
export function canonicalHost(text: string): { host: string; address: boolean } | null {
  const addr = parseAddress(text);
  if (addr) return { host: addr.toNormalizedString(), address: true };
  const name = text.trim().toLowerCase().replace(/\.$/, "");
  return HOST_NAME.test(name) ? { host: name, address: false } : null;
}

/** True when canonical name `host` matches `pattern`: the same name, or for `*.suffix` a name ending in `.suffix`. */
export function nameMatches(pattern: string, host: string): boolean {
  return pattern.startsWith("*.") ? host.length > pattern.length - 1 && host.endsWith(pattern.slice(1)) : pattern === host;
}
