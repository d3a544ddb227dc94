import { beforeEach, describe, expect, test } from "bun:test";
import { LIST_CHUNK_SIZE } from "../../src/core/stores";
import { openDatabase } from "../../src/db/sqlite/client";
import { createSqlitePlantStore } from "../../src/db/sqlite/plants";
import { createWriter } from "../../src/db/sqlite/writer";
import { pagedAnswer } from "../../src/http/pager";
import { plantPages } from "../../src/plants/list-answer";
import { makeTestApp, onSqlite, type TestApp } from "../support/helpers";

const CHUNK = LIST_CHUNK_SIZE;

interface Seeded {
  id: bigint;
  name: string;
  tag: string | null;
}

const byId = (plants: Seeded[]) => [...plants].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
const asPlant = ({ name, tag }: Seeded) => (tag === null ? { name } : { name, tag });

/** The list's JSON as the route has always written it: by id, `tag` left out when null. */
const expectedBody = (plants: Seeded[]) => JSON.stringify(byId(plants).map(asPlant));

/** What a streamed answer sends first: the array's opening and exactly one chunk of plants. */
const firstChunkOf = (plants: Seeded[]) =>
  `[${byId(plants)
    .slice(0, CHUNK)
    .map((plant) => JSON.stringify(asPlant(plant)))
    .join(",")}`;

/** A body read piece by piece, as the client receives it. */
async function readPieces(response: Response): Promise<{ text: string; pieces: string[] }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const pieces: string[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: pieces.join(""), pieces };
    pieces.push(decoder.decode(value));
  }
}

