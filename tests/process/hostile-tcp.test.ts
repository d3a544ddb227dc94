/**
 * Hostile bytes over raw TCP against the real server: what fetch cannot send (garbage request
 * lines, bad framing, pipelining, half-sent bodies). Whatever arrives, the answer is never a 5xx
 * and the server keeps serving. The in-process properties are in tests/api/hostile.test.ts.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { connect, type Socket } from "node:net";
import fc from "fast-check";
import { onSqlite } from "../support/helpers";
import { check, clip, HOSTILE_RUNS as RUNS } from "../support/hostile-arbitraries";
import { type RunningServer, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { within } from "../support/until";
import { bootstrapToken } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

// ---------------------------------------------------------------------------------------------
// The real server, over raw TCP: what fetch cannot send
// ---------------------------------------------------------------------------------------------

interface RawExchange {
  /** Status codes of the responses received, in order. */
  statuses: number[];
  /** Statuses of the responses the app never saw: Bun's HTTP parser answers them, bare. */
  parserStatuses: number[];
  raw: string;
  closed: boolean;
}

/**
 * Writes `chunks` to a fresh connection and collects what comes back until `expected` complete
 * responses arrived, the server closed the connection, or `ms` passed. `halfClose` ends the
 * writing side after the chunks; `abort` destroys the socket right after writing.
 */
function exchange(
  url: string,
  chunks: Array<string | Uint8Array>,
  { expected = 1, ms = 1500, halfClose = false, abort = false } = {},
): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    let settled = false;
    let socket: Socket | undefined;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket?.destroy();
      const responses = parseResponses(received);
      resolve({
        statuses: responses.map((r) => r.status),
        parserStatuses: responses.filter((r) => r.bare).map((r) => r.status),
        raw: received.toString("latin1"),
        closed,
      });
    };
    const timer = setTimeout(() => finish(false), ms);
    const open = connect({ host: hostname, port: Number(port) }, () => {
      // Aborted once the last chunk is handed to the kernel: no timer guessing when that is.
      chunks.forEach((chunk, i) => {
        open.write(chunk, abort && i === chunks.length - 1 ? () => finish(true) : undefined);
      });
      if (halfClose) open.end();
    });
    socket = open;
    open.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (parseResponses(received).length >= expected) finish(false);
    });
    open.on("close", () => finish(true));
    open.on("error", (error) => {
      if (!settled && received.length === 0 && (error as NodeJS.ErrnoException).code === "ECONNREFUSED") {
        settled = true;
        clearTimeout(timer);
        reject(error);
      }
    });
  });
}

/**
 * The complete (Content-Length framed) responses in `data`. `bare` marks a response that did
 * not come from the app: every app response carries X-Content-Type-Options.
 */
function parseResponses(data: Buffer): Array<{ status: number; bare: boolean }> {
  const text = data.toString("latin1");
  const statuses: Array<{ status: number; bare: boolean }> = [];
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    const head = text.slice(at, end);
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1];
    if (!status) break;
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (text.length < end + 4 + length) break;
    statuses.push({ status: Number(status), bare: !/\r\nx-content-type-options:/i.test(head) });
    at = end + 4 + length;
  }
  return statuses;
}

