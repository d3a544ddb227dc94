/**
 * Real concurrency against one real server process on a file database: requests are fired
 * together with Promise.all over fetch (keep-alive connections), and the outcomes must be
 * exactly what serialised execution would allow.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { onSqlite } from "../support/helpers";
import { type RunningServer, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { userFromCli } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

let scratch: ReturnType<typeof scratchDir>;
let server: RunningServer;
let env: Record<string, string>;

/** Each test gets its own user, so its listing holds only its own plants. */
const tokenFor = (user: string) => userFromCli(env, user);

function create(token: string, id: bigint, name: string, tag?: string) {
  // The id goes out as a bare JSON integer, digit for digit.
  const tagPart = tag === undefined ? "" : `,"tag":${JSON.stringify(tag)}`;
  return fetch(`${server.url}/plants`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: `{"id":${id},"name":${JSON.stringify(name)}${tagPart}}`,
  });
}

function remove(token: string, id: bigint) {
  return fetch(`${server.url}/plants/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
}

async function list(token: string): Promise<Array<{ name: string; tag?: string }>> {
  const response = await fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as Array<{ name: string; tag?: string }>;
}

function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const byBigint = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

// A server process on a SQLite file: SQLite only.
describe.if(onSqlite)("one server, many simultaneous requests", () => {
  beforeAll(async () => {
    scratch = scratchDir();
    env = { DATABASE_URL: join(scratch.dir, "plants.sqlite"), RATE_LIMIT_PER_MINUTE: "0" };
    server = await startServer(env);
  });

  afterAll(async () => {
    try {
      if (server) expect(await server.stop()).toBe(0);
    } finally {
      scratch?.cleanup();
    }
  });

  test("50 simultaneous creates of the same id: exactly one 200, 49 × 409, one row holding the winner's data", async () => {
    const token = await tokenFor("race-same-id");
    const id = INT64_MAX - 3n;
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, n) => create(token, id, `contender ${n}`, n % 2 === 0 ? `even ${n}` : undefined)),
    );
    const bodies = await Promise.all(responses.map((response) => response.json()));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(49);

    const winner = statuses.indexOf(200);
    const expected =
      winner % 2 === 0 ? { name: `contender ${winner}`, tag: `even ${winner}` } : { name: `contender ${winner}` };
    expect(bodies[winner]).toEqual(expected);
    for (const [n, body] of bodies.entries()) {
      if (n !== winner) expect(body).toMatchObject({ error: 409 });
    }
    expect(await list(token)).toEqual([expected]);
  });

  test("300 simultaneous distinct creates, ids in random order across the int64 range: all 200, listed by id ascending", async () => {
    const token = await tokenFor("race-distinct");
    const ids = new Set<bigint>();
    for (let n = 0n; n < 40n; n++) {
      ids.add(INT64_MAX - n);
      ids.add(INT64_MIN + n);
      ids.add(2n ** 53n - 20n + n); // around the float-exact boundary, where rounding would merge ids
      ids.add(-(2n ** 53n) + 20n - n);
      ids.add(n - 20n);
    }
    while (ids.size < 300) {
      const magnitude = BigInt(Math.floor(Math.random() * 2 ** 52)) * BigInt(1 + Math.floor(Math.random() * 2048));
      ids.add(Math.random() < 0.5 ? magnitude : -magnitude);
    }
    expect(ids.size).toBe(300);
    const order = shuffled([...ids]);
    const responses = await Promise.all(order.map((id) => create(token, id, `plant ${id}`, `t${id % 7n}`)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const bodies = await Promise.all(responses.map((response) => response.json()));
    expect(bodies).toEqual(order.map((id) => ({ name: `plant ${id}`, tag: `t${id % 7n}` })));

    const expected = [...ids].sort(byBigint).map((id) => ({ name: `plant ${id}`, tag: `t${id % 7n}` }));
    expect(await list(token)).toEqual(expected);
  });

  test("deletes racing creates on 10 ids: every outcome serialisable, final state matches the successes", async () => {
    const token = await tokenFor("race-create-delete");
    const ids = Array.from({ length: 10 }, (_, n) => (n % 2 === 0 ? INT64_MAX - BigInt(n) : BigInt(-n)));
    // Half the ids start present, so early deletes can succeed too.
    for (const id of ids.filter((_, n) => n < 5)) expect((await create(token, id, `plant ${id}`)).status).toBe(200);
    const initiallyPresent = new Set(ids.slice(0, 5));

    type Op = { kind: "create" | "delete"; id: bigint };
    const ops: Op[] = shuffled(
      Array.from({ length: 400 }, (_, n) => ({
        kind: n % 2 === 0 ? ("create" as const) : ("delete" as const),
        id: ids[Math.floor(n / 2) % ids.length] as bigint,
      })),
    );
    const statuses = await Promise.all(
      ops.map(async (op) => {
        const response =
          op.kind === "create" ? await create(token, op.id, `plant ${op.id}`) : await remove(token, op.id);
        await response.arrayBuffer();
        return response.status;
      }),
    );

    const tally = new Map(ids.map((id) => [id, { created: 0, deleted: 0 }]));
    const unexpected: string[] = [];
    for (const [n, op] of ops.entries()) {
      const status = statuses[n];
      const counts = tally.get(op.id);
      if (!counts) throw new Error("unknown id");
      if (op.kind === "create" && status === 200) counts.created++;
      else if (op.kind === "delete" && status === 204) counts.deleted++;
      else if (!(op.kind === "create" && status === 409) && !(op.kind === "delete" && status === 404)) {
        unexpected.push(`${op.kind} ${op.id}: ${status}`);
      }
    }
    expect(unexpected).toEqual([]);

    const listed = new Set((await list(token)).map((plant) => plant.name));
    for (const id of ids) {
      const counts = tally.get(id);
      const start = initiallyPresent.has(id) ? 1 : 0;
      const balance = start + (counts?.created ?? 0) - (counts?.deleted ?? 0);
      // Serialised, creates and deletes of one id alternate, so the balance is always 0 or 1.
      expect([0, 1], `id ${id}: ${start} + ${counts?.created} created - ${counts?.deleted} deleted`).toContain(balance);
      expect(listed.has(`plant ${id}`), `id ${id} present at the end`).toBe(balance === 1);
    }
    expect(listed.size).toBeLessThanOrEqual(ids.length);
    // The race must actually have happened on every id: both kinds of success occurred.
    for (const id of ids) expect(tally.get(id)?.deleted).toBeGreaterThan(0);
  });
});
