// Bun.serve at the open-file limit: with the process out of descriptors and connections waiting
// in the listen backlog, accept() fails with EMFILE and the level-triggered listener wakes the
// loop again at once, so the process burns CPU and serves no new connection (a waiting /healthz
// times out) until connections close. A connection that never sends a request is held about
// 10 s whatever idleTimeout says, server.closeIdleConnections() and server.stop() leave it
// open, and Bun.serve has no connection-count hook or cap: from JavaScript nothing can shed
// such connections or refuse new ones. Bun's node:http server, which has an accept hook inside,
// enforces maxConnections and stays quiet. Upstream: oven-sh/bun#32705 (EMFILE back-off, open).
// Run: bun scripts/repro-fd-spin.ts   (PASS = under 10 % of a core and /healthz settled in 2 s)
import http from "node:http";
import net from "node:net";

const CONNECTIONS = 300;
const LIMIT = 128;
const WINDOW_MS = 2_000;
const variant = process.argv[2] === "--serve" ? process.argv[3] : undefined;

if (variant !== undefined) {
  // The server under test, started by the loop below under `ulimit`.
  const ok = () => new Response("ok");
  if (variant === "node-http") {
    const server = http.createServer((_request, response) => response.end("ok"));
    server.maxConnections = LIMIT / 2;
    server.listen(0, "127.0.0.1", () => console.log(`port ${(server.address() as net.AddressInfo).port}`));
  } else {
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ok });
    if (variant === "close-idle") setInterval(() => server.closeIdleConnections(), 100);
    console.log(`port ${server.port}`);
  }
} else {
  const variants: Array<[name: string, ulimit: string, serve: string, expected: "PASS" | "FAIL"]> = [
    ["a  Bun.serve, ulimit -n 128 (soft and hard)", `-n ${LIMIT}`, "bun-serve", "FAIL"],
    ["b  Bun.serve + closeIdleConnections() every 100 ms", `-n ${LIMIT}`, "close-idle", "FAIL"],
    ["c  Bun.serve, ulimit -Sn 128 (Bun raises soft to hard)", `-Sn ${LIMIT}`, "bun-serve", "PASS"],
    ["d  node:http, maxConnections 64, ulimit -n 128", `-n ${LIMIT}`, "node-http", "PASS"],
  ];
  console.log(`Bun ${Bun.version} (${Bun.revision.slice(0, 10)}) ${process.platform} ${process.arch}`);
  for (const [name, ulimit, serve, expected] of variants) {
    const result = await trial(ulimit, serve);
    const pass = result.cpu < 0.1 && result.healthz !== "no answer";
    console.log(
      `${pass ? "PASS" : "FAIL"}  ${name.padEnd(56)} cpu=${(result.cpu * 100).toFixed(0)}% of a core, /healthz ${result.healthz}, soft limit ${result.softLimit} (expected ${expected} on Bun 1.4.5)`,
    );
  }
}

/** Starts the server under `ulimit`, opens CONNECTIONS idle connections, measures its CPU and /healthz. */
async function trial(ulimit: string, serve: string) {
  const command = `ulimit ${ulimit}; exec "${process.execPath}" "${import.meta.path}" --serve ${serve}`;
  const child = Bun.spawn(["bash", "-c", command], { stdout: "pipe", stderr: "inherit" });
  const reader = child.stdout.getReader();
  let printed = "";
  while (!/port (\d+)/.test(printed)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the server exited: ${printed}`);
    printed += new TextDecoder().decode(value);
  }
  const port = Number(/port (\d+)/.exec(printed)?.[1]);
  const limits = await Bun.file(`/proc/${child.pid}/limits`).text();
  const softLimit = /Max open files\s+(\d+)/.exec(limits)?.[1];
  const sockets = Array.from({ length: CONNECTIONS }, () => net.connect(port, "127.0.0.1").on("error", () => {}));
  await Bun.sleep(500);
  const before = await cpuSeconds(child.pid);
  const started = performance.now();
  await Bun.sleep(WINDOW_MS);
  const cpu = ((await cpuSeconds(child.pid)) - before) / ((performance.now() - started) / 1000);
  const healthz = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
    (response) => `answered ${response.status}`,
    (error: Error) => (error.name === "TimeoutError" ? "no answer" : "refused at once"),
  );
  for (const socket of sockets) socket.destroy();
  child.kill();
  await child.exited;
  return { cpu, healthz, softLimit };
}

/** User and system CPU time of a process so far, from /proc/<pid>/stat (clock ticks of 10 ms). */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await Bun.file(`/proc/${pid}/stat`).text()).split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
