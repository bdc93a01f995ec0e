import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

/**
 * SSRF protection for webhook targets (docs/api.md Webhooks): an endpoint may not make this service
 * call into its own network. A target's host is resolved and every address it resolves to must
 * be public; the request then connects to the address that was checked (send.ts pins it), so a
 * DNS answer that changes between check and connect (rebinding) cannot swap in another one.
 */

/** A DNS lookup that takes longer than this refuses the target: a creation request or a send must not hang on it. */
export const DNS_TIMEOUT_MS = 5000;

/** Why a target is refused; the message is safe to return to the operator. */
export class RefusedTarget extends Error {
  constructor(message: string) {
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

/** [first address, prefix length] of every IPv4 range a webhook may not reach. */
const REFUSED_V4: readonly [string, number][] = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // RFC 1918
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata services live here)
  ["172.16.0.0", 12], // RFC 1918
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16], // RFC 1918
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

/** IPv6 ranges refused outright; IPv4-mapped and NAT64 forms are judged by the IPv4 address they carry. */
const REFUSED_V6: readonly [string, number][] = [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated, still routable inside sites)
  ["ff00::", 8], // multicast
];

function v4ToBigInt(address: string): bigint {
  return address.split(".").reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

/** The 128-bit value of an IPv6 address (any textual form Node accepts, dotted tail included). */
function v6ToBigInt(address: string): bigint {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = v4ToBigInt(dotted[1]!);
    text = `${text.slice(0, dotted.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const headGroups = head ? head.split(":") : [];
  const tailGroups = tail ? tail.split(":") : [];
  const groups =
    tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups];
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

function inRange(value: bigint, bits: number, first: bigint, prefix: number): boolean {
  const shift = BigInt(bits - prefix);
  return value >> shift === first >> shift;
}

const MAPPED_V4_PREFIX = 0xffffn << 32n; // ::ffff:0:0/96
const NAT64_PREFIX = v6ToBigInt("64:ff9b::"); // 64:ff9b::/96

/** Why `address` (an IP literal) may not be a webhook target, or null when it may. */
export function refusedAddressReason(address: string): string | null {
  const family = isIP(address);
  if (family === 4) {
    const value = v4ToBigInt(address);
    const refused = REFUSED_V4.some(([first, prefix]) => inRange(value, 32, v4ToBigInt(first), prefix));
    return refused ? `${address} is a loopback, private, link-local or reserved address` : null;
  }
  if (family === 6) {
    const value = v6ToBigInt(address);
    if (value >> 32n === MAPPED_V4_PREFIX >> 32n || value >> 32n === NAT64_PREFIX >> 32n) {
      const v4 = Number(value & 0xffffffffn);
      const embedded = [v4 >>> 24, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255].join(".");
      return refusedAddressReason(embedded) === null ? null : `${address} carries the refused IPv4 address ${embedded}`;
    }
    const refused = REFUSED_V6.some(([first, prefix]) => inRange(value, 128, v6ToBigInt(first), prefix));
    return refused ? `${address} is a loopback, private, link-local or multicast address` : null;
  }
  return `${address} is not an IP address`;
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
function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? null : host;
}

async function resolveAll(hostname: string): Promise<{ address: string; family: number }[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RefusedTarget(`${hostname} did not resolve within ${DNS_TIMEOUT_MS} ms`)), DNS_TIMEOUT_MS);
  });
  try {
    return await Promise.race([lookup(hostname, { all: true, verbatim: true }), timeout]);
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
 * nothing is refused for its range. Returns the address to connect to.
 */
export async function resolveTarget(text: string, allowPrivate: boolean): Promise<ResolvedTarget> {
  const url = parseTargetUrl(text);
  const literal = literalAddress(url);
  const addresses = literal !== null ? [{ address: literal, family: isIP(literal) }] : await resolveAll(url.hostname);
  if (addresses.length === 0) throw new RefusedTarget(`${url.hostname} resolves to no address`);
  if (!allowPrivate) {
    for (const { address } of addresses) {
      const reason = refusedAddressReason(address);
      if (reason !== null) throw new RefusedTarget(literal !== null ? reason : `${url.hostname} resolves to a refused address (${reason})`);
    }
  }
  const chosen = addresses[0]!;
  return { url, address: chosen.address, family: chosen.family === 6 ? 6 : 4 };
}
