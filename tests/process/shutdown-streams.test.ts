import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { freshPostgresDatabase, onPostgres } from "../support/helpers";
import { DIRECT, scratchDir, startServer } from "../support/process";
import { openRaw, wholeResponse } from "../support/raw-http";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { bootstrapToken } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/** Five chunks of the list's answer: streamed, not sent in one piece. */
const PLANTS = 5_000;
const CONNECTIONS = 50;
const SHUTDOWN_TIMEOUT_MS = 10_000;

let scratch: ReturnType<typeof scratchDir>;
let env: Record<string, string>;
let token: string;

beforeAll(async () => {
  scratch = scratchDir();
  env = {
    DATABASE_URL: onPostgres ? await freshPostgresDatabase() : join(scratch.dir, "plants.sqlite"),
    RATE_LIMIT_PER_MINUTE: "0",
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
  };
  const server = await startServer(env, { command: DIRECT });
  token = bootstrapToken(server);
  let next = 1;
  const create = async () => {
    for (let id = next++; id <= PLANTS; id = next++) {
      const response = await fetch(`${server.url}/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: `{"id":${id},"name":"p${id}"}`,
      });
      expect(response.status).toBe(200);
    }
  };
  await Promise.all(Array.from({ length: 16 }, create));
  expect(await server.stop()).toBe(0);
  // 5,000 creates over HTTP: on a busy machine, longer than one test's budget.
}, 4 * SLOW_TEST_TIMEOUT_MS);
afterAll(() => scratch.cleanup());

describe("a graceful stop drains streamed lists", () => {
  // SIGTERM as the requests are being read, as their first chunks are sent, and mid-stream.
  for (const momentMs of [0, 10, 30]) {
    test(`${CONNECTIONS} keep-alive connections each reading the whole list, SIGTERM ${momentMs} ms after they asked: every answer whole`, async () => {
      const server = await startServer(env, { command: DIRECT });
      const connections = await Promise.all(Array.from({ length: CONNECTIONS }, () => openRaw(server.url)));
      // Each connection has had an answer already: accepted, and kept alive.
      await Promise.all(
        connections.map(async (connection) => {
          await connection.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
          expect((await connection.response()).status).toBe(200);
        }),
      );
      const before = connections.map((connection) => connection.received().length);
      const list = `GET /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n\r\n`;
      await Promise.all(connections.map((connection) => connection.write(list)));
      await Bun.sleep(momentMs);
      server.kill("SIGTERM");

      expect(await server.exited).toBe(0);
      await Promise.all(connections.map((connection) => connection.closed(5_000)));
      const plantsAnswered = connections.map((connection, i) => {
        const answer = wholeResponse(connection.received().slice(before[i]));
        if (answer?.status !== 200) return answer ? `status ${answer.status}` : "cut off";
        return (JSON.parse(answer.body) as unknown[]).length;
      });
      expect(plantsAnswered).toEqual(Array(CONNECTIONS).fill(PLANTS));
      expect(await server.output()).not.toContain("still in flight at the shutdown deadline");
    });
  }
});
