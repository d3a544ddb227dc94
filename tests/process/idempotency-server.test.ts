/**
 * `Idempotency-Key` where processes matter (SPEC.md, "Retrying a create safely"): a kept answer
 * outlives a restart on the same database (both engines), and holds across two instances on one
 * PostgreSQL database. Through one app: tests/api/plants-idempotency.test.ts.
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { keptAnswer as answer, ENGINE, emptyPostgresDatabase, onPostgres } from "../support/helpers";
import { type RunningServer, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const TOKEN_LINE = /^pst_[A-Za-z0-9_-]{43}$/gm;
const BIG = "-9223372036854775808";

function create(url: string, token: string, json: string, key: string) {
  return fetch(`${url}/plants`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": key },
    body: json,
  });
}

const ids = async (url: string, token: string) =>
  (await fetch(`${url}/plants?fields=id`, { headers: { authorization: `Bearer ${token}` } })).text();

let scratch: ReturnType<typeof scratchDir>;
beforeEach(() => {
  scratch = scratchDir();
});
afterEach(() => scratch.cleanup());

describe(`Idempotency-Key across processes (${ENGINE})`, () => {
  test("a kept answer is replayed, byte for byte, by the server restarted on the same database", async () => {
    const env = {
      DATABASE_URL: onPostgres ? await emptyPostgresDatabase() : join(scratch.dir, "plants.sqlite"),
      RATE_LIMIT_PER_MINUTE: "0",
    };
    const first = await startServer(env);
    const token = first.startupOutput.match(TOKEN_LINE)?.[0] as string;
    const json = `{"id":${BIG},"name":"Fern","tag":"shade"}`;
    const original = await answer(await create(first.url, token, json, "across-restart"));
    expect(original).toMatchObject({ status: 200, replayed: null, body: '{"name":"Fern","tag":"shade"}' });
    expect(await first.stop()).toBe(0);

    const second = await startServer(env);
    try {
      expect(await answer(await create(second.url, token, json, "across-restart"))).toEqual({
        ...original,
        replayed: "true",
      });
      expect(await ids(second.url, token)).toBe(`[{"id":${BIG}}]`);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });
});

describe.if(onPostgres)("Idempotency-Key across two instances on one PostgreSQL database", () => {
  test("a create through one instance is replayed through the other; another body there is a 422", async () => {
    const url = await emptyPostgresDatabase();
    const env = { DATABASE_URL: url, RATE_LIMIT_PER_MINUTE: "0" };
    const servers = (await Promise.all([startServer(env), startServer(env)])) as [RunningServer, RunningServer];
    const token = servers.flatMap((server) => server.startupOutput.match(TOKEN_LINE) ?? [])[0] as string;
    const [a, b] = servers;
    try {
      const json = '{"id":1,"name":"Fern"}';
      const original = await answer(await create(a.url, token, json, "one"));
      expect(original.status).toBe(200);
      expect(await answer(await create(b.url, token, json, "one"))).toEqual({ ...original, replayed: "true" });
      const other = await create(b.url, token, '{"id":2,"name":"Palm"}', "one");
      expect(other.status).toBe(422);

      // 20 at once with a new key, split over both: one plant, one fresh answer, the rest
      // replays of it or 409s with Retry-After.
      const racing = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const response = await create(servers[i % 2]?.url as string, token, '{"id":3,"name":"Ivy"}', "race");
          return { ...(await answer(response)), retryAfter: response.headers.get("retry-after") };
        }),
      );
      const fresh = racing.filter((r) => r.status === 200 && r.replayed === null);
      expect(fresh).toHaveLength(1);
      for (const r of racing) {
        if (r === fresh[0]) continue;
        if (r.status === 200) expect(r.body).toBe((fresh[0] as (typeof racing)[0]).body);
        else expect({ status: r.status, retryAfter: r.retryAfter }).toEqual({ status: 409, retryAfter: "1" });
      }
      expect(await ids(a.url, token)).toBe('[{"id":1},{"id":3}]');
    } finally {
      expect(await Promise.all(servers.map((server) => server.stop()))).toEqual([0, 0]);
    }
  });
});
