import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { reasonOf } from "../../src/webhooks/failure";
import { AddressRefused, checkedAddress, type Resolver, sendAttempt, systemResolver } from "../../src/webhooks/send";
import { silentPort } from "../support/silent-port";

interface Seen {
  method: string;
  host: string | null;
  headers: Headers;
  body: Uint8Array;
}

const servers: Server<undefined>[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.stop(true);
});

/** A receiver on 127.0.0.1 that records every request it gets and answers with `answer`. */
function receiver(answer: (request: Request) => Response | Promise<Response>, tls?: { cert: string; key: string }) {
  const seen: Seen[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...(tls ? { tls } : {}),
    async fetch(request) {
      const body = new Uint8Array(await request.arrayBuffer());
      seen.push({ method: request.method, host: request.headers.get("host"), headers: request.headers, body });
      return answer(request);
    },
  });
  servers.push(server);
  return { seen, port: server.port as number };
}

const answers =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

const PUBLIC = "93.184.215.14";
const ok = () => new Response("ok");

describe("a delivery attempt", () => {
  test("a 2xx: the receiver gets a POST with the exact body bytes, the headers and the URL's Host", async () => {
    const { seen, port } = receiver(() => new Response(null, { status: 204 }));
    const body = '{"id":9007199254740993,"name":"Ficus 🌿"}';
    const headers = { "content-type": "application/json", "webhook-id": "msg_1", Host: "elsewhere.example" };
    const result = await sendAttempt({ url: `http://127.0.0.1:${port}/hook?a=1`, body, headers, allowPrivate: true });
    expect(result).toMatchObject({ status: 204 });
    expect(result.error).toBeUndefined();
    expect(seen).toHaveLength(1);
    const [request] = seen as [Seen];
    expect(request.method).toBe("POST");
    expect(Buffer.from(request.body).equals(Buffer.from(body))).toBe(true);
    expect(request.host).toBe(`127.0.0.1:${port}`);
    expect(request.headers.get("content-type")).toBe("application/json");
    expect(request.headers.get("webhook-id")).toBe("msg_1");
    expect(request.headers.get("content-length")).toBe(String(Buffer.byteLength(body)));
  });

  test("the connection goes to the checked address, with the URL's name as Host", async () => {
    const { seen, port } = receiver(ok);
    const resolve = answers("127.0.0.1");
    const url = `http://pinned.invalid:${port}/`;
    const result = await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: true, resolve });
    expect(result.status).toBe(200);
    expect(seen.map((request) => request.host)).toEqual([`pinned.invalid:${port}`]);
  });

  test("no second lookup: localhost checked as 127.0.0.2 never reaches a receiver on 127.0.0.1", async () => {
    const { seen, port } = receiver(ok);
    const url = `http://localhost:${port}/`;
    const result = await sendAttempt({
      url,
      body: "{}",
      headers: {},
      allowPrivate: true,
      resolve: answers("127.0.0.2"),
    });
    expect(result.status).toBeUndefined();
    expect(result.error).toBe("connection refused");
    expect(seen).toHaveLength(0);
  });

  test("a redirect is returned as it is, never followed", async () => {
    const second = receiver(ok);
    const { seen, port } = receiver(
      () => new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${second.port}/` } }),
    );
    const result = await sendAttempt({ url: `http://127.0.0.1:${port}/`, body: "{}", headers: {}, allowPrivate: true });
    expect(result.status).toBe(302);
    expect(seen).toHaveLength(1);
    expect(second.seen).toHaveLength(0);
  });

  test("a connection refused is an error, not a throw", async () => {
    const { port } = receiver(ok);
    for (const server of servers.splice(0)) server.stop(true);
    const result = await sendAttempt({ url: `http://127.0.0.1:${port}/`, body: "{}", headers: {}, allowPrivate: true });
    expect(result).toMatchObject({ error: "connection refused" });
    expect(result.status).toBeUndefined();
  });

  test.each(["not a url", "ftp://127.0.0.1/", "file:///etc/passwd"])("%s is an error, not a throw", async (url) => {
    const result = await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: true });
    expect(result.error).toStartWith("url: ");
  });
});

