import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { SQL } from "bun";
import { createWriteGroups } from "../../src/db/postgres/write-groups";
import {
  eachRecordedPlantStore,
  makeTestApp,
  onPostgres,
  recordedPostgres,
  type SentStatement,
} from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/*
 * The mechanism behind PostgreSQL's write throughput: creates and deletes (src/db/postgres/write-groups.ts)
 * that arrive together share a statement, and each still gets its own
 * exact answer. The behaviour every engine must show (one 200 per id, 409 for the rest; 204
 * once, then 404) is in tests/concurrency.test.ts, plants-create and plants-delete, on both engines.
 */
describe.if(onPostgres)("PostgreSQL group insert", () => {
  let client: SQL;
  let sent: SentStatement[];
  const statements = () => sent.map((statement) => statement.sql);
  /** True when the row went in, false when the owner already had the id. */
  let insert: (ownerId: number, id: bigint, name: string, tag: string | null) => Promise<boolean>;
  /** True when the plant was there. */
  let remove: (ownerId: number, id: bigint) => Promise<boolean>;
  let writes: ReturnType<typeof createWriteGroups>;
  let owners: number[];

  beforeEach(async () => {
    let recording: SQL;
    ({ client, sent, recording, owners } = await recordedPostgres());
    writes = createWriteGroups(recording, Date.now, { maxSize: 50, concurrency: 2 });
    insert = async (ownerId, id, name, tag) =>
      (await writes.insert(ownerId, { id, name, ...(tag === null ? {} : { tag }) })) !== undefined;
    remove = (ownerId, id) => writes.remove(ownerId, id);
  });

  afterEach(async () => {
    await client.close();
  });

  const stored = async () =>
    (
      (await client`SELECT owner_id, id::text AS id, name FROM plants ORDER BY owner_id, plants.id`) as Array<{
        owner_id: number;
        id: string;
        name: string;
      }>
    ).map((row) => `${row.owner_id}:${row.id}:${row.name}`);

  test("creates sent together share statements; each is answered for its own row", async () => {
    const [a, b] = owners as [number, number];
    const ids = Array.from({ length: 300 }, (_, i) => BigInt(i) * 2n ** 40n - 2n ** 62n);
    const answers = await Promise.all(
      ids.flatMap((id) => [insert(a, id, `a ${id}`, null), insert(b, id, `b ${id}`, "t")]),
    );
    expect(answers.every(Boolean)).toBe(true);
    const inserts = statements().filter((sql) => sql.includes("INSERT INTO plants"));
    // 600 creates, at most 50 to a statement: 12 at the fewest, and far fewer than 600.
    expect(inserts.length).toBeGreaterThanOrEqual(12);
    expect(inserts.length).toBeLessThan(60);
    const rows = await stored();
    expect(rows.length).toBe(600);
    expect(rows).toContain(`${a}:${-(2n ** 62n)}:a ${-(2n ** 62n)}`);
    expect(rows).toContain(`${b}:${299n * 2n ** 40n - 2n ** 62n}:b ${299n * 2n ** 40n - 2n ** 62n}`);
  });

  test("the same id twice in one group: the first is inserted, the repeat is told it exists", async () => {
    const [a] = owners as [number];
    await insert(a, 7n, "already", null);
    // Busy slots make the next creates queue and leave as one group (with a slot free, the
    // first two would go out apart, on two connections, and either could commit first).
    const blockers = [insert(a, 100n, "x", null), insert(a, 101n, "y", null)];
    const answers = await Promise.all([
      insert(a, 1n, "first", null),
      insert(a, 1n, "second", null),
      insert(a, 7n, "again", null),
      insert(a, 2n, "other", null),
    ]);
    expect(await Promise.all(blockers)).toEqual([true, true]);
    expect(answers).toEqual([true, false, false, true]);
    expect(await stored()).toEqual([`${a}:1:first`, `${a}:2:other`, `${a}:7:already`, `${a}:100:x`, `${a}:101:y`]);
  });

  test("a row the database refuses fails its own create only; the others in its group go in", async () => {
    const [a] = owners as [number];
    // Busy slots make the next creates queue and leave as one group.
    const blockers = [insert(a, 100n, "x", null), insert(a, 101n, "y", null)];
    const group = [
      insert(a, 1n, "fine", null),
      // U+0000: the HTTP layer refuses it (400); here it reaches PostgreSQL, whose text cannot hold it.
      insert(a, 2n, "bad\u0000", null),
      insert(a, 3n, "fine too", null),
    ];
    const settled = await Promise.allSettled([...blockers, ...group]);
    expect(settled.map((outcome) => outcome.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    expect(await stored()).toEqual([`${a}:1:fine`, `${a}:3:fine too`, `${a}:100:x`, `${a}:101:y`]);
    // The group was tried whole once, then row by row.
    expect(statements().filter((sql) => sql.includes("INSERT INTO plants")).length).toBe(2 + 1 + 3);
  });

  /** The group statements sent: each one's creates' ids and deletes' ids. */
  const groupsSent = () =>
    sent
      .filter(({ sql }) => sql.includes("WITH inserted AS"))
      .map(({ params }) => ({
        creates: (JSON.parse(params[0] as string) as Array<{ id: string }>).map((row) => BigInt(row.id)),
        deletes: (JSON.parse(params[2] as string) as Array<{ i: string }>).map((row) => BigInt(row.i)),
      }));
  /** The change log's waiting rows for owner `a`, in the order written: "created 3", "deleted 5", … */
  const logged = async (a: number) =>
    (
      (await client`SELECT type, id::text AS id FROM plant_change_inbox WHERE owner_id = ${a} ORDER BY pos`) as Array<{
        type: string;
        id: string;
      }>
    ).map((row) => `${row.type.slice("plant.".length)} ${row.id}`);

  test("creates and deletes sent together share one statement; each is answered for its own plant", async () => {
    const [a] = owners as [number];
    for (const id of [1n, 2n]) await insert(a, id, "old", null);
    sent.length = 0;
    const blockers = [insert(a, 100n, "x", null), insert(a, 101n, "y", null)];
    const answers = await Promise.all([remove(a, 1n), insert(a, 10n, "ten", null), remove(a, 2n), remove(a, 9n)]);
    expect(await Promise.all(blockers)).toEqual([true, true]);
    expect(answers).toEqual([true, true, true, false]);
    // The blockers went out first; the four left together, in one statement.
    expect(groupsSent().filter(({ deletes }) => deletes.length > 0)).toEqual([
      { creates: expect.arrayContaining([10n]), deletes: [1n, 2n, 9n] },
    ]);
    // The plant the group did not find is asked again alone, for its own answer.
    expect(statements().filter((sql) => sql.includes("DELETE FROM plants WHERE"))).toHaveLength(1);
    expect(await stored()).toEqual([`${a}:10:ten`, `${a}:100:x`, `${a}:101:y`]);
  });

  test("a create and a delete of one plant sent together go in turn, and are logged in that order", async () => {
    const [a] = owners as [number];
    await insert(a, 3n, "old three", null);
    sent.length = 0;
    const blockers = [insert(a, 100n, "x", null), insert(a, 101n, "y", null)];
    const answers = await Promise.all([
      insert(a, 5n, "five", null),
      remove(a, 5n),
      remove(a, 3n),
      insert(a, 3n, "new three", null),
    ]);
    await Promise.all(blockers);
    expect(answers).toEqual([true, true, true, true]);
    // The first of each pair left together; the second of each waited for that statement to end.
    const groups = groupsSent();
    const at = (kind: "creates" | "deletes", id: bigint) => groups.findIndex((group) => group[kind].includes(id));
    expect(at("creates", 5n)).toBe(at("deletes", 3n));
    expect(at("deletes", 5n)).toBeGreaterThan(at("creates", 5n));
    expect(at("creates", 3n)).toBeGreaterThan(at("deletes", 3n));
    expect(await stored()).toEqual([`${a}:3:new three`, `${a}:100:x`, `${a}:101:y`]);
    // Each plant's changes in the order they were made (two plants' changes may interleave either way).
    const log = await logged(a);
    expect(log.filter((line) => line.endsWith(" 3"))).toEqual(["created 3", "deleted 3", "created 3"]);
    expect(log.filter((line) => line.endsWith(" 5"))).toEqual(["created 5", "deleted 5"]);
  });

  test("a keyed create's group: the deletes sent with it go in a statement beside it", async () => {
    const [a] = owners as [number];
    await insert(a, 4n, "four", null);
    sent.length = 0;
    const answer = { status: 200, body: "{}", etag: '"e"' };
    const keyed = { key: "k", requestHash: "h", at: Date.now(), expiredAt: 0, created: answer, taken: answer };
    const blockers = [insert(a, 100n, "x", null), insert(a, 101n, "y", null)];
    const [once, removed, plain] = await Promise.all([
      writes.insertOnce(a, { id: 6n, name: "six" }, keyed),
      remove(a, 4n),
      insert(a, 7n, "seven", null),
    ]);
    await Promise.all(blockers);
    expect(once.kind).toBe("fresh");
    expect([removed, plain]).toEqual([true, true]);
    expect(statements().filter((sql) => sql.includes("INSERT INTO idempotency_keys"))).toHaveLength(1);
    expect(groupsSent().filter(({ deletes }) => deletes.length > 0)).toEqual([{ creates: [], deletes: [4n] }]);
    expect(await stored()).toEqual([`${a}:6:six`, `${a}:7:seven`, `${a}:100:x`, `${a}:101:y`]);
  });

  test("a keyed create the database refuses fails alone; the delete sent beside it is answered as made", async () => {
    const [a] = owners as [number];
    await insert(a, 4n, "four", null);
    const answer = { status: 200, body: "{}", etag: '"e"' };
    const keyed = { key: "k", requestHash: "h", at: Date.now(), expiredAt: 0, created: answer, taken: answer };
    const blockers = [insert(a, 100n, "x", null), insert(a, 101n, "y", null)];
    const settled = await Promise.allSettled([
      writes.insertOnce(a, { id: 6n, name: "bad\u0000" }, keyed),
      remove(a, 4n),
    ]);
    await Promise.all(blockers);
    expect(settled.map((outcome) => (outcome.status === "fulfilled" ? outcome.value : "rejected"))).toEqual([
      "rejected",
      true,
    ]);
    expect(await stored()).toEqual([`${a}:100:x`, `${a}:101:y`]);
  });

  test("a row the database refuses fails its own create only; the deletes in its group are answered", async () => {
    const [a] = owners as [number];
    await insert(a, 8n, "eight", null);
    const blockers = [insert(a, 100n, "x", null), insert(a, 101n, "y", null)];
    const settled = await Promise.allSettled([insert(a, 2n, "bad\u0000", null), remove(a, 8n), remove(a, 9n)]);
    await Promise.all(blockers);
    expect(settled.map((outcome) => (outcome.status === "fulfilled" ? outcome.value : "rejected"))).toEqual([
      "rejected",
      true,
      false,
    ]);
    expect(await stored()).toEqual([`${a}:100:x`, `${a}:101:y`]);
  });

  test("a write held for the next statement fails with its group, and is never made after", async () => {
    const [a] = owners as [number];
    const session = await client.reserve();
    try {
      // Another session's open insert of id 7 holds the group's statement on its lock.
      await session`BEGIN`;
      await session`INSERT INTO plants (owner_id, id, name) VALUES (${a}, 7, 'theirs')`;
      const answer = { status: 200, body: "{}", etag: '"e"' };
      const keyed = { key: "k", requestHash: "h", at: Date.now(), expiredAt: 0, created: answer, taken: answer };
      const blockers = [insert(a, 100n, "x", null), insert(a, 101n, "y", null)];
      const group = [
        insert(a, 7n, "ours", null),
        insert(a, 5n, "first", null),
        // The same id, keyed: held for the statement after this group's.
        writes.insertOnce(a, { id: 5n, name: "second" }, keyed),
      ].map((write) =>
        write.then(
          () => "answered",
          () => "failed",
        ),
      );
      await Promise.all(blockers);
      const [{ pid }] = await until(
        async () =>
          (await client`SELECT pid FROM pg_stat_activity
            WHERE query LIKE 'WITH inserted AS%' AND wait_event_type = 'Lock'`) as [{ pid: number }],
        { holds: (rows) => rows.length === 1, what: "the group's statement waiting on the lock" },
      );
      await client`SELECT pg_terminate_backend(${pid})`;
      expect(await Promise.all(group)).toEqual(["failed", "failed", "failed"]);
      await session`ROLLBACK`;
      // A statement sent after: the held create, had it been queued again, would have gone before it.
      expect(await insert(a, 8n, "after", null)).toBe(true);
      expect(await stored()).toEqual([`${a}:8:after`, `${a}:100:x`, `${a}:101:y`]);
    } finally {
      session.release();
    }
  });

  test("a failure that is not a row's (the server gone) is every waiting create's answer", async () => {
    const [a] = owners as [number];
    await client`SELECT 1`;
    const pending = Array.from({ length: 10 }, (_, i) => insert(a, BigInt(i), "p", null));
    await client.close();
    const settled = await Promise.allSettled(pending);
    expect(settled.every((outcome) => outcome.status === "rejected")).toBe(true);
  });
});

describe.if(onPostgres)("PostgreSQL group insert, through the app", () => {
  test("concurrent creates from two users: one 200 per id, 409 for each repeat, all stored once", async () => {
    const t = await makeTestApp();
    const alice = await t.tokenFor("alice");
    const bob = await t.tokenFor("bob");
    const sends = [];
    for (let id = 1; id <= 100; id++) {
      for (const token of [alice, bob, alice]) {
        sends.push(t.call("POST", "/plants", { token, json: { id, name: `p${id}` } }).then((r) => r.status));
      }
    }
    const statuses = await Promise.all(sends);
    expect(statuses.filter((status) => status === 200).length).toBe(200);
    expect(statuses.filter((status) => status === 409).length).toBe(100);
    for (const token of [alice, bob]) {
      const listed = (await (await t.call("GET", "/plants", { token })).json()) as Array<{ name: string }>;
      expect(listed.map((plant) => plant.name)).toEqual(Array.from({ length: 100 }, (_, i) => `p${i + 1}`));
    }
  });
});

describe.if(onPostgres)("PostgreSQL deletes in groups, and creates behind one held up", () => {
  const t = eachRecordedPlantStore(
    ({ client, owners }) => client`
      INSERT INTO plants (owner_id, id, name)
      SELECT u, g::bigint * 2 ^ 50 - 2 ^ 62, 'p' || g
      FROM unnest(${`{${owners.join(",")}}`}::int[]) AS u, generate_series(0, 99) AS g`,
  );

  test("deletes sent together share statements; each is answered for its own plant, a repeat as gone", async () => {
    const { client, sent, plants, owners } = t;
    const [a, b] = owners;
    const id = (g: number) => BigInt(g) * 2n ** 50n - 2n ** 62n;
    sent.length = 0;
    // A busy slot makes the deletes below queue and leave together (with a slot free, a plant's
    // two deletes could go out apart, on two connections, and either could commit first).
    const blocker = plants.deletePlant(b, id(99));
    // a deletes its even plants twice each and an id it never had; b deletes its first 50.
    const asks: Array<[number, bigint, boolean]> = [];
    for (let g = 0; g < 100; g += 2) asks.push([a, id(g), true], [a, id(g), false]);
    asks.push([a, 5n, false]);
    for (let g = 0; g < 50; g++) asks.push([b, id(g), true]);
    const answers = await Promise.all(asks.map(([owner, plant]) => plants.deletePlant(owner, plant)));
    expect(await blocker).toBe(true);
    expect(answers).toEqual(asks.map(([, , expected]) => expected));
    const groups = sent.filter(({ sql }) => sql.includes("DELETE FROM plants USING"));
    const alone = sent.filter(({ sql }) => sql.includes("DELETE FROM plants WHERE"));
    // The one that held the slot, then the other 151 in one statement; the 51 it did not
    // delete (the repeats and the missing id) are each asked again alone for their answer.
    expect(groups.length).toBe(1 + 1);
    expect(alone.length).toBe(50 + 1);
    const left = (await client`
      SELECT owner_id, count(*)::int AS n FROM plants GROUP BY owner_id ORDER BY owner_id`) as Array<{ n: number }>;
    expect(left.map((row) => row.n)).toEqual([50, 49]);
    expect(await plants.getPlant(a, id(1))).toEqual({ name: "p1" });
    expect(await plants.getPlant(a, id(2))).toBeUndefined();
  });

  test("a plant another session holds locked delays its own delete only; the others are answered meanwhile", async () => {
    const { client, plants, owners } = t;
    const [a, b] = owners;
    const id = (g: number) => BigInt(g) * 2n ** 50n - 2n ** 62n;
    const session = await client.reserve();
    try {
      await session`BEGIN`;
      await session`SELECT 1 FROM plants WHERE owner_id = ${a} AND id = ${id(0)} FOR UPDATE`;
      let lockedSettled = false;
      const locked = plants.deletePlant(a, id(0)).finally(() => {
        lockedSettled = true;
      });
      const others = Promise.all([plants.deletePlant(a, id(2)), plants.deletePlant(b, id(3))]);
      // Answered while the lock is still held: well inside this deadline, not after the statement timeout.
      const inTime = await Promise.race([others, Bun.sleep(5_000).then(() => "still waiting")]);
      expect(inTime).toEqual([true, true]);
      expect(lockedSettled).toBe(false);
      await session`ROLLBACK`;
      expect(await locked).toBe(true);
    } finally {
      session.release();
    }
    expect(await plants.getPlant(a, id(0))).toBeUndefined();
    expect(await plants.getPlant(b, id(3))).toBeUndefined();
    expect(await plants.getPlant(a, id(1))).toEqual({ name: "p1" });
  });

  test("a create waiting for another session's insert of its id holds only its own group", async () => {
    const { client, plants, owners } = t;
    const [a, b] = owners;
    const session = await client.reserve();
    try {
      // An operator's open transaction has inserted a's plant 7: a create of the same id must
      // wait for it to end (ON CONFLICT cannot skip a row lock), and so does its whole group.
      await session`BEGIN`;
      await session`INSERT INTO plants (owner_id, id, name) VALUES (${a}, 7, 'theirs')`;
      let heldSettled = false;
      const held = plants.createPlant(a, { id: 7n, name: "ours" }).finally(() => {
        heldSettled = true;
      });
      // Sent after it: they go out in another statement once it has been out 50 ms (groups.ts),
      // answered while the lock is still held, well before the statement timeout.
      const others = Promise.all([
        plants.createPlant(a, { id: 8n, name: "eight" }),
        plants.createPlant(b, { id: 7n, name: "b's seven" }),
      ]);
      const inTime = await Promise.race([others, Bun.sleep(5_000).then(() => "still waiting")]);
      expect(inTime).toEqual([{ name: "eight" }, { name: "b's seven" }]);
      expect(heldSettled).toBe(false);
      await session`COMMIT`;
      // The other session's plant was committed first: this create is told the id is taken.
      expect(await held).toBeUndefined();
    } finally {
      session.release();
    }
    expect(await plants.getPlant(a, 7n)).toEqual({ name: "theirs" });
    expect(await plants.getPlant(a, 8n)).toEqual({ name: "eight" });
  });

  test("a delete whose statement fails (the server gone) fails, as every other in its group", async () => {
    const { client, plants, owners } = t;
    await client`SELECT 1`;
    const pending = Array.from({ length: 10 }, (_, g) => plants.deletePlant(owners[0], BigInt(g)));
    await client.close();
    const settled = await Promise.allSettled(pending);
    expect(settled.every((outcome) => outcome.status === "rejected")).toBe(true);
  });
});
