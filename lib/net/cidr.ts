import ipaddr from "ipaddr.js";

/** One allowed range, already folded so an IPv4-mapped IPv6 entry is stored as IPv4. */
export type CidrRange = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses an address, folding IPv4-mapped IPv6 (`::ffff:10.0.0.1`) to IPv4. Returns null when it does not parse. */
export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  let s = text.trim();
  // Bracketed IPv6 with or without a port ("[::1]:443") and zone ids are stripped; anything else must be a bare address.
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracket) s = bracket[1];
  if (!ipaddr.isValid(s)) return null;
  // ipaddr.isValid accepts legacy forms such as "10.1" or "0x0a.1.1.1"; only dotted-quad IPv4 is an address here.
  if (!s.includes(":") && !ipaddr.IPv4.isValidFourPartDecimal(s)) return null;
  const addr = ipaddr.parse(s);
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (addr as ipaddr.IPv6).toIPv4Address();
  }
  return addr;
}

/** Parses one CIDR or bare-address entry; null when it does not parse. */
export function parseCidrEntry(entry: string): CidrRange | null {
  const slash = entry.indexOf("/");
  if (slash === -1) {
    const addr = parseAddress(entry);
    if (!addr) return null;
    return [addr, addr.kind() === "ipv4" ? 32 : 128];
  }
  const addrText = entry.slice(0, slash);
  const prefixText = entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  let prefix = Number(prefixText);
  if (addrText.includes(":") === false && !ipaddr.IPv4.isValidFourPartDecimal(addrText)) return null;
  if (!ipaddr.isValid(addrText)) return null;
  let addr = ipaddr.parse(addrText);
  if (addr.kind() === "ipv4" && prefix > 32) return null;
  if (addr.kind() === "ipv6" && prefix > 128) return null;
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    addr = (addr as ipaddr.IPv6).toIPv4Address();
    prefix -= 96;
  }
  return [addr, prefix];
}

/** Splits a comma- or space-separated list; returns the ranges and every entry that did not parse. */
export function parseCidrList(text: string): { ranges: CidrRange[]; invalid: string[] } {
  const ranges: CidrRange[] = [];
  const invalid: string[] = [];
  for (const entry of text.split(/[\s,]+/).filter(Boolean)) {
    const range = parseCidrEntry(entry);
    if (range) ranges.push(range);
    else invalid.push(entry);
  }
  return { ranges, invalid };
}

/** True when the address text parses and lies in one of the ranges. */
export function addressInRanges(address: string, ranges: readonly CidrRange[]): boolean {
  const addr = parseAddress(address);
  if (!addr) return false;
  return ranges.some(([range, prefix]) => range.kind() === addr.kind() && addr.match(range, prefix));
}
