/**
 * Several instances on one PostgreSQL database, as real processes: what must hold across them
 * (SPEC.md, "Additions (second round)" → PostgreSQL). Each test starts on a database of its own.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { EMBEDDED_MIGRATIONS } from "../../src/db/postgres/client";
import { emptyPostgresDatabase, onPostgres } from "../support/helpers";
import { storedIds, writeLoad } from "../support/load";
import { DIRECT, type RunningServer, runCli, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const TOKEN_LINE = /^pst_[A-Za-z0-9_-]{43}$/gm;

async function startTogether(count: number, env: Record<string, string>, command?: string[]) {
  return Promise.all(Array.from({ length: count }, () => startServer(env, { command })));
}

async function stopAll(servers: RunningServer[]) {
  expect(await Promise.all(servers.map((server) => server.stop()))).toEqual(servers.map(() => 0));
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function post(url: string, token: string, json: string) {
  return fetch(`${url}/plants`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/json" },
    body: json,
  });
}

/** Three instances on a fresh empty database; the first-start token, whichever printed it. */
async function threeInstances(extra: Record<string, string> = {}) {
  const url = await emptyPostgresDatabase();
  const env = { DATABASE_URL: url, RATE_LIMIT_PER_MINUTE: "0", ...extra };
  const servers = await startTogether(3, env);
  const tokens = servers.flatMap((server) => server.startupOutput.match(TOKEN_LINE) ?? []);
  return { url, env, servers, tokens, token: tokens[0] as string };
}

