import { createHash, timingSafeEqual } from "node:crypto";
import { type CidrRange, addressInRanges } from "../net/cidr.ts";

/** What the gate looks at; every header is the raw value as received (or undefined when absent). */
export interface GateRequest {
  authorization?: string;
  xForwardedFor?: string;
  xRealIp?: string;
  /** The TCP peer address, used only when neither proxy header is present. */
  socketAddress?: string;
}

/** The gate's verdict: allowed, or the status to answer (404 disabled, 401 token, 403 address). */
export type GateVerdict =
  | { ok: true }
  | { ok: false; status: 404; reason: "disabled" }
  | { ok: false; status: 401; reason: "token_missing" | "token_invalid" }
  | { ok: false; status: 403; reason: "address_unknown" | "address_denied" };

/** Longest header value the gate will look at; longer values are a clean deny, not work. */
const MAX_HEADER_LENGTH = 8192;

/**
 * The /api/metrics gate (README, Metrics): neither setting → disabled (404); a token → a matching
 * `Authorization: Bearer`; CIDRs → the source address in the list; both → both (AND, never OR).
 */
export function createMetricsGate(opts: { token?: string | (() => string | undefined); cidrs: readonly CidrRange[] | null }) {
  // The token may be read on every scrape (a function over the live config, into which a token re-read from
  // Secrets Manager lands): its digest is recomputed only when the value changed.
  const tokenOf = typeof opts.token === "function" ? opts.token : () => opts.token as string | undefined;
  let digested: { token: string | undefined; digest: Buffer | null } | undefined;
  const currentDigest = (): Buffer | null => {
    const token = tokenOf();
    if (digested === undefined || digested.token !== token) digested = { token, digest: token ? digest(token) : null };
    return digested.digest;
  };
  const cidrs = opts.cidrs && opts.cidrs.length > 0 ? opts.cidrs : null;

  function check(req: GateRequest): GateVerdict {
    const tokenDigest = currentDigest();
    if (!tokenDigest && !cidrs) return { ok: false, status: 404, reason: "disabled" };
    // The address is checked first so a caller outside the list learns nothing about the token.
    if (cidrs) {
      const address = sourceAddress(req);
      if (address === null) return { ok: false, status: 403, reason: "address_unknown" };
      if (!addressInRanges(address, cidrs)) return { ok: false, status: 403, reason: "address_denied" };
    }
    if (tokenDigest) {
      const presented = bearerToken(req.authorization);
      if (presented === null) return { ok: false, status: 401, reason: "token_missing" };
      // Digests have equal length whatever was sent, so the comparison time says nothing about the token.
      if (!timingSafeEqual(digest(presented), tokenDigest)) return { ok: false, status: 401, reason: "token_invalid" };
    }
    return { ok: true };
  }

  return {
    check,
    get enabled() {
      return Boolean(currentDigest() || cidrs);
    },
  };
}

export type MetricsGate = ReturnType<typeof createMetricsGate>;

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** The token of an `Authorization: Bearer <token>` header; null when absent or of another shape. */
export function bearerToken(header: string | undefined): string | null {
  if (typeof header !== "string" || header.length > MAX_HEADER_LENGTH) return null;
  const m = /^[Bb][Ee][Aa][Rr][Ee][Rr] +([^\s]+) *$/.exec(header);
  return m ? m[1] : null;
}

/**
 * The request's source address: the last hop of X-Forwarded-For, else X-Real-IP, else
 * the socket's peer. Returns null when the header that decides is present but unusable (a clean deny).
 */
export function sourceAddress(req: GateRequest): string | null {
  if (req.xForwardedFor !== undefined) {
    if (req.xForwardedFor.length > MAX_HEADER_LENGTH) return null;
    // Only the last hop was written by our proxy; everything before it is whatever the client sent.
    const hops = req.xForwardedFor.split(",");
    return hopAddress(hops[hops.length - 1]);
  }
  if (req.xRealIp !== undefined) {
    if (req.xRealIp.length > MAX_HEADER_LENGTH) return null;
    return hopAddress(req.xRealIp);
  }
  return req.socketAddress ? hopAddress(req.socketAddress) : null;
}

/** One hop as an address text: trims, and strips an IPv4 `:port` that some proxies append. */
function hopAddress(hop: string): string | null {
  const s = hop.trim();
  if (s === "") return null;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(s);
  return v4WithPort ? v4WithPort[1] : s;
}
