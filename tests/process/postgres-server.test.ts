import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { withoutPassword } from "../../src/config";
import { emptyPostgresDatabase, onPostgres } from "../support/helpers";
import { type RunningServer, runCli, runToExit, startServer } from "../support/process";
import { parsePrometheusText, type Sample } from "../support/prometheus";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/*
 * The real server process (`bun run start`) on PostgreSQL, from an empty database on; SQLite's
 * counterparts are server.test.ts, ops.test.ts and startup.test.ts.
 */

const TOKEN = /^pst_[A-Za-z0-9_-]{43}$/gm;
const MAX_ID = "9223372036854775807";

let server: RunningServer | undefined;
afterEach(async () => {
  // A test that failed half-way leaves no server behind.
  if (server) {
    server.kill("SIGKILL");
    await server.exited;
    server = undefined;
  }
});

/** Stops the test's server with SIGTERM and returns its exit code. */
async function stop(): Promise<number> {
  const running = server as RunningServer;
  server = undefined;
  return running.stop();
}

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1) ?? "";
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function sample(samples: Sample[], name: string, labels: Record<string, string>): Sample | undefined {
  return samples.find(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );
}

/** A port nothing listens on: the OS picked it free, and the listener is closed again. */
function closedPort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

/** A port that takes connections and never says a word, as a hung server or a black hole would. */
function silentListener() {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  return { port: listener.port, close: () => listener.stop(true) };
}

describe.if(onPostgres)("the real server process on PostgreSQL", () => {
  test("first start on an empty database: one token, the service works, SIGTERM exits 0; a second start prints none", async () => {
    const url = await emptyPostgresDatabase();
    const env = { DATABASE_URL: url, METRICS_PORT: "0" };
    server = await startServer(env);
    const tokens = server.startupOutput.match(TOKEN) ?? [];
    expect(tokens).toHaveLength(1);
    const token = tokens[0] as string;
    expect(server.startupOutput).toContain('First start: created user "admin"');
    const auth = bearer(token);

    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const created = await fetch(`${server.url}/plants`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: `{"id":${MAX_ID},"name":"Fern","tag":"shade"}`,
    });
    expect(created.status).toBe(200);
    expect(await created.json()).toEqual({ name: "Fern", tag: "shade" });
    // Exact past 2^53: the neighbouring id, which a float would round to the same number, is not there.
    expect(await (await fetch(`${server.url}/plants/${MAX_ID}`, { headers: auth })).json()).toEqual({
      name: "Fern",
      tag: "shade",
    });
    expect((await fetch(`${server.url}/plants/9223372036854775806`, { headers: auth })).status).toBe(404);
    const stored = new SQL(url, { max: 1 });
    expect(await stored`SELECT id::text AS id, name, tag FROM plants`).toEqual([
      { id: MAX_ID, name: "Fern", tag: "shade" },
    ]);
    await stored.close();
    expect(await (await fetch(`${server.url}/plants?limit=10`, { headers: auth })).json()).toEqual([
      { name: "Fern", tag: "shade" },
    ]);
    expect((await fetch(`${server.url}/plants/${MAX_ID}`, { method: "DELETE", headers: auth })).status).toBe(204);
    expect(await (await fetch(`${server.url}/plants`, { headers: auth })).json()).toEqual([]);

    const metricsUrl = /metrics at (http:\/\/\S+\/metrics)/.exec(server.startupOutput)?.[1] as string;
    const scraped = await fetch(metricsUrl);
    expect(scraped.status).toBe(200);
    const samples = await parsePrometheusText(await scraped.text());
    const count = (method: string, route: string, status: string) =>
      sample(samples, "http_requests_total", { method, route, status })?.value;
    expect(count("POST", "/plants", "200")).toBe(1);
    expect(count("GET", "/plants/:id", "200")).toBe(1);
    expect(count("GET", "/plants/:id", "404")).toBe(1);
    expect(count("DELETE", "/plants/:id", "204")).toBe(1);
    expect(count("GET", "/healthz", "200")).toBe(1);
    expect(sample(samples, "http_request_duration_seconds_count", { route: "/plants", method: "POST" })?.value).toBe(1);

    const running = server;
    expect(await stop()).toBe(0);
    expect(await running.output()).toContain("Stopped cleanly.");

    server = await startServer(env);
    expect(server.startupOutput).not.toMatch(/pst_/);
    expect((await fetch(`${server.url}/plants`, { headers: auth })).status).toBe(200);
    expect(await stop()).toBe(0);
  });

  test("a token revoked with the CLI gets 401 on its very next request", async () => {
    const env = { DATABASE_URL: await emptyPostgresDatabase() };
    server = await startServer(env);
    const created = await runCli(["token", "create", "--user", "alice"], env);
    expect(created.code).toBe(0);
    const token = lastLine(created.stdout);
    expect(token).toMatch(TOKEN);
    expect((await fetch(`${server.url}/plants`, { headers: bearer(token) })).status).toBe(200);

    const listing = await runCli(["token", "list"], env);
    const id = /^(\d+)\s+alice\s/m.exec(listing.stdout)?.[1] as string;
    expect(id).toBeDefined();
    expect((await runCli(["token", "revoke", id], env)).code).toBe(0);
    const after = await fetch(`${server.url}/plants`, { headers: bearer(token) });
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    expect(await stop()).toBe(0);
  });

  // A closed port refuses at once; a listener that never answers is cut off by DB_CONNECT_TIMEOUT_MS.
  // DB_STARTUP_TIMEOUT_MS=0 tries once (postgres-startup.test.ts has the retries).
  for (const [what, listen] of [
    ["a closed port", () => ({ port: closedPort(), close: () => {} })],
    ["a port that accepts and never answers", silentListener],
  ] as const) {
    test(`an unreachable database (${what}): one line naming it, no password, a non-zero exit within seconds`, async () => {
      const password = `pw-${crypto.randomUUID()}`;
      const listener = listen();
      const url = `postgres://plantstore:${password}@127.0.0.1:${listener.port}/plants`;
      const began = performance.now();
      try {
        // --silent: bun's own "$ command" and "exited with code" lines stay out of stderr.
        const { stdout, stderr, code } = await runToExit(["bun", "run", "--silent", "start"], {
          env: {
            PORT: "0",
            HOST: "127.0.0.1",
            DATABASE_URL: url,
            DB_CONNECT_TIMEOUT_MS: "500",
            DB_STARTUP_TIMEOUT_MS: "0",
          },
        });
        expect(code).not.toBe(0);
        expect((performance.now() - began) / 1000).toBeLessThan(5);
        expect(stdout).not.toContain("listening");
        expect(`${stdout}${stderr}`).not.toContain(password);
        const lines = stderr.trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toStartWith(`plant-store: cannot open the database at ${withoutPassword(url)}: `);
      } finally {
        listener.close();
      }
    });
  }
});