describe.if(onSqlite)("hostile bytes over TCP, real server", () => {
  let server: RunningServer;
  let cleanup: () => void;
  let token: string;
  let auth: string;
  let seeded: unknown;
  let exitedWith: number | undefined;

  beforeAll(async () => {
    const scratch = scratchDir();
    cleanup = scratch.cleanup;
    server = await startServer({ DATABASE_URL: `${scratch.dir}/hostile.sqlite`, RATE_LIMIT_PER_MINUTE: "0" });
    token = bootstrapToken(server);
    expect(token).toStartWith("pst_");
    auth = `Authorization: Bearer ${token}\r\n`;
    for (const body of ['{"id":1,"name":"Fern"}', '{"id":9223372036854775807,"name":"Max","tag":"t"}']) {
      const response = await fetch(`${server.url}/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body,
      });
      expect(response.status).toBe(200);
    }
    seeded = await listPlants();
    void server.exited.then((code) => {
      exitedWith = code;
    });
  });

  afterAll(async () => {
    if (server) {
      const code = await within(server.stop(), 15_000, "server shutdown");
      const output = await server.output();
      cleanup?.();
      expect(code).toBe(0);
      // Aborted bodies must not leave requests "in flight", and nothing may have faulted.
      expect(output).not.toContain("still in flight");
      expect(output).not.toMatch(/unhandled/i);
    } else cleanup?.();
  });

  async function listPlants() {
    const response = await within(
      fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${token}` } }),
      3000,
      "GET /plants",
    );
    expect(response.status).toBe(200);
    return response.json();
  }

  async function expectAlive() {
    // Answering is being alive; and it has not exited in between (a crash and restart would not do).
    expect(await listPlants()).toEqual(seeded);
    expect(exitedWith).toBeUndefined();
  }

  test("garbage request lines get a 4xx or a closed connection, never a 5xx", async () => {
    const lines: Array<string | Uint8Array> = [
      "\x00\x01\x02\r\n\r\n",
      "GARBAGE\r\n\r\n",
      "GET\r\n\r\n",
      " GET /plants HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET  /plants  HTTP/1.1\r\nHost: x\r\n\r\n",
      "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a]), // a TLS hello
      `${"A".repeat(20_000)} /plants HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /${"p".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${"b".repeat(40_000)}\r\n\r\n`,
    ];
    for (const line of lines) {
      const result = await exchange(server.url, [line], { halfClose: true });
      expect({ line: clip(String(line), 60), fiveXX: result.statuses.filter((s) => s >= 500) }).toEqual({
        line: clip(String(line), 60),
        fiveXX: [],
      });
    }
    await expectAlive();
  });

  test("random request lines and header bytes never get a 5xx", async () => {
    const byte = fc.integer({ min: 0, max: 255 });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("GET", "POST", "DELETE", "FOO", "get", "G\x00T", ""),
        fc.array(byte, { maxLength: 30 }),
        fc.array(fc.tuple(fc.array(byte, { minLength: 1, maxLength: 10 }), fc.array(byte, { maxLength: 20 })), {
          maxLength: 3,
        }),
        async (method, target, headers) => {
          const head = Buffer.concat([
            Buffer.from(`${method} /plants/`, "latin1"),
            Buffer.from(target.filter((b) => b !== 0x20 && b !== 0x0d && b !== 0x0a)),
            Buffer.from(" HTTP/1.1\r\nHost: localhost\r\n", "latin1"),
            ...headers.map(([name, value]) =>
              Buffer.concat([
                Buffer.from(name.filter((b) => b !== 0x0d && b !== 0x0a)),
                Buffer.from(": "),
                Buffer.from(value.filter((b) => b !== 0x0d && b !== 0x0a)),
                Buffer.from("\r\n"),
              ]),
            ),
            Buffer.from(`${auth}Connection: close\r\n\r\n`, "latin1"),
          ]);
          const result = await exchange(server.url, [head], { ms: 1000 });
          // Bun's parser answers a bare 505 to a control byte in the target: a finding with
          // its own test below; here it is let through so the property can look further.
          const appOrOther = result.statuses.filter(
            (status, i) => !(status === 505 && result.parserStatuses[i] === 505),
          );
          check(
            appOrOther.every((status) => status < 500),
            () => `5xx for ${JSON.stringify(head.toString("latin1"))}\n  -> ${clip(result.raw, 300)}`,
          );
        },
      ),
      { numRuns: Math.ceil(RUNS / 2) },
    );
    await expectAlive();
  });

  test("invalid UTF-8 in a body with a correct Content-Length: 400 with the Error body", async () => {
    const body = new Uint8Array([
      0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x37, 0x2c, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xc0, 0xed, 0xa0, 0x80, 0x22,
      0x7d,
    ]);
    const result = await exchange(server.url, [
      `POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    ]);
    expect(result.statuses).toEqual([400]);
    expect(result.raw).toMatch(/content-type: application\/json/i);
    expect(result.raw).toMatch(/\{"error":400,"message":"[^"]+"\}$/);
    await expectAlive();
  });

  test("a Content-Length larger than the bytes sent, then the client goes away", async () => {
    for (let i = 0; i < 6; i++) {
      const result = await exchange(
        server.url,
        [
          `POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"id":77,"name":"`,
        ],
        { abort: i % 2 === 0, halfClose: i % 2 === 1, ms: 500 },
      );
      expect(result.statuses.filter((status) => status >= 500)).toEqual([]);
    }
    const chunked = await exchange(
      server.url,
      [
        `POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"id"`,
      ],
      { abort: true },
    );
    expect(chunked.statuses.filter((status) => status >= 500)).toEqual([]);
    await expectAlive();
  });

  test("framing attacks: bad header characters, duplicate or conflicting lengths, bad chunks", async () => {
    const requests = [
      `GET /plants HTTP/1.1\r\nHost: x\r\nX-B\x01d: y\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\n: empty-name\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\n folded: y\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: localhost\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\n${auth}\r\n`, // no Host
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: -1\r\n\r\n{}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 99999999999999999999\r\n\r\n{}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 0x10\r\n\r\n{}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{}\r\n0\r\n\r\n`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{}`,
    ];
    for (const request of requests) {
      const result = await exchange(server.url, [request], { halfClose: true, ms: 1000 });
      expect({ request: clip(JSON.stringify(request), 160), fiveXX: result.statuses.filter((s) => s >= 500) }).toEqual({
        request: clip(JSON.stringify(request), 160),
        fiveXX: [],
      });
    }
    await expectAlive();
  });

  test("HTTP/1.0 is answered", async () => {
    const result = await exchange(server.url, [`GET /plants HTTP/1.0\r\n${auth}\r\n`]);
    expect(result.statuses).toEqual([200]);
    expect(result.raw.slice(result.raw.indexOf("\r\n\r\n") + 4)).toBe(JSON.stringify(seeded));
    await expectAlive();
  });

  test("pipelined requests are answered in order", async () => {
    const one = (line: string, extra = "") => `${line} HTTP/1.1\r\nHost: localhost\r\n${auth}${extra}\r\n`;
    const result = await exchange(
      server.url,
      [
        one("GET /plants") +
          one("GET /nowhere") +
          one("GET /plants?limit=x") +
          one("DELETE /plants/%zz") +
          `POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: 9\r\n\r\n{"id":1,}` +
          one("GET /plants?limit=1", "Connection: close\r\n"),
      ],
      { expected: 6, ms: 3000 },
    );
    expect(result.statuses).toEqual([200, 404, 400, 400, 400, 200]);
    await expectAlive();
  });

  test("an unknown method on a known path is never served as GET", async () => {
    for (const method of ["FOO", "pOST", "Delete", "BREW"]) {
      const result = await exchange(server.url, [`${method} /plants HTTP/1.1\r\nHost: localhost\r\n${auth}\r\n`], {
        halfClose: true,
      });
      expect({ method, statuses: result.statuses.filter((s) => s < 400 || s >= 500) }).toEqual({
        method,
        statuses: [],
      });
    }
    await expectAlive();
  });

  // Bun's HTTP parser itself answers a bare 505 (or 400) to a request line it cannot split in
  // three: a malformed version, no version, or a control byte (0x00-0x20) in the target. The
  // app never sees these requests; what it can promise is that they go no further and the
  // server keeps serving.
  test("a malformed request line is refused by the HTTP parser and the server keeps serving", async () => {
    const seen: Record<string, number[]> = {};
    const lines = [
      ...["HTTP/1.1\n", "http/1.1", "HTTP/1.1 ", "HTTP/1.10", "HTTP/1.2", "HTTP/1", "HTTP/"].map(
        (v) => `GET /plants ${v}`,
      ),
      "GET /plants",
      "GET /plants/\x00 HTTP/1.1",
      "GET /plants/\x1f HTTP/1.1",
      "GET /plants/1 2 HTTP/1.1",
    ];
    for (const line of lines) {
      const result = await exchange(server.url, [`${line}\r\nHost: localhost\r\n${auth}\r\n`], { halfClose: true });
      seen[JSON.stringify(line)] = result.statuses;
    }
    await expectAlive();
    const unexpected = Object.entries(seen).filter(
      ([, statuses]) => statuses.length !== 1 || ![400, 505].includes(statuses[0] as number),
    );
    expect(unexpected).toEqual([]);
  });

  test("a fragment in the request-target is a 400", async () => {
    const result = await exchange(server.url, [
      `GET /plants#frag HTTP/1.1\r\nHost: localhost\r\n${auth}Connection: close\r\n\r\n`,
    ]);
    await expectAlive();
    expect(result.statuses).toEqual([400]);
  });
});