describe("time limits", () => {
  test("a receiver that never answers: a timeout after timeoutMs", async () => {
    const { seen, port } = receiver(() => new Promise<Response>(() => {}));
    const url = `http://127.0.0.1:${port}/`;
    const result = await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: true, timeoutMs: 300 });
    expect(result.error).toBe("timed out after 300 ms");
    expect(result.durationMs).toBeGreaterThanOrEqual(295);
    expect(result.durationMs).toBeLessThan(1_500);
    expect(seen).toHaveLength(1);
  });

  test("an address where no connection is ever set up: the attempt ends at connectTimeoutMs, not timeoutMs", async () => {
    const silent = await silentPort();
    try {
      const url = `http://127.0.0.1:${silent.port}/`;
      const limits = { timeoutMs: 10_000, connectTimeoutMs: 300 };
      const result = await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: true, ...limits });
      expect(result.error).toBe("no connection within 300 ms");
      expect(result.durationMs).toBeGreaterThanOrEqual(295);
      expect(result.durationMs).toBeLessThan(3_000);
    } finally {
      silent.stop();
    }
  });

  test("a connected receiver slower than the connect timeout still answers within timeoutMs", async () => {
    const { port } = receiver(async () => {
      await Bun.sleep(500);
      return ok();
    });
    const url = `http://127.0.0.1:${port}/`;
    const limits = { timeoutMs: 5_000, connectTimeoutMs: 100 };
    expect(await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: true, ...limits })).toMatchObject({
      status: 200,
    });
  });

  test("a resolver that never answers counts against the same limit", async () => {
    const resolve: Resolver = () => new Promise(() => {});
    const url = "http://slow.invalid/";
    const result = await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: true, timeoutMs: 300, resolve });
    expect(result.error).toBe("timed out after 300 ms");
    expect(result.durationMs).toBeLessThan(1_500);
  });

  test("an endless body after a 200 is cut short: the 200 comes back well within the limit", async () => {
    const chunk = new Uint8Array(16 * 1024);
    const endless = () => new Response(new ReadableStream({ pull: (controller) => controller.enqueue(chunk) }));
    const { port } = receiver(endless);
    const url = `http://127.0.0.1:${port}/`;
    const result = await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: true, timeoutMs: 5_000 });
    expect(result).toMatchObject({ status: 200 });
    expect(result.error).toBeUndefined();
    expect(result.durationMs).toBeLessThan(2_000);
  });
});

describe("Retry-After", () => {
  const retryAfter = async (value: string) => {
    const { port } = receiver(() => new Response(null, { status: 503, headers: { "retry-after": value } }));
    const url = `http://127.0.0.1:${port}/`;
    const result = await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: true });
    expect(result.status).toBe(503);
    return result.retryAfterMs;
  };

  test("delta-seconds", async () => {
    expect(await retryAfter("120")).toBe(120_000);
  });
  test("an HTTP-date a minute ahead", async () => {
    const ms = await retryAfter(new Date(Date.now() + 60_000).toUTCString());
    expect(ms).toBeGreaterThan(58_000);
    expect(ms).toBeLessThanOrEqual(60_000);
  });
  test.each(["soon", "1.5", "-5", "12 parsecs", ""])("%p is ignored", async (value) => {
    expect(await retryAfter(value)).toBeUndefined();
  });
  test("a huge delay is capped at 24 hours", async () => {
    expect(await retryAfter("999999999")).toBe(24 * 60 * 60 * 1000);
  });
});

describe("address rules", () => {
  test.each([
    "http://127.0.0.1:PORT/",
    "http://[::1]:PORT/",
    "http://169.254.169.254:PORT/",
    "http://[::ffff:127.0.0.1]:PORT/",
    "http://2130706433:PORT/", // 127.0.0.1 as one number; URL parsing normalises it
  ])("%s is refused without allowPrivate", async (template) => {
    const { seen, port } = receiver(ok);
    const result = await sendAttempt({
      url: template.replace("PORT", String(port)),
      body: "{}",
      headers: {},
      allowPrivate: false,
    });
    expect(result.status).toBeUndefined();
    expect(result.error).toMatch(
      /^url: its host (resolves to .+, which )?is not a public address \(.*WEBHOOK_ALLOW_PRIVATE=true\)$/,
    );
    expect(seen).toHaveLength(0);
  });

  test("a name that turns private after passing its first check is refused at the attempt", async () => {
    const { seen, port } = receiver(ok);
    let calls = 0;
    const resolve: Resolver = async () => [{ address: calls++ === 0 ? PUBLIC : "127.0.0.1", family: 4 }];
    const url = `http://rebind.example:${port}/`;
    expect(await checkedAddress(new URL(url), { allowPrivate: false, resolve })).toEqual({
      address: PUBLIC,
      family: 4,
    });
    const result = await sendAttempt({ url, body: "{}", headers: {}, allowPrivate: false, resolve });
    expect(result.error).toStartWith("url: its host resolves to 127.0.0.1, which is not a public address (");
    expect(calls).toBe(2);
    expect(seen).toHaveLength(0);
  });

  test.each([
    [PUBLIC, "10.0.0.1"],
    ["127.0.0.1", PUBLIC],
    ["2606:4700:4700::1111", "fd00::1"],
  ])("a name resolving to %s and %s is refused", async (one, another) => {
    const url = new URL("http://mixed.example/");
    const refused = checkedAddress(url, { allowPrivate: false, resolve: answers(one, another) });
    await expect(refused).rejects.toBeInstanceOf(AddressRefused);
    await expect(refused).rejects.toThrow(/which is not a public address/);
  });

  test("all-public answers give the first; allowPrivate lifts the rule", async () => {
    const url = new URL("http://fine.example/");
    const resolve = answers("2606:4700:4700::1111", PUBLIC);
    expect(await checkedAddress(url, { allowPrivate: false, resolve })).toEqual({
      address: "2606:4700:4700::1111",
      family: 6,
    });
    const local = await checkedAddress(url, { allowPrivate: true, resolve: answers("127.0.0.1") });
    expect(local).toEqual({ address: "127.0.0.1", family: 4 });
  });

  test("a name that does not resolve is refused", async () => {
    const url = new URL("http://nowhere.example/");
    const failing: Resolver = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
    };
    await expect(checkedAddress(url, { allowPrivate: true, resolve: failing })).rejects.toThrow(
      "url: its host does not resolve (no such host)",
    );
    await expect(checkedAddress(url, { allowPrivate: true, resolve: answers() })).rejects.toThrow(
      "url: its host does not resolve (no addresses)",
    );
  });

  test("the system resolver: localhost is a loopback name", async () => {
    const found = await systemResolver("localhost");
    expect(found.length).toBeGreaterThan(0);
    const url = new URL("http://localhost/");
    await expect(checkedAddress(url, { allowPrivate: false })).rejects.toThrow(/^url: its host resolves to /);
  });
});

