import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { holdRequestInFlight } from "../support/held-request";
import { scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { bootstrapToken } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
let dbPath: string;
beforeEach(async () => {
  scratch = scratchDir();
  dbPath = join(scratch.dir, "plants.sqlite");
});
afterEach(() => scratch.cleanup());

const tokenOf = bootstrapToken;

describe("graceful shutdown", () => {
  test("SIGTERM lets a request in flight finish, checkpoints the WAL and exits 0", async () => {
    const server = await startServer({ DATABASE_URL: dbPath, RATE_LIMIT_PER_MINUTE: "0", METRICS_PORT: "0" });
    const token = tokenOf(server);
    const raw = await holdRequestInFlight(server, token);

    server.kill("SIGTERM");
    await server.waitForOutput(/SIGTERM received/);
    const body = '"name":"Held","tag":"until the end"}';
    await raw.write(`${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    const response = await raw.response();
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ name: "Held", tag: "until the end" });
    expect(response.headers.connection).toBe("close");
    await raw.closed(5000);

    expect(await server.exited).toBe(0);
    expect(await server.output()).toContain("Stopped cleanly.");
    // The WAL was folded into the main file: nothing is left to recover.
    expect(!existsSync(`${dbPath}-wal`) || statSync(`${dbPath}-wal`).size === 0).toBe(true);
    const db = new Database(dbPath, { readonly: true });
    expect(db.query("SELECT id, name, tag FROM plants").all()).toEqual([
      { id: 42, name: "Held", tag: "until the end" },
    ]);
    db.close();
  });

  test("Ctrl-C under bun run start (SIGINT to the whole process group, so twice to the server) still drains", async () => {
    // The terminal signals every process of the group, and `bun run` forwards its own SIGINT:
    // the server gets two at once, and must not read the second as "exit now".
    const server = await startServer(
      { DATABASE_URL: dbPath, RATE_LIMIT_PER_MINUTE: "0", METRICS_PORT: "0" },
      { group: true },
    );
    const raw = await holdRequestInFlight(server, tokenOf(server));
    server.killGroup("SIGINT");
    await server.waitForOutput(/SIGINT received/);
    const body = '"name":"Held"}';
    await raw.write(`${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    expect((await raw.response()).status).toBe(200);
    expect(await server.exited).toBe(0);
    expect(await server.output()).toContain("Stopped cleanly.");
    const db = new Database(dbPath, { readonly: true });
    expect(db.query("SELECT id, name FROM plants").all()).toEqual([{ id: 42, name: "Held" }]);
    db.close();
  });

  test("SIGINT with nothing in flight exits 0 at once", async () => {
    const server = await startServer({ DATABASE_URL: dbPath });
    server.kill("SIGINT");
    expect(await server.exited).toBe(0);
  });

  test("a request that never finishes is cut off at SHUTDOWN_TIMEOUT_MS and the exit is still clean", async () => {
    const server = await startServer({
      DATABASE_URL: dbPath,
      SHUTDOWN_TIMEOUT_MS: "300",
      METRICS_PORT: "0",
      RATE_LIMIT_PER_MINUTE: "0",
    });
    const raw = await holdRequestInFlight(server, tokenOf(server));
    server.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(await server.output()).toContain("1 request(s) still in flight at the shutdown deadline");
    await raw.end();
    const db = new Database(dbPath, { readonly: true });
    expect(db.query("SELECT count(*) AS n FROM plants").get()).toEqual({ n: 0 });
    expect(db.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    db.close();
  });
});
