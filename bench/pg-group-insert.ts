/**
 * Creates on PostgreSQL one statement each (the prepared single-row INSERT the store used before)
 * against src/db/postgres/group-insert.ts, on a durable throwaway cluster (fsync and
 * synchronous_commit on): 64 writers over two owners, a pool of 10, alternating rounds of 4 s.
 *
 *   bun bench/pg-group-insert.ts [rounds]
 */
import { sql } from "drizzle-orm";
import { createDatabase, startCluster } from "../scripts/pg-cluster";
import { connect, migrate } from "../src/db/postgres/client";
import { drizzleView } from "../src/db/postgres/drizzle-view";
import { createGroupInsert } from "../src/db/postgres/group-insert";
import { plants } from "../src/db/postgres/schema";

const ROUNDS = Number(process.argv[2] ?? 3);
const SECONDS = 4;
const WRITERS = 64;

const cluster = await startCluster({ durable: true });
try {
  const { client } = connect({
    engine: "postgres",
    url: await createDatabase(cluster.url, "group_insert_bench"),
    poolSize: 10,
    connectTimeoutMs: 5_000,
    statementTimeoutMs: 10_000,
  });
  await migrate(client);
  const owners = (
    (await client`INSERT INTO users (name, created_at) VALUES ('a', now()), ('b', now()) RETURNING id`) as Array<{
      id: number;
    }>
  ).map((row) => row.id);

  const single = drizzleView(client)
    .insert(plants)
    .values({
      ownerId: sql.placeholder("ownerId"),
      id: sql.placeholder("id"),
      name: sql.placeholder("name"),
      tag: sql.placeholder("tag"),
    })
    .onConflictDoNothing()
    .returning({ name: plants.name, tag: plants.tag })
    .prepare("bench_single_insert");
  const grouped = createGroupInsert(client);

  type Insert = (ownerId: number, id: bigint, name: string) => Promise<unknown>;
  const contenders: Array<[string, Insert]> = [
    ["one statement each", (ownerId, id, name) => single.execute({ ownerId, id, name, tag: "bench" })],
    ["grouped", (ownerId, id, name) => grouped.insert(ownerId, id, name, "bench")],
  ];
  let nextId = 0n;
  async function rate(insert: Insert): Promise<number> {
    let done = 0;
    const end = performance.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, writer) => {
        while (performance.now() < end) {
          const id = ++nextId;
          await insert(owners[writer % 2] as number, id, `Plant ${id}`);
          done++;
        }
      }),
    );
    return done / SECONDS;
  }

  const rates = new Map(contenders.map(([name]) => [name, [] as number[]]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    for (const [name, insert] of order) rates.get(name)?.push(await rate(insert));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] as number;
  const base = median(rates.get("one statement each") as number[]);
  console.log(`${WRITERS} writers, pool of 10, durable commits, ${ROUNDS} rounds of ${SECONDS} s (medians):`);
  for (const [name, values] of rates) {
    const rounded = values.map((value) => Math.round(value).toLocaleString("en-US")).join(", ");
    console.log(`  ${name.padEnd(20)} ${rounded} creates/s  ${(median(values) / base).toFixed(2)}×`);
  }
  await client.close();
} finally {
  await cluster.stop();
}
