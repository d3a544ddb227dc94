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

function ipv4Bits(text: string): bigint {
  return text.split(".").reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

function ipv6Bits(text: string): bigint {
  // A dotted IPv4 tail (::ffff:127.0.0.1) is the last two groups written another way.
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  let hex = text;
  if (dotted) {
    const v4 = ipv4Bits(dotted[2] as string);
    hex = `${dotted[1]}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [left = "", right] = hex.split("::");
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((g) => BigInt(Number.parseInt(g, 16))));
  const before = groups(left);
  const after = right === undefined ? [] : groups(right);
  const zeros = right === undefined ? [] : Array<bigint>(8 - before.length - after.length).fill(0n);
  return [...before, ...zeros, ...after].reduce((value, group) => (value << 16n) | group, 0n);
}

interface Range {
  base: bigint;
  bits: number;
}

function range(cidr: string, width: number, parse: (text: string) => bigint): Range {
  const [address = "", bits = ""] = cidr.split("/");
  return { base: parse(address) >> BigInt(width - Number(bits)), bits: Number(bits) };
}

const inRange = (value: bigint, width: number, { base, bits }: Range) => value >> BigInt(width - bits) === base;

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
].map((cidr) => range(cidr, 32, ipv4Bits));

/** Global unicast is 2000::/3; inside it, these carry or reach other addresses, or are not hosts. */
const IPV6_GLOBAL = range("2000::/3", 128, ipv6Bits);
const IPV6_REFUSED = [
  "2001::/23", // IETF protocol assignments (Teredo 2001::/32 included)
  "2001:db8::/32", // documentation
  "2002::/16", // 6to4: an IPv4 address inside
  "3fff::/20", // documentation
].map((cidr) => range(cidr, 128, ipv6Bits));

/** Outside 2000::/3 no IPv6 address is public (loopback, IPv4-mapped, NAT64, unique-local…). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) {
    const value = ipv4Bits(address);
    return !IPV4_REFUSED.some((r) => inRange(value, 32, r));
  }
  if (family === 6) {
    const value = ipv6Bits(address.split("%")[0] as string);
    return inRange(value, 128, IPV6_GLOBAL) && !IPV6_REFUSED.some((r) => inRange(value, 128, r));
  }
  return false;
}
