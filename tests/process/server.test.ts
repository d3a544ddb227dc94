import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { runCli, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
let env: Record<string, string>;

beforeEach(async () => {
  scratch = scratchDir();
  // A folder that does not exist yet: the server must create it.
  env = { DATABASE_URL: join(scratch.dir, "nested", "plants.sqlite") };
});
afterEach(() => scratch.cleanup());

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1) ?? "";

describe("the real server process", () => {
  test("first start prints one admin token, a later start prints none", async () => {
    const first = await startServer(env);
    const token = first.startupOutput.match(/^pst_[A-Za-z0-9_-]{43}$/m)?.[0];
    expect(token).toBeDefined();
    expect(first.startupOutput).toContain("Authorization: Bearer");
    const listed = await fetch(`${first.url}/plants`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.status).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await startServer(env);
    expect(second.startupOutput).not.toMatch(/pst_/);
    const again = await fetch(`${second.url}/plants`, { headers: { authorization: `Bearer ${token}` } });
    expect(again.status).toBe(200);
    expect(await second.stop()).toBe(0);
  });

  test("a CLI token does a create/list/delete round trip over HTTP, and revoking it locks it out", async () => {
    const server = await startServer(env);
    try {
      const created = await runCli(["token", "create", "--user", "alice"], env);
      expect(created.code).toBe(0);
      const token = lastLine(created.stdout);
      expect(token).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
      const auth = { authorization: `Bearer ${token}` };

      const post = await fetch(`${server.url}/plants`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: '{"id":9223372036854775807,"name":"Fern","tag":"shade"}',
      });
      expect(post.status).toBe(200);
      expect(await post.json()).toEqual({ name: "Fern", tag: "shade" });

      const list = await fetch(`${server.url}/plants?limit=10`, { headers: auth });
      expect(await list.json()).toEqual([{ name: "Fern", tag: "shade" }]);

      const del = await fetch(`${server.url}/plants/9223372036854775807`, { method: "DELETE", headers: auth });
      expect(del.status).toBe(204);
      expect(await (await fetch(`${server.url}/plants`, { headers: auth })).json()).toEqual([]);

      const listing = await runCli(["token", "list"], env);
      expect(listing.code).toBe(0);
      expect(listing.stdout).toContain("alice");
      expect(listing.stdout).not.toContain(token);
      expect(listing.stdout).not.toMatch(/pst_/);
      const aliceId = listing.stdout.match(/^(\d+)\s+alice\s/m)?.[1];
      expect(aliceId).toBeDefined();

      const revoked = await runCli(["token", "revoke", aliceId as string], env);
      expect(revoked.code).toBe(0);
      const after = await fetch(`${server.url}/plants`, { headers: auth });
      expect(after.status).toBe(401);
      expect(after.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
      expect((await runCli(["token", "list"], env)).stdout).toMatch(
        new RegExp(`^${aliceId}\\s+alice\\s.*revoked`, "m"),
      );
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test("invalid configuration stops start-up with one line and a non-zero exit", async () => {
    const proc = Bun.spawn(["bun", "src/index.ts"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { ...process.env, ...env, PORT: "not-a-port" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect(code).not.toBe(0);
    expect(stderr.trim().split("\n")).toEqual(["plant-store: PORT must be an integer between 0 and 65535"]);
  });
});

describe("the CLI", () => {
  test("rejects bad arguments with a usage message and exit code 2", async () => {
    const missingUser = await runCli(["token", "create"], env);
    expect(missingUser.code).toBe(2);
    expect(missingUser.stderr).toContain("--user");
    const badName = await runCli(["token", "create", "--user", "no spaces allowed"], env);
    expect(badName.code).toBe(2);
    const unknown = await runCli(["token", "revoke", "999"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no token with id 999");
  });
});