describe("GET /plants past one chunk", () => {
  let t: TestApp;
  let token: string;

  beforeEach(async () => {
    t = await makeTestApp();
    token = await t.tokenFor("alice");
  });

  /** The id of the user behind a token. */
  async function ownerOf(as: string): Promise<number> {
    const user = await t.tokens.authenticate(as);
    if (!user) throw new Error("the token was not accepted");
    return user.id;
  }

  /**
   * Writes plants straight into the store (whichever engine it is): thousands through HTTP would
   * only slow the tests. Sent a chunk at a time, so the write queue never fills.
   */
  async function seed(as: string, plants: Seeded[]) {
    const owner = await ownerOf(as);
    for (let start = 0; start < plants.length; start += CHUNK) {
      const stored = await Promise.all(
        plants
          .slice(start, start + CHUNK)
          .map(({ id, name, tag }) =>
            t.stores.plants.createPlant(owner, tag === null ? { id, name } : { id, name, tag }),
          ),
      );
      expect(stored.every((plant) => plant !== undefined)).toBe(true);
    }
    return plants;
  }

  /** `count` plants with ids from `first` on, `step` apart, a tag on every other one. */
  const run = (count: number, first = 1n, step = 1n): Seeded[] =>
    Array.from({ length: count }, (_, i) => {
      const id = first + BigInt(i) * step;
      return { id, name: `Plant ${id}`, tag: i % 2 === 0 ? `tag "${i}"` : null };
    });

  const list = (query = "", as = token) => t.call("GET", `/plants${query}`, { token: as });

  async function listPieces(query = "", as = token) {
    const response = await list(query, as);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json;charset=utf-8");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    return readPieces(response);
  }

  test.each([0, 1, CHUNK - 1, CHUNK])("%d plants come whole, as before", async (count) => {
    const plants = await seed(token, run(count));
    expect((await listPieces()).text).toBe(expectedBody(plants));
  });

  test.each([
    [CHUNK + 1, 2],
    [2.5 * CHUNK, 3],
  ])("%d plants come in %d chunks, byte for byte the whole array", async (count, chunks) => {
    const plants = await seed(token, run(count));
    const answer = await listPieces();
    expect(answer.text).toBe(expectedBody(plants));
    expect(answer.pieces).toHaveLength(chunks);
    expect(answer.pieces[0]).toBe(firstChunkOf(plants));
  });

  test.each([
    [CHUNK + 1, 2],
    [2 * CHUNK, 2],
    [2 * CHUNK + 1, 3],
    [2.5 * CHUNK, 3],
    [2_147_483_647, 3],
  ])("limit=%d past a chunk is kept: %d chunks", async (limit, chunks) => {
    const plants = await seed(token, run(2.5 * CHUNK, -1000n, 7n));
    const answer = await listPieces(`?limit=${limit}`);
    expect(answer.text).toBe(expectedBody(plants.slice(0, limit)));
    expect(answer.pieces).toHaveLength(chunks);
    expect(answer.pieces[0]).toBe(firstChunkOf(plants));
  });

  test("cursors past 2^53 and at the int64 ends are exact: nothing skipped, nothing repeated", async () => {
    // Chunk boundaries fall on 2^53 + 1 and on 2^63 - 2, which a double rounds to a neighbour.
    const plants = await seed(token, [
      { id: -9223372036854775808n, name: "min", tag: null },
      ...run(2 * CHUNK - 2, 2n ** 53n + 1n - BigInt(CHUNK - 2)),
      { id: 9223372036854775806n, name: "max - 1", tag: "edge" },
      { id: 9223372036854775807n, name: "max", tag: null },
    ]);
    expect(plants[CHUNK - 1]?.id).toBe(2n ** 53n + 1n);
    expect(plants[2 * CHUNK - 1]?.id).toBe(9223372036854775806n);
    const answer = await listPieces();
    expect(answer.text).toBe(expectedBody(plants));
    expect(answer.pieces).toHaveLength(3);
  });

  test("another user's plants are never included, whatever their ids", async () => {
    const bob = await t.tokenFor("bob");
    const alices = await seed(token, run(2.5 * CHUNK, 1n, 2n));
    const bobs = await seed(bob, run(2.5 * CHUNK, 2n, 2n));
    for (const [plants, as] of [
      [alices, token],
      [bobs, bob],
    ] as const) {
      const answer = await listPieces("", as);
      expect(answer.text).toBe(expectedBody(plants));
      expect(answer.pieces[0]).toBe(firstChunkOf(plants));
    }
  });

  test("a plant that exists for the whole read appears once, in order, while others come and go", async () => {
    // Ids 4, 8, 12, ... stay; 2, 6, 10, ... are deleted during the read; odd ids are created.
    const count = 5 * CHUNK;
    const plants = await seed(token, run(count, 2n, 2n));
    const stays = plants.filter((p) => p.id % 4n === 0n);
    const reader = ((await list()).body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    let pieces = 0;
    for (let i = 0; ; i++) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      pieces++;
      // Between pieces: delete plants all over the list and create some far ahead and behind.
      for (let k = 0; k < 50; k++) {
        const doomed = 2n + 4n * BigInt(((i * 50 + k) * 7) % (count / 2));
        const deleted = await t.call("DELETE", `/plants/${doomed}`, { token });
        expect([204, 404]).toContain(deleted.status);
        const ahead = BigInt(2 * count) - BigInt(2 * (i * 50 + k)) + 1n;
        await t.createPlant(String(ahead), `Plant ${ahead}`, token);
        await t.createPlant(String(-1n - BigInt(i * 50 + k)), "behind", token);
      }
    }
    expect(pieces).toBeGreaterThan(3);
    const names = (JSON.parse(text) as Array<{ name: string }>).map((p) => p.name);
    expect(names).not.toContain("behind");
    const ids = names.map((name) => BigInt(name.slice("Plant ".length)));
    for (let i = 1; i < ids.length; i++) expect(ids[i] as bigint).toBeGreaterThan(ids[i - 1] as bigint);
    const seen = new Set(ids);
    for (const plant of stays) expect(seen.has(plant.id)).toBe(true);
    // Plants created ahead of the read's position were reached.
    expect(ids.some((id) => id % 2n === 1n)).toBe(true);
  });

  // These two break the SQLite database under the answer (t.sqlite) to see what the stream does.
  test.if(onSqlite)("a client that goes away stops the reads: nothing is logged, nothing is read after", async () => {
    const plants = await seed(token, run(3 * CHUNK));
    const reader = ((await list()).body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe(firstChunkOf(plants));
    await reader.cancel();
    // Were another step read now, it would fail on the missing table and be logged.
    t.sqlite.run("DROP TABLE plants");
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(t.logged).toEqual([]);
  });

  test.if(onSqlite)("a fault after the first chunk cuts the body off and is logged once", async () => {
    await seed(token, run(3 * CHUNK));
    const response = await list();
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect((await reader.read()).done).toBe(false);
    t.sqlite.run("DROP TABLE plants");
    let failed = false;
    try {
      while (!(await reader.read()).done) {}
    } catch {
      failed = true;
    }
    expect(failed).toBe(true);
    expect(t.logged.map((entry) => entry.message)).toEqual(["listing plants failed mid-answer"]);
  });
});

describe.if(onSqlite)("the list answer with a small chunk", () => {
  test("every size and limit around the chunk gives the whole array, byte for byte", async () => {
    const { sqlite } = openDatabase({ path: ":memory:", synchronous: "FULL" });
    const chunk = 3;
    const queries = createSqlitePlantStore(sqlite, createWriter(sqlite, {}), {
      clock: Date.now,
      logged: () => {},
      listChunkSize: chunk,
    });
    sqlite.run("INSERT INTO users (id, name, created_at) VALUES (1, 'a', 0), (2, 'b', 0)");
    const insert = sqlite.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, ?)");
    const faults: unknown[] = [];
    for (let size = 0; size <= 4 * chunk + 1; size++) {
      if (size > 0) {
        insert.run(1, size * 10, `p${size}`, size % 3 === 0 ? null : `t${size}`);
        insert.run(2, size * 10 + 1, `other${size}`, null);
      }
      const all = Array.from({ length: size }, (_, i) => ({
        id: BigInt((i + 1) * 10),
        name: `p${i + 1}`,
        tag: (i + 1) % 3 === 0 ? null : `t${i + 1}`,
      }));
      for (const limit of [undefined, ...Array.from({ length: size + 2 }, (_, i) => i)]) {
        const pages = plantPages(queries, { ownerId: 1, filter: {}, limit });
        const answer = await pagedAnswer(
          pages,
          { after: undefined, limit, onFault: (error) => faults.push(error) },
          {},
        );
        const text = typeof answer === "string" ? answer : await answer.text();
        expect(text).toBe(expectedBody(all.slice(0, limit)));
      }
    }
    expect(faults).toEqual([]);
    sqlite.close();
  });
});
