/**
 * Updates with preconditions across two instances on one PostgreSQL database, as real processes
 * (SPEC.md, "Additions (third round)" → Update a plant). One SQLite file has one server, so the
 * same race through one instance is in tests/api/plants-update.test.ts.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { emptyPostgresDatabase, onPostgres } from "../support/helpers";
import { type RunningServer, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const TOKEN_LINE = /^pst_[A-Za-z0-9_-]{43}$/gm;
const ID = "9223372036854775807";

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Two instances started together on a fresh empty database, and the first-start token. */
async function twoInstances() {
  const url = await emptyPostgresDatabase();
  const env = { DATABASE_URL: url, RATE_LIMIT_PER_MINUTE: "0" };
  const servers = await Promise.all([startServer(env), startServer(env)]);
  const token = servers.flatMap((server) => server.startupOutput.match(TOKEN_LINE) ?? [])[0] as string;
  return { servers: servers as [RunningServer, RunningServer], token };
}

async function stopAll(servers: RunningServer[]) {
  expect(await Promise.all(servers.map((server) => server.stop()))).toEqual(servers.map(() => 0));
}

function create(url: string, token: string, json: string) {
  return fetch(`${url}/plants`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": "application/json" },
    body: json,
  });
}

const read = (url: string, token: string) => fetch(`${url}/plants/${ID}`, { headers: bearer(token) });

describe.if(onPostgres)("updates with If-Match across two instances on one PostgreSQL database", () => {
  test("the ETag of one plant is the same from both instances, and the same as POST returned", async () => {
    const { servers, token } = await twoInstances();
    const [a, b] = servers;
    try {
      const created = await create(a.url, token, `{"id":${ID},"name":"Fern","tag":"shade"}`);
      expect(created.status).toBe(200);
      const etag = created.headers.get("etag");
      expect(etag).toMatch(/^"[^"]+"$/);
      for (const server of [a, b]) {
        const one = await read(server.url, token);
        expect(one.status).toBe(200);
        expect(one.headers.get("etag")).toBe(etag);
        const unchanged = await fetch(`${server.url}/plants/${ID}`, {
          headers: { ...bearer(token), "if-none-match": etag as string },
        });
        expect(unchanged.status).toBe(304);
        expect(unchanged.headers.get("etag")).toBe(etag);
      }
    } finally {
      await stopAll(servers);
    }
  });

  test("20 PATCHes racing with one If-Match, split over both instances: one 200, 19 × 412, the winner's plant stored", async () => {
    const { servers, token } = await twoInstances();
    try {
      const created = await create(servers[0].url, token, `{"id":${ID},"name":"Fern","tag":"shade"}`);
      const etag = created.headers.get("etag") as string;
      const answers = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const response = await fetch(`${(servers[i % 2] as RunningServer).url}/plants/${ID}`, {
            method: "PATCH",
            headers: { ...bearer(token), "content-type": "application/merge-patch+json", "if-match": etag },
            body: `{"name":"racer ${i}"}`,
          });
          const body = (await response.json()) as { name?: string; tag?: string; error?: number; message?: string };
          return { status: response.status, etag: response.headers.get("etag"), body };
        }),
      );
      const won = answers.filter((answer) => answer.status === 200);
      const lost = answers.filter((answer) => answer.status === 412);
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(19);
      for (const answer of lost) expect(answer.body).toEqual({ error: 412, message: expect.any(String) });
      const winner = won[0] as (typeof answers)[number];
      expect(winner.body).toEqual({ name: expect.stringMatching(/^racer \d+$/), tag: "shade" });
      expect(winner.etag).not.toBe(etag);
      for (const server of servers) {
        const stored = await read(server.url, token);
        expect(await stored.json()).toEqual(winner.body);
        expect(stored.headers.get("etag")).toBe(winner.etag);
      }
    } finally {
      await stopAll(servers);
    }
  });
});
