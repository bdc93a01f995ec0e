import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import ipaddr from "ipaddr.js";

/**
 * SSRF protection for webhook targets (docs/api.md Webhooks): an endpoint may not make this service
 * call into its own network. Only global unicast addresses are allowed, judged by `ipaddr.js`'s
 * special-purpose ranges (the IANA registries) rather than a hand-kept list; an IPv6 address that
 * carries an IPv4 address is judged by that IPv4 address too, and the host's own interface
 * addresses are refused whatever their range (a receiver listening on 0.0.0.0 answers on them).
 * The check runs when an endpoint is created or changed, and again at connect time for every send
 * (send.ts): on each address DNS gives the connection, and on the address the socket reached.
 */

/** A DNS lookup that takes longer than this refuses the target: a creation request or a send must not hang on it. */
export const DNS_TIMEOUT_MS = 5000;
/** How long the host's own interface addresses are reused before being read again. */
const OWN_ADDRESSES_TTL_MS = 10_000;

/** Why a target is refused; the message is safe to return to the operator. */
export class RefusedTarget extends Error {
  /**
   * @param forAddress true when refused for where it points (a private or reserved address),
   * which WEBHOOK_ALLOW_PRIVATE_URLS lifts; false for a malformed URL or a name that does not resolve.
   */
  constructor(
    message: string,
    readonly forAddress = false,
  ) {
    super(message);
    this.name = "RefusedTarget";
  }
}

export interface ResolvedTarget {
  url: URL;
  /** The checked address the request connects to. */
  address: string;
  family: 4 | 6;
}

/** IPv6 ranges whose addresses carry an IPv4 address: refused outright, but named with the address they carry. */
const TUNNEL_V6_RANGES: ReadonlySet<string> = new Set(["6to4", "teredo", "rfc6145"]);
/** 64:ff9b::/96 (RFC 6052): public IPv4 hosts seen through NAT64; judged by the IPv4 address in its last 32 bits. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");
/** 2000::/3: the only IPv6 block IANA allocates global unicast addresses from. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");
/** ::/96 (IPv4-compatible, deprecated by RFC 4291): `::127.0.0.1` reaches 127.0.0.1 on some stacks. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR("::/96");

let ownAddresses: { atMs: number; addresses: ReadonlySet<string> } | null = null;

/** The addresses of this host's interfaces, normalized (IPv4 dotted, IPv6 canonical, no zone). */
export function hostAddresses(): ReadonlySet<string> {
  const nowMs = Date.now();
  if (ownAddresses === null || nowMs - ownAddresses.atMs > OWN_ADDRESSES_TTL_MS) {
    const addresses = new Set<string>();
    for (const entries of Object.values(networkInterfaces())) {
      for (const entry of entries ?? []) {
        const text = entry.address.split("%")[0]!;
        if (ipaddr.isValid(text)) addresses.add(ipaddr.process(text).toString());
      }
    }
    ownAddresses = { atMs: nowMs, addresses };
  }
  return ownAddresses.addresses;
}

function embeddedV4(address: ipaddr.IPv6, fromByte: number): ipaddr.IPv4 {
  return new ipaddr.IPv4(address.toByteArray().slice(fromByte, fromByte + 4));
}

function refusedV4(address: ipaddr.IPv4, own: ReadonlySet<string>): string | null {
  const range = address.range();
  if (range !== "unicast") return `${address.toString()} is not a global unicast address (${range})`;
  if (own.has(address.toString())) return `${address.toString()} is an address of this host`;
  return null;
}

function refusedV6(address: ipaddr.IPv6, own: ReadonlySet<string>): string | null {
  const text = address.toString();
  const range = address.range();
  if (range === "ipv4Mapped") {
    const reason = refusedV4(address.toIPv4Address(), own);
    return reason === null ? null : `${text} carries ${reason}`;
  }
  if (address.match(NAT64_WELL_KNOWN)) {
    const reason = refusedV4(embeddedV4(address, 12), own);
    return reason === null ? null : `${text} (NAT64) carries ${reason}`;
  }
  if (TUNNEL_V6_RANGES.has(range)) {
    // 6to4 carries its IPv4 address in bytes 2–5, Teredo its server's in bytes 4–7: named so the operator sees it.
    const carried = range === "6to4" ? embeddedV4(address, 2) : range === "teredo" ? embeddedV4(address, 4) : embeddedV4(address, 12);
    return `${text} is a ${range} tunnel address (carrying ${carried.toString()}), not a global unicast address`;
  }
  if (address.match(IPV4_COMPATIBLE)) return `${text} is an IPv4-compatible address (${embeddedV4(address, 12).toString()})`;
  if (range !== "unicast" || !address.match(GLOBAL_UNICAST_V6)) {
    return `${text} is not a global unicast address (${range === "unicast" ? "outside 2000::/3" : range})`;
  }
  if (own.has(text)) return `${text} is an address of this host`;
  return null;
}