describe("https", () => {
  const dir = mkdtempSync(join(tmpdir(), "webhook-send-"));
  const certFor = (name: string) => {
    const key = join(dir, `${name}.key`);
    const cert = join(dir, `${name}.crt`);
    const made = Bun.spawnSync(
      ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        .concat(["-keyout", key, "-out", cert, "-days", "1", "-subj", `/CN=${name}`])
        .concat(["-addext", `subjectAltName=DNS:${name}`]),
      { stderr: "pipe" },
    );
    if (made.exitCode !== 0) throw new Error(`openssl: ${made.stderr.toString().trim()}`);
    return { cert: readFileSync(cert, "utf8"), key: readFileSync(key, "utf8") };
  };
  let pinned: { cert: string; key: string };
  let other: { cert: string; key: string };
  beforeAll(() => {
    pinned = certFor("pinned.invalid");
    other = certFor("other.invalid");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const attempt = (port: number, ca?: string, connectTimeoutMs?: number) =>
    sendAttempt({
      url: `https://pinned.invalid:${port}/hook`,
      body: "{}",
      headers: {},
      allowPrivate: true,
      resolve: answers("127.0.0.1"),
      ...(ca === undefined ? {} : { ca }),
      ...(connectTimeoutMs === undefined ? {} : { connectTimeoutMs }),
    });

  test("pinned over TLS: the certificate is checked against the URL's name", async () => {
    const { seen, port } = receiver(ok, pinned);
    const result = await attempt(port, pinned.cert);
    expect(result).toMatchObject({ status: 200 });
    expect(seen.map((request) => request.host)).toEqual([`pinned.invalid:${port}`]);
  });

  test("a receiver slower than the connect timeout still answers over TLS", async () => {
    const slow = async () => {
      await Bun.sleep(500);
      return ok();
    };
    const { port } = receiver(slow, pinned);
    expect(await attempt(port, pinned.cert, 100)).toMatchObject({ status: 200 });
  });

  test("a trusted certificate for another name fails", async () => {
    const { seen, port } = receiver(ok, other);
    const result = await attempt(port, other.cert);
    expect(result.status).toBeUndefined();
    expect(result.error).toContain("ERR_TLS_CERT_ALTNAME_INVALID");
    expect(seen).toHaveLength(0);
  });

  test("an untrusted certificate fails", async () => {
    const { seen, port } = receiver(ok, pinned);
    const result = await attempt(port);
    expect(result.status).toBeUndefined();
    expect(result.error).toMatch(/certificate/i);
    expect(seen).toHaveLength(0);
  });
});

describe("the attempt log's reason", () => {
  test("is one line: whitespace and control characters, U+0000 included, become single spaces", () => {
    expect(reasonOf(new Error("bad\u0000byte\u0007 and\r\n\ta\u007fnew line "))).toBe("bad byte and a new line");
    expect(reasonOf(Object.assign(new Error("refused"), { code: "ECONNREFUSED" }))).toBe("connection refused");
    expect(reasonOf(Object.assign(new Error("odd\u0000"), { code: "E_ODD" }))).toBe("odd (E_ODD)");
  });
});
