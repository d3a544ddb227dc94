import ipaddr from "ipaddr.js";

/*
 * Webhooks go to public unicast only. Not node:net's BlockList: it matches every IPv4 address
 * against an IPv6 `::ffff:0:0/96` rule, so one list cannot hold both families' rules.
 */

let net: typeof import("node:net") | undefined;

/** node:net's isIP, loaded on first use: only webhooks need it, and a start would pay for it. */
export function isIP(text: string): number {
  net ??= require("node:net") as typeof import("node:net");
  return net.isIP(text);
}

// IANA special-purpose registries (RFC 6890 and successors): nothing here is a public host.
const IPV4_REFUSED = [
  "0.0.0.0/8", // this network
  "10.0.0.0/8", // private
  "100.64.0.0/10", // carrier-grade NAT
  "127.0.0.0/8", // loopback
  "169.254.0.0/16", // link-local, cloud metadata (169.254.169.254) included
  "172.16.0.0/12", // private
  "192.0.0.0/24", // IETF protocol assignments
  "192.0.2.0/24", // documentation
  "192.88.99.0/24", // 6to4 relay anycast
  "192.168.0.0/16", // private
  "198.18.0.0/15", // benchmarking
  "198.51.100.0/24", // documentation
  "203.0.113.0/24", // documentation
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, broadcast included
].map((cidr) => ipaddr.IPv4.parseCIDR(cidr));

/** Global unicast is 2000::/3; inside it, these carry or reach other addresses, or are not hosts. */
const IPV6_GLOBAL = ipaddr.IPv6.parseCIDR("2000::/3");
const IPV6_REFUSED = [
  "2001::/23", // IETF protocol assignments (Teredo 2001::/32 included)
  "2001:db8::/32", // documentation
  "2002::/16", // 6to4: an IPv4 address inside
  "3fff::/20", // documentation
].map((cidr) => ipaddr.IPv6.parseCIDR(cidr));

/** Outside 2000::/3 no IPv6 address is public (loopback, IPv4-mapped, NAT64, unique-local…). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) {
    const value = ipaddr.IPv4.parse(address);
    return !IPV4_REFUSED.some((range) => value.match(range));
  }
  if (family === 6) {
    const value = ipaddr.IPv6.parse(address.split("%")[0] as string);
    return value.match(IPV6_GLOBAL) && !IPV6_REFUSED.some((range) => value.match(range));
  }
  return false;
}
