import { describe, expect, test } from "bun:test";
import { clientAddress, parseTrustedProxy, type TrustedProxies } from "../../src/core/client-address";

function trust(...entries: string[]): TrustedProxies {
  return entries.map((entry) => {
    const range = parseTrustedProxy(entry);
    if (!range) throw new Error(`not an entry: ${entry}`);
    return range;
  });
}

describe("the client address behind trusted proxies (TRUST_PROXY)", () => {
  const proxies = trust("127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8");

  test("from a trusted peer: the right-most forwarded address that is not a trusted proxy", () => {
    expect(clientAddress("127.0.0.1", "203.0.113.9", proxies)).toBe("203.0.113.9");
    // A client's own X-Forwarded-For is left of what the proxies appended: it is not believed.
    expect(clientAddress("127.0.0.1", "198.51.100.1, 203.0.113.9, 10.1.2.3", proxies)).toBe("203.0.113.9");
    expect(clientAddress("::1", "2001:db8::7, fd00::1", proxies)).toBe("2001:db8::7");
  });

  test("from a trusted peer with only trusted addresses forwarded: the left-most", () => {
    expect(clientAddress("127.0.0.1", "10.0.0.5, 10.9.9.9", proxies)).toBe("10.0.0.5");
    expect(clientAddress("127.0.0.1", null, proxies)).toBe("127.0.0.1");
  });

  test("from any other peer the header is ignored", () => {
    expect(clientAddress("192.0.2.50", "203.0.113.9", proxies)).toBe("192.0.2.50");
    expect(clientAddress("192.0.2.50", "10.0.0.1", proxies)).toBe("192.0.2.50");
    expect(clientAddress("127.0.0.1", "203.0.113.9", [])).toBe("127.0.0.1");
  });

  test("a malformed entry ends the walk at the last good address: the trusted hop that passed it on", () => {
    expect(clientAddress("127.0.0.1", "not-an-address", proxies)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "203.0.113.9, unknown, 10.0.0.7", proxies)).toBe("10.0.0.7");
    for (const malformed of [
      "",
      " ",
      "203.0.113.9,",
      "203.0.113.9:443",
      "[2001:db8::1]",
      "127.1",
      "0x7f.0.0.1",
      "010.0.0.1",
    ]) {
      expect(clientAddress("127.0.0.1", malformed, proxies)).toBe("127.0.0.1");
    }
  });

  test("IPv4-mapped IPv6 is the IPv4 address it holds; IPv6 is given in its short form", () => {
    expect(clientAddress("::ffff:127.0.0.1", "203.0.113.9", proxies)).toBe("203.0.113.9");
    expect(clientAddress("::ffff:10.0.0.1", "::ffff:203.0.113.9", proxies)).toBe("203.0.113.9");
    expect(clientAddress("::ffff:192.0.2.50", null, proxies)).toBe("192.0.2.50");
    expect(clientAddress("127.0.0.1", "2001:0DB8:0000::0001", proxies)).toBe("2001:db8::1");
    // A mapped range trusts the IPv4 peers it holds.
    expect(clientAddress("192.168.1.2", "203.0.113.9", trust("::ffff:192.168.0.0/112"))).toBe("203.0.113.9");
  });

  test("without a peer address there is no client address", () => {
    expect(clientAddress(undefined, "203.0.113.9", proxies)).toBeUndefined();
  });
});

describe("a TRUST_PROXY entry", () => {
  test("is an address or a CIDR range, IPv4 or IPv6", () => {
    for (const entry of ["127.0.0.1", "10.0.0.0/8", "0.0.0.0/0", "::1", "fd00::/8", "::/0", "::ffff:10.0.0.0/104"]) {
      expect(parseTrustedProxy(entry)).toBeDefined();
    }
  });

  test("anything else is refused", () => {
    for (const entry of [
      "",
      "localhost",
      "10.0.0.0/33",
      "::/129",
      "10.0.0.0/",
      "10.0.0.0/8/8",
      "10.0.0.0/x",
      "127.1",
      "::ffff:1.2.3.4/95",
      "1.2.3.4:80",
    ]) {
      expect(parseTrustedProxy(entry)).toBeUndefined();
    }
  });
});
