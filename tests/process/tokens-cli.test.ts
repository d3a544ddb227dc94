/**
 * Tokens over the API and from the CLI, as real processes: the CLI's --scope and
 * --expires-in-days, the CLI and the API agreeing on every token, and on PostgreSQL two instances
 * agreeing from the next request. On the engine under test (a SQLite file, or a PostgreSQL
 * database of its own per test).
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { emptyPostgresDatabase, onPostgres } from "../support/helpers";
import { type RunningServer, runCli, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { TOKEN_PATTERN, userFromCli } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function environment(): Promise<Record<string, string>> {
  if (onPostgres) return { DATABASE_URL: await emptyPostgresDatabase(), RATE_LIMIT_PER_MINUTE: "0" };
  const scratch = scratchDir();
  cleanups.push(scratch.cleanup);
  return { DATABASE_URL: join(scratch.dir, "plants.sqlite"), RATE_LIMIT_PER_MINUTE: "0" };
}

async function started(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer(env);
  cleanups.push(async () => expect(await server.stop()).toBe(0));
  return server;
}

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1) ?? "";

function call(server: RunningServer, method: string, path: string, token: string, json?: unknown) {
  return fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(json === undefined ? {} : { "content-type": "application/json" }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
}

/** `token list`'s row for the token with this id, as its cells. */
async function listedRow(env: Record<string, string>, id: number | string): Promise<string[]> {
  const listing = await runCli(["token", "list"], env);
  expect(listing.code).toBe(0);
  const row = listing.stdout.split("\n").find((line) => line.startsWith(`${id} `));
  if (!row) throw new Error(`token ${id} is not in token list: ${listing.stdout}`);
  return row.trim().split(/\s{2,}/);
}

describe("tokens from the CLI and over the API", () => {
  test("token create --scope … --expires-in-days: the token can do only that, and token list shows both", async () => {
    const env = await environment();
    const created = await runCli(
      ["token", "create", "--user", "alice", "--scope", "plants:read", "--scope", "webhooks", "--expires-in-days", "7"],
      env,
    );
    expect(created.code).toBe(0);
    const token = lastLine(created.stdout);
    expect(token).toMatch(TOKEN_PATTERN);
    const id = /Created token (\d+)/.exec(created.stdout)?.[1] as string;
    const [, user, name, scopes, createdAt, expiresAt, lastUsed, status] = await listedRow(env, id);
    expect([user, name, scopes, lastUsed, status]).toEqual(["alice", "cli", "plants:read webhooks", "-", "active"]);
    const days = (Date.parse(expiresAt as string) - Date.parse(createdAt as string)) / 86_400_000;
    expect(days).toBeCloseTo(7, 3);

    const server = await started(env);
    expect((await call(server, "GET", "/plants", token)).status).toBe(200);
    expect((await call(server, "GET", "/webhooks", token)).status).toBe(200);
    const refused = await call(server, "POST", "/plants", token, { id: 1, name: "Fern" });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("www-authenticate")).toBe('Bearer error="insufficient_scope", scope="plants:write"');
    // Without --scope and --expires-in-days: every scope, no expiry.
    const full = await userFromCli(env, "bob");
    expect((await call(server, "POST", "/plants", full, { id: 1, name: "Fern" })).status).toBe(200);
  });

  test("an unknown --scope or a bad --expires-in-days is refused with one line and a non-zero exit; nothing is made", async () => {
    const env = await environment();
    await userFromCli(env, "alice");
    const before = await runCli(["token", "list"], env);
    for (const args of [
      ["--scope", "plants:admin"],
      ["--scope", "plants:read", "--scope", ""],
      ["--expires-in-days", "0"],
      ["--expires-in-days", "3651"],
      ["--expires-in-days", "1.5"],
    ]) {
      const refused = await runCli(["token", "create", "--user", "alice", ...args], env);
      expect(refused.code).not.toBe(0);
      // bun run's own lines (the script it runs, its exit) aside.
      expect(refused.stdout).toBe("");
      expect(
        refused.stderr
          .trim()
          .split("\n")
          .filter((line) => !line.startsWith("error: script") && !line.startsWith("$ ")),
      ).toHaveLength(1);
      expect(refused.stderr).toContain(args[0] === "--scope" ? "--scope" : "--expires-in-days");
    }
    expect((await runCli(["token", "list"], env)).stdout).toBe(before.stdout);
  });

  test("the CLI and the API agree on every token: made by one, listed and revoked by the other", async () => {
    const env = await environment();
    const admin = await userFromCli(env, "alice");
    const server = await started(env);

    const minted = await call(server, "POST", "/tokens", admin, {
      name: "dashboard",
      scopes: ["plants:read"],
      expiresInDays: 30,
    });
    expect(minted.status).toBe(201);
    const dashboard = (await minted.json()) as { id: number; token: string; expiresAt: string };
    const [, user, name, scopes, , expiresAt, , status] = await listedRow(env, dashboard.id);
    expect([user, name, scopes, expiresAt, status]).toEqual([
      "alice",
      "dashboard",
      "plants:read",
      dashboard.expiresAt,
      "active",
    ]);

    // Revoked by the CLI: refused over the API from its next request.
    expect((await call(server, "GET", "/plants", dashboard.token)).status).toBe(200);
    expect((await runCli(["token", "revoke", String(dashboard.id)], env)).code).toBe(0);
    expect((await call(server, "GET", "/plants", dashboard.token)).status).toBe(401);

    // Revoked over the API: the CLI lists it revoked, and the API lists the CLI's token.
    const script = await userFromCli(env, "alice");
    const listed = (await (await call(server, "GET", "/tokens", admin)).json()) as Array<{ id: number; name: string }>;
    const scriptId = listed.at(-1)?.id as number;
    expect(listed.map((token) => token.name)).toEqual(["cli", "dashboard", "cli"]);
    expect((await call(server, "DELETE", `/tokens/${scriptId}`, admin)).status).toBe(204);
    expect((await listedRow(env, scriptId)).at(-1)).toMatch(/^revoked /);
    expect((await call(server, "GET", "/plants", script)).status).toBe(401);
  });
});

