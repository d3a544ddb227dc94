// The client behind reverse proxies (TRUST_PROXY), parsed by ipaddr.js as Express's proxy-addr does.
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** An address and a prefix length: a single address is a range of one (/32, /128). */
type Range = readonly [Address, number];

/** The reverse proxies whose X-Forwarded-For is believed. */
export type TrustedProxies = readonly Range[];

/**
 * Dotted-quad IPv4 only (parsers read `127.1`, hex and leading zeros differently) or IPv6; an
 * IPv4-mapped address (a dual-stack socket's IPv4 peer) is the IPv4 address it holds.
 */
function parseAddress(text: string): Address | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (!ipaddr.IPv6.isValid(text)) return undefined;
  const address = ipaddr.IPv6.parse(text);
  return address.isIPv4MappedAddress() ? address.toIPv4Address() : address;
}

/** One TRUST_PROXY entry, an address or a CIDR range (`10.0.0.0/8`, `fd00::/8`); undefined when it is neither. */
export function parseTrustedProxy(entry: string): Range | undefined {
  const [text = "", prefixText, extra] = entry.split("/");
  const address = parseAddress(text);
  if (!address || extra !== undefined) return undefined;
  const bits = address.kind() === "ipv4" ? 32 : 128;
  if (prefixText === undefined) return [address, bits];
  if (!/^[0-9]{1,3}$/.test(prefixText)) return undefined;
  // A mapped range (::ffff:10.0.0.0/104) counts its prefix over the IPv6 address's 128 bits.
  const prefix = Number(prefixText) - (text.includes(":") && bits === 32 ? 96 : 0);
  return prefix >= 0 && prefix <= bits ? [address, prefix] : undefined;
}

function isTrusted(address: Address, trusted: TrustedProxies): boolean {
  return trusted.some(([range, prefix]) => range.kind() === address.kind() && address.match(range, prefix));
}

/**
 * From a trusted proxy, the right-most X-Forwarded-For address not itself trusted (else the
 * left-most); otherwise the peer. A malformed entry stops the walk: beyond it all may be forged.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | null,
  trusted: TrustedProxies,
): string | undefined {
  if (peer === undefined) return undefined;
  let client = parseAddress(peer);
  if (!client) return peer;
  if (forwardedFor !== null && trusted.length > 0) {
    const hops = forwardedFor.split(",");
    for (let i = hops.length - 1; i >= 0 && isTrusted(client, trusted); i--) {
      const hop = parseAddress((hops[i] as string).trim());
      if (!hop) break;
      client = hop;
    }
  }
  return client.toString();
}
