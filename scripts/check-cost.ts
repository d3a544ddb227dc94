/**
 * What checking the database costs at 1,000,000 plants: `bun scripts/check-cost.ts [--cold]`.
 * Builds a store of 1,000 users × 1,000 plants (as `bun run bench` does), then times what
 * start-up runs (openDatabase) against SQLite's full checks, each on a fresh connection, and
 * prints min / median / max. `--cold` drops the file's pages from the OS cache before every
 * run (`dd iflag=nocache`), as after a reboot; without it the file is cached, as on a restart.
 */
import { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import { join } from "node:path";
import { closeDatabase, openDatabase } from "../src/db/sqlite/client";
import { scratchDir } from "../tests/support/process";

const USERS = 1000;
const PLANTS_PER_USER = 1000;
const RUNS = 7;
const cold = process.argv.includes("--cold");

function seed(path: string) {
  const { sqlite } = openDatabase({ path, synchronous: "OFF" });
  const insertUser = sqlite.prepare("INSERT INTO users (name, created_at) VALUES (?, 0) RETURNING id");
  const insertPlant = sqlite.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, 'seed')");
  sqlite.transaction(() => {
    for (let u = 0; u < USERS; u++) {
      const { id } = insertUser.get(`filler-${u}`) as { id: number };
      for (let p = 1; p <= PLANTS_PER_USER; p++) insertPlant.run(id, p, `Filler ${p}`);
    }
  })();
  closeDatabase(sqlite);
}

function dropFromCache(path: string) {
  const dd = Bun.spawnSync(["dd", `if=${path}`, "iflag=nocache", "count=0", "status=none"]);
  if (dd.exitCode !== 0) throw new Error(`dd could not drop ${path} from the cache: ${dd.stderr}`);
}

/** Milliseconds of `measure` over RUNS runs after one warm-up. */
function time(path: string, measure: (path: string) => void): number[] {
  const times: number[] = [];
  for (let run = 0; run <= RUNS; run++) {
    if (cold) dropFromCache(path);
    const started = performance.now();
    measure(path);
    if (run > 0) times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

function pragma(statement: string) {
  return (path: string) => {
    const sqlite = new Database(path, { readonly: true });
    const rows = sqlite.query<Record<string, string>, []>(statement).all();
    sqlite.close();
    if (rows.length !== 1 || Object.values(rows[0] ?? {})[0] !== "ok") throw new Error(`${statement} did not say ok`);
  };
}

const measures: Record<string, (path: string) => void> = {
  "start-up (openDatabase)": (path) => openDatabase({ path, synchronous: "FULL" }).sqlite.close(),
  "PRAGMA quick_check": pragma("PRAGMA quick_check"),
  "PRAGMA integrity_check": pragma("PRAGMA integrity_check"),
};

const scratch = scratchDir();
try {
  const path = join(scratch.dir, "plants.sqlite");
  seed(path);
  const mib = statSync(path).size / 2 ** 20;
  console.log(
    `${(USERS * PLANTS_PER_USER).toLocaleString("en-US")} plants, ${mib.toFixed(1)} MiB, ${cold ? "cold" : "warm"} cache, ${RUNS} runs:`,
  );
  for (const [name, measure] of Object.entries(measures)) {
    const times = time(path, measure);
    const ms = (n: number | undefined) => `${(n ?? Number.NaN).toFixed(1)} ms`;
    console.log(
      `${name.padEnd(24)} min ${ms(times[0])}  median ${ms(times[times.length >> 1])}  max ${ms(times.at(-1))}`,
    );
  }
} finally {
  scratch.cleanup();
}