describe.if(onPostgres)("three instances on one PostgreSQL database", () => {
  test("started at the same instant on an empty database: all ready, the schema made once, exactly one first-start token", async () => {
    const { url, servers, tokens } = await threeInstances();
    try {
      expect(tokens).toHaveLength(1);
      for (const server of servers) {
        const ready = await fetch(`${server.url}/readyz`);
        expect(ready.status).toBe(200);
        // The token works on every instance, not only the one that printed it.
        expect((await fetch(`${server.url}/plants`, { headers: bearer(tokens[0] as string) })).status).toBe(200);
      }
      const sql = new SQL(url, { max: 1 });
      const [{ rows }] = (await sql`SELECT count(*)::int AS rows FROM drizzle.__drizzle_migrations`) as [
        { rows: number },
      ];
      const [{ users }] = (await sql`SELECT count(*)::int AS users FROM users`) as [{ users: number }];
      await sql.close();
      expect(rows).toBe(EMBEDDED_MIGRATIONS.length);
      expect(users).toBe(1);
    } finally {
      await stopAll(servers);
    }
  });

  test("a plant created through one instance is listed through the others at once; deleted through another, it is gone everywhere", async () => {
    const { servers, token } = await threeInstances();
    const [a, b, c] = servers as [RunningServer, RunningServer, RunningServer];
    try {
      expect((await post(a.url, token, '{"id":9223372036854775807,"name":"Fern","tag":"shade"}')).status).toBe(200);
      for (const server of [b, c]) {
        const listed = await fetch(`${server.url}/plants`, { headers: bearer(token) });
        expect(await listed.json()).toEqual([{ name: "Fern", tag: "shade" }]);
        const one = await fetch(`${server.url}/plants/9223372036854775807`, { headers: bearer(token) });
        expect(await one.json()).toEqual({ name: "Fern", tag: "shade" });
      }
      expect((await post(b.url, token, '{"id":9223372036854775807,"name":"Other"}')).status).toBe(409);
      const deleted = await fetch(`${c.url}/plants/9223372036854775807`, { method: "DELETE", headers: bearer(token) });
      expect(deleted.status).toBe(204);
      for (const server of servers) {
        expect(await (await fetch(`${server.url}/plants`, { headers: bearer(token) })).json()).toEqual([]);
      }
    } finally {
      await stopAll(servers);
    }
  });

  test("a token revoked with the CLI fails on every instance from its next request", async () => {
    const { env, servers } = await threeInstances();
    try {
      const created = await runCli(["token", "create", "--user", "alice"], env);
      expect(created.code).toBe(0);
      const alice = created.stdout.trimEnd().split("\n").at(-1) as string;
      for (const server of servers) {
        expect((await fetch(`${server.url}/plants`, { headers: bearer(alice) })).status).toBe(200);
      }
      const listing = await runCli(["token", "list"], env);
      const id = listing.stdout.match(/^(\d+)\s+alice\s/m)?.[1] as string;
      expect(id).toBeDefined();
      expect((await runCli(["token", "revoke", id], env)).code).toBe(0);
      for (const server of servers) {
        const after = await fetch(`${server.url}/plants`, { headers: bearer(alice) });
        expect(after.status).toBe(401);
        expect(after.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
      }
    } finally {
      await stopAll(servers);
    }
  });

  test("60 racing creates of one id spread over three instances: one 200 and 59 × 409, and the stored plant is the winner's", async () => {
    const { servers, token } = await threeInstances();
    try {
      const answers = await Promise.all(
        Array.from({ length: 60 }, async (_, i) => {
          const response = await post(
            (servers[i % 3] as RunningServer).url,
            token,
            `{"id":-9223372036854775808,"name":"racer ${i}"}`,
          );
          return { status: response.status, body: (await response.json()) as { name?: string; error?: number } };
        }),
      );
      const won = answers.filter((answer) => answer.status === 200);
      const lost = answers.filter((answer) => answer.status === 409);
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(59);
      for (const answer of lost) expect(answer.body.error).toBe(409);
      for (const server of servers) {
        const stored = await fetch(`${server.url}/plants/-9223372036854775808`, { headers: bearer(token) });
        expect(await stored.json()).toEqual({ name: won[0]?.body.name as string });
      }
    } finally {
      await stopAll(servers);
    }
  });

  test("the per-token limit counts across instances: its budget is spent once, whichever instance answers", async () => {
    // 12 a minute refills one request every 5 s: the test's requests all fall well within one.
    const { servers, token } = await threeInstances({ RATE_LIMIT_PER_MINUTE: "12" });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const response = await fetch(`${(servers[i % 3] as RunningServer).url}/plants`, { headers: bearer(token) });
        statuses.push(response.status);
      }
      expect(statuses).toEqual(Array(12).fill(200));
      for (const server of servers) {
        const refused = await fetch(`${server.url}/plants`, { headers: bearer(token) });
        expect(refused.status).toBe(429);
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        expect(((await refused.json()) as { error: number }).error).toBe(429);
      }
    } finally {
      await stopAll(servers);
    }
  });

  test("kill -9 of one instance under write load loses no acknowledged write; the others go on", async () => {
    const url = await emptyPostgresDatabase();
    const env = { DATABASE_URL: url, RATE_LIMIT_PER_MINUTE: "0" };
    // Started directly, so SIGKILL reaches the server and not a `bun run` parent.
    const servers = await startTogether(3, env, DIRECT);
    const token = servers.flatMap((server) => server.startupOutput.match(TOKEN_LINE) ?? [])[0] as string;
    const [victim, ...survivors] = servers as [RunningServer, RunningServer, RunningServer];
    const urls = servers.map((server) => server.url);
    const load = writeLoad(urls, token, { workers: 12 });
    try {
      await until(async () => load.acknowledged.length, { holds: (n) => n >= 300, timeoutMs: 10_000 });
      victim.kill("SIGKILL");
      expect(await victim.exited).not.toBe(0);
      urls.splice(urls.indexOf(victim.url), 1);
      const atKill = load.acknowledged.length;
      await until(async () => load.acknowledged.length, { holds: (n) => n >= atKill + 300, timeoutMs: 10_000 });
    } finally {
      await load.stop();
    }
    try {
      expect(load.wrong).toEqual([]);
      expect(load.refused).toEqual([]);
      const stored = await storedIds(survivors[0].url, token);
      expect(load.acknowledged.filter((id) => !stored.has(id))).toEqual([]);
      // Nothing stored that was never sent: every row is acknowledged or was cut off unanswered.
      const sent = new Set([...load.acknowledged, ...load.unanswered]);
      expect([...stored].filter((id) => !sent.has(id))).toEqual([]);
      // A create that was cut off is safe to retry: 200 if it did not land, 409 if it did.
      for (const id of load.unanswered) {
        const retried = await post(survivors[1].url, token, `{"id":${id},"name":"p${id}"}`);
        expect(retried.status).toBe(stored.has(id) ? 409 : 200);
      }
    } finally {
      await stopAll(survivors);
    }
  });
});