test("a token's name cannot drive the operator's terminal: token list writes control characters escaped", async () => {
  const env = await environment();
  const admin = await userFromCli(env, "alice");
  const server = await started(env);
  const name = "\u001b[2J\u001b[31mred\nsecond line\u009b";
  const minted = await call(server, "POST", "/tokens", admin, { name, scopes: ["plants:read"] });
  expect(minted.status).toBe(201);
  const { id } = (await minted.json()) as { id: number };
  const listing = await runCli(["token", "list"], env);
  const controls = [...listing.stdout].filter((c) => c !== "\n" && (c < " " || (c >= "\u007f" && c <= "\u009f")));
  expect(controls).toEqual([]);
  expect(await listedRow(env, id)).toContain("\\u001b[2J\\u001b[31mred\\u000asecond line\\u009b");
});

describe.if(onPostgres)("tokens on two PostgreSQL instances", () => {
  test("a token made on one instance works on the other; revoked on one, it fails on the other from its next request", async () => {
    const env = await environment();
    const admin = await userFromCli(env, "alice");
    const [a, b] = await Promise.all([started(env), started(env)]);
    const first = a as RunningServer;
    const second = b as RunningServer;
    const minted = await call(first, "POST", "/tokens", admin, { name: "roaming", scopes: ["plants:read", "tokens"] });
    expect(minted.status).toBe(201);
    const { id, token } = (await minted.json()) as { id: number; token: string };
    expect((await call(second, "GET", "/plants", token)).status).toBe(200);
    expect((await call(second, "POST", "/plants", token, { id: 1, name: "Fern" })).status).toBe(403);
    const listedOnSecond = (await (await call(second, "GET", "/tokens", token)).json()) as Array<{
      id: number;
      current: boolean;
    }>;
    expect(listedOnSecond.filter((entry) => entry.current).map((entry) => entry.id)).toEqual([id]);
    expect((await call(second, "DELETE", `/tokens/${id}`, admin)).status).toBe(204);
    const after = await call(first, "GET", "/plants", token);
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
  });
});
