// Bun.serve: a request that arrives on a keep-alive connection while the previous response is
// still pending (its handler settles on a later event-loop turn) makes Bun close the socket
// with zero bytes written: the pending response and the new request are both lost.
// Run: bun repro.ts   (prints PASS/FAIL per variant; PASS = every request answered, in order)
import http from "node:http";
import net from "node:net";

const POST = "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd";
const GET1 = "GET /first HTTP/1.1\r\nHost: x\r\n\r\n";
const GET2 = "GET /second HTTP/1.1\r\nHost: x\r\n\r\n";
const path = (r: Request) => new URL(r.url).pathname;

/** Sends each chunk as one socket write (gapMs apart); collects every byte until close or 1 s. */
function exchange(port: number, chunks: string[], gapMs = 0): Promise<{ raw: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    let raw = "";
    let closedByServer = false;
    let finished = false;
    const socket = net.connect(port, "127.0.0.1", async () => {
      for (const [i, chunk] of chunks.entries()) {
        if (i > 0 && gapMs) await Bun.sleep(gapMs);
        if (!socket.destroyed) socket.write(chunk);
      }
    });
    socket.on("data", (d) => (raw += d));
    socket.on("error", () => {});
    socket.on("close", () => {
      closedByServer = true;
      finish();
    });
    const timer = setTimeout(finish, 1000);
    function finish() {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ raw, closedByServer });
    }
  });
}

type Handler = (req: Request) => Response | Promise<Response>;
const variants: Array<[name: string, fetch: Handler, chunks: string[], gapMs?: number]> = [
  ["a  sync handler, POST+GET in one write", (r) => new Response(path(r)), [POST + GET2]],
  ["b  async, never awaits", async (r) => new Response(path(r)), [POST + GET2]],
  [
    "c  await Promise.resolve()",
    async (r) => {
      await Promise.resolve();
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "c2 await queueMicrotask / process.nextTick",
    async (r) => {
      await new Promise<void>((ok) => queueMicrotask(ok));
      await new Promise((ok) => process.nextTick(ok));
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "d  await Bun.sleep(1)",
    async (r) => {
      await Bun.sleep(1);
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "d2 await Bun.sleep(0)",
    async (r) => {
      await Bun.sleep(0);
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "d3 await setImmediate",
    async (r) => {
      await new Promise((ok) => setImmediate(ok));
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "d4 await Bun.file(...).text() (real I/O)",
    async (r) => {
      await Bun.file(import.meta.path).text();
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "e  await request.text()",
    async (r) => {
      await r.text();
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "e2 await request.arrayBuffer()",
    async (r) => {
      await r.arrayBuffer();
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "e3 request.body reader loop",
    async (r) => {
      if (r.body) {
        const rd = r.body.getReader();
        while (!(await rd.read()).done);
      }
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "e4 await request.text(), body in a later packet",
    async (r) => {
      await r.text();
      return new Response(path(r));
    },
    ["POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n", `abcd${GET2}`],
    50,
  ],
  [
    "f  GET+GET in one write, await Bun.sleep(1)",
    async (r) => {
      await Bun.sleep(1);
      return new Response(path(r));
    },
    [GET1 + GET2],
  ],
  [
    "g  Promise resolved by setTimeout, no async",
    (r) => new Promise((ok) => setTimeout(() => ok(new Response(path(r))), 1)),
    [POST + GET2],
  ],
  [
    "h  body never read, await Bun.sleep(1)",
    async (r) => {
      await Bun.sleep(1);
      return new Response(path(r));
    },
    [POST + GET2],
  ],
  [
    "i  sleep(1); GET 50 ms later (first already answered)",
    async (r) => {
      await Bun.sleep(1);
      return new Response(path(r));
    },
    [POST, GET2],
    50,
  ],
  [
    "j  sleep(300) on /first; GET 50 ms later, separate write",
    async (r) => {
      if (path(r) === "/first") await Bun.sleep(300);
      return new Response(path(r));
    },
    [GET1, GET2],
    50,
  ],
  [
    "k  only /second is slow (the pending one is last)",
    async (r) => {
      if (path(r) === "/second") await Bun.sleep(1);
      return new Response(path(r));
    },
    [POST + GET2],
  ],
];

const statuses = (raw: string) => [...raw.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
const bodies = (raw: string) => ["/first", "/second"].filter((p) => raw.includes(`\r\n\r\n${p}`));
let failures = 0;
console.log(`Bun ${Bun.version} (${Bun.revision.slice(0, 10)}) ${process.platform} ${process.arch}`);
for (const [name, fetch, chunks, gapMs] of variants) {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch });
  const { raw, closedByServer } = await exchange(server.port as number, chunks, gapMs);
  await server.stop(true);
  const pass = bodies(raw).join() === "/first,/second";
  if (!pass) failures++;
  console.log(
    `${pass ? "PASS" : "FAIL"}  ${name.padEnd(58)} responses=[${statuses(raw).join(",")}] bytes=${raw.length}${closedByServer ? " server-closed" : ""}`,
  );
}

// Comparison: Bun's node:http server, answering on a later turn (setTimeout 1 ms).
for (const [name, chunks] of [
  ["POST+GET", POST + GET2],
  ["GET+GET", GET1 + GET2],
] as const) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => setTimeout(() => res.end(req.url), 1));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { raw, closedByServer } = await exchange((server.address() as net.AddressInfo).port, [chunks]);
  server.close();
  const pass = bodies(raw).join() === "/first,/second";
  if (!pass) failures++;
  console.log(
    `${pass ? "PASS" : "FAIL"}  ${`node:http createServer, setTimeout 1 ms, ${name}`.padEnd(58)} responses=[${statuses(raw).join(",")}] bytes=${raw.length}${closedByServer ? " server-closed" : ""}`,
  );
}
console.log(`${failures} variant(s) failed`);
process.exit(0);