/**
 * An IPv6 text with a dotted IPv4 tail rewritten to two hex groups. ipaddr.js 2.5 parses any
 * `::a.b.c.d` as IPv4-mapped (::ffff:a.b.c.d), so the IPv4-compatible `::8.8.8.8` (which glibc
 * prints that way) would pass as a mapped public address; in hex it is judged for what it is.
 */
function withHexTail(text: string): string {
  const dotted = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!dotted) return text;
  const [high, low] = [Number(dotted[2]) * 256 + Number(dotted[3]), Number(dotted[4]) * 256 + Number(dotted[5])];
  return `${dotted[1]!}${high.toString(16)}:${low.toString(16)}`;
}

/**
 * Why `address` (an IP literal, IPv6 without brackets, with or without a zone) may not be a
 * webhook target, or null when it may. `own`: this host's addresses (hostAddresses()).
 */
export function refusedAddressReason(address: string, own: ReadonlySet<string> = hostAddresses()): string | null {
  const bare = address.split("%")[0]!;
  const family = isIP(bare);
  const text = family === 6 ? withHexTail(bare) : bare;
  if (family === 0 || !ipaddr.isValid(text)) return `${address} is not an IP address`;
  const parsed = ipaddr.parse(text);
  return parsed.kind() === "ipv4" ? refusedV4(parsed as ipaddr.IPv4, own) : refusedV6(parsed as ipaddr.IPv6, own);
}

/** Throws RefusedTarget (forAddress) unless `address` may be connected to. */
export function assertAllowedAddress(address: string, hostname: string): void {
  const reason = refusedAddressReason(address);
  if (reason === null) return;
  const literal = hostname.replace(/^\[|\]$/g, "") === address;
  throw new RefusedTarget(literal ? reason : `${hostname} resolves to a refused address (${reason})`, true);
}

/** `url` parsed, with http(s) required; anything else is refused with a reason. */
export function parseTargetUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RefusedTarget("is not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new RefusedTarget("must be an http:// or https:// URL");
  if (url.username !== "" || url.password !== "") throw new RefusedTarget("must not carry a user name or password");
  return url;
}

/** The URL's hostname as an IP literal (brackets of IPv6 removed), or null for a name. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? null : host;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses (the operating system's resolver by default; tests map names). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** `resolver(hostname)` bounded by DNS_TIMEOUT_MS, with every failure a RefusedTarget. */
export async function resolveAll(hostname: string, resolver: Resolver = systemResolver): Promise<ResolvedAddress[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RefusedTarget(`${hostname} did not resolve within ${DNS_TIMEOUT_MS} ms`)), DNS_TIMEOUT_MS);
  });
  try {
    const addresses = await Promise.race([resolver(hostname), timeout]);
    if (addresses.length === 0) throw new RefusedTarget(`${hostname} resolves to no address`);
    return addresses;
  } catch (error) {
    if (error instanceof RefusedTarget) throw error;
    throw new RefusedTarget(`${hostname} does not resolve (${(error as NodeJS.ErrnoException).code ?? "lookup failed"})`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves the target of `text` and checks every address it resolves to (one refused address
 * refuses the target: a name that also points inward is not safe to call). With allowPrivate
 * nothing is refused for its range. Returns the first address. Used when an endpoint is created
 * or changed; a send checks again at connect time (send.ts), so a later DNS change cannot slip by.
 */
export async function resolveTarget(text: string, allowPrivate: boolean, resolver: Resolver = systemResolver): Promise<ResolvedTarget> {
  const url = parseTargetUrl(text);
  const literal = literalAddress(url);
  const addresses = literal !== null ? [{ address: literal, family: isIP(literal) }] : await resolveAll(url.hostname, resolver);
  if (!allowPrivate) for (const { address } of addresses) assertAllowedAddress(address, url.hostname);
  const chosen = addresses[0]!;
  return { url, address: chosen.address, family: chosen.family === 6 ? 6 : 4 };
}
