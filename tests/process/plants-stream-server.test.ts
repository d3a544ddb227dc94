import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { closeDatabase, openDatabase } from "../../src/db/sqlite/client";
import { onSqlite } from "../support/helpers";
import { type RunningServer, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { type TestUser, usersOnFile } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const PLANTS = 500_000;
/**
 * Before answers were streamed, this list raised the server's peak RSS by about 90 MiB (its
 * whole answer built at once); streamed to a reader that reads nothing, by a few MiB.
 */
const MAX_GROWTH_KIB = 32 * 1024;

let scratch: ReturnType<typeof scratchDir>;
let server: RunningServer | undefined;

beforeEach(() => {
  scratch = scratchDir();
});
afterEach(async () => {
  await server?.stop();
  server = undefined;
  scratch.cleanup();
});

/** A store whose one user owns `count` plants; returns that user's token. */
async function seedStore(path: string, count: number): Promise<string> {
  const [{ token }] = (await usersOnFile(path)) as [TestUser];
  const { sqlite } = openDatabase({ path, synchronous: "NORMAL" });
  const insert = sqlite.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (1, ?, ?, ?)");
  sqlite.transaction(() => {
    for (let id = 1; id <= count; id++) insert.run(id, `Plant ${id}`, id % 2 === 0 ? "seed" : null);
  })();
  closeDatabase(sqlite);
  return token;
}

const memoryKiB = async (pid: number, field: "VmHWM" | "VmRSS") =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(await Bun.file(`/proc/${pid}/status`).text())?.[1]);

/** The server's own process: `bun run start` runs it as its one child. */
async function serverPid(running: RunningServer): Promise<number> {
  const children = await Bun.file(`/proc/${running.pid}/task/${running.pid}/children`).text();
  const pid = Number(children.trim().split(" ")[0]);
  expect(pid).toBeGreaterThan(0);
  return pid;
}

/** A connection that sends one request and then reads nothing, so the server meets backpressure. */
async function stalledRequest(url: string, request: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = await new Promise<Socket>((resolve, reject) => {
    const s = connect({ host: hostname, port: Number(port) }, () => resolve(s));
    s.once("error", reject);
  });
  socket.pause();
  socket.on("error", () => {});
  socket.write(request);
  return socket;
}

test.if(onSqlite)(
  "a whole list read by a client that stops reading keeps the server's memory flat; it may leave at any time",
  async () => {
    const path = join(scratch.dir, "plants.sqlite");
    const token = await seedStore(path, PLANTS);
    server = await startServer({ DATABASE_URL: path, RATE_LIMIT_PER_MINUTE: "0" });
    const auth = { authorization: `Bearer ${token}` };
    expect((await fetch(`${server.url}/plants?limit=20`, { headers: auth })).status).toBe(200);
    const pid = await serverPid(server);
    // The high-water mark starts again from the present RSS, so start-up's own peak is left out.
    await Bun.write(`/proc/${pid}/clear_refs`, "5");
    const idle = await memoryKiB(pid, "VmRSS");

    const stalled = await stalledRequest(
      server.url,
      `GET /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nX-Request-Id: stalled-list\r\n\r\n`,
    );
    // The access line is written once the handler has returned its answer.
    await server.waitForOutput(/"reqId":"stalled-list"[^\n]*"status":200/);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const growth = (await memoryKiB(pid, "VmHWM")) - idle;
    expect(growth).toBeLessThan(MAX_GROWTH_KIB);

    stalled.destroy();
    expect((await fetch(`${server.url}/plants?limit=1`, { headers: auth })).status).toBe(200);
    expect(await server.stop()).toBe(0);
    const output = await server.output();
    // Neither a logged fault nor Bun's own report of an error.
    expect(output).not.toMatch(/"level":"(warn|error|fatal)"|^error:/m);
  },
);
