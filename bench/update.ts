/**
 * The update scenario (bench/lua/update.lua: PATCH /plants/{id} with If-Match over the seeded
 * plants) against the create scenario (write.lua) on the same service in the same run, in
 * alternating rounds (which goes first swaps every round). The service sides only: the
 * baseline has no PATCH. Before each update run the bench reads every seeded plant's ETag
 * (GET /plants/{id}, outside the timed run) so every PATCH carries a real tag.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROUNDS, SECONDS } from "./options";
import { type LoadTokens, mark, ratio, SEED_PER_USER, spreadLoad } from "./rounds";
import { fail, fmt, median } from "./targets";
import type { WrkResult } from "./wrk";

/** Updates must run at this fraction of the create rate at least. */
const MIN_UPDATE_RATE = 0.9;
/** wrk runs per round per side that the update loop adds (bench/load-tokens.ts counts them). */
export const UPDATE_LOOP_RUNS = 2;

export interface UpdateSide {
  name: string;
  url: string;
  load: LoadTokens;
}
export type UpdateResults = Record<string, { create: WrkResult[]; update: WrkResult[] }>;

/**
 * Every seeded plant's current ETag, as "<user 0|1> <id> <etag>" lines (what update.lua reads
 * from BENCH_ETAGS), read over the load's tokens in turn; also bench/compare.ts's update scenario.
 */
export async function currentETags(url: string, load: LoadTokens): Promise<string> {
  const lines: string[] = [];
  for (const [user, tokens] of [load.a, load.b].entries()) {
    for (let start = 1; start <= SEED_PER_USER; start += 100) {
      const ids = Array.from({ length: Math.min(100, SEED_PER_USER - start + 1) }, (_, i) => start + i);
      const tags = await Promise.all(
        ids.map(async (id) => {
          // A token the load has spent (429) hands over to the next one.
          let answer: Response;
          for (let turn = 0; ; turn++) {
            answer = await fetch(`${url}/plants/${id}`, {
              headers: { authorization: `Bearer ${tokens[(id + turn) % tokens.length]}` },
            });
            if (answer.status !== 429 || turn + 1 >= tokens.length) break;
            await answer.arrayBuffer();
          }
          const etag = answer.headers.get("etag");
          if (answer.status !== 200 || etag === null) fail(`update: GET /plants/${id} answered ${answer.status}`);
          return `${user} ${id} ${etag}`;
        }),
      );
      lines.push(...tags);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** ROUNDS alternating rounds of create and update on each side; `dir` holds the ETag file. */
export async function updateVsCreate(sides: UpdateSide[], dir: string): Promise<UpdateResults> {
  const results: UpdateResults = Object.fromEntries(sides.map((side) => [side.name, { create: [], update: [] }]));
  const etagFile = join(dir, "etags.txt");
  const width = Math.max(12, ...sides.map((side) => side.name.length));
  // Ids past every round scenario's (bench/rounds.ts counts up from 10^9 by 10^9 a run).
  let idBase = 1_000_000_000_000;
  for (let round = 1; round <= ROUNDS; round++) {
    const kinds = round % 2 === 1 ? (["create", "update"] as const) : (["update", "create"] as const);
    for (const side of round % 2 === 1 ? sides : [...sides].reverse()) {
      for (const kind of kinds) {
        idBase += 1_000_000_000;
        if (kind === "update") writeFileSync(etagFile, await currentETags(side.url, side.load));
        const result =
          kind === "create"
            ? await spreadLoad(side.url, "write", side.load, idBase)
            : await spreadLoad(side.url, "update", side.load, idBase, { env: { BENCH_ETAGS: etagFile } });
        results[side.name]?.[kind].push(result);
        console.log(
          `round ${round} ${kind.padEnd(6)} ${side.name.padEnd(width)} ${fmt(result.rps).padStart(7)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  non-2xx ${result.non2xx}  socket errors ${result.errors}`,
        );
      }
    }
  }
  return results;
}

/** Prints the update-vs-create table; answers a verdict line per side and whether all are met. */
export function printUpdateVsCreate(results: UpdateResults): { verdicts: string[]; allMet: boolean } {
  console.log(
    `\nUpdate vs create (same run) — update: PATCH /plants/{id} with If-Match over the ${2 * SEED_PER_USER} seeded plants in turn; create: the write scenario (POST /plants); ${ROUNDS} alternating rounds, medians, the ratio the median of per-round ratios\n`,
  );
  console.log("| service | create req/s | update req/s | ratio | p99 ms create / update | non-2xx create / update |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  const verdicts: string[] = [];
  let allMet = true;
  for (const [name, { create, update }] of Object.entries(results)) {
    const rate = median(update.map((r, i) => ratio(r.rps, (create[i] as WrkResult).rps)));
    const med = (runs: WrkResult[], key: "rps" | "p99", digits = 0) => fmt(median(runs.map((r) => r[key])), digits);
    const failed = (runs: WrkResult[]) => runs.reduce((sum, r) => sum + r.non2xx + r.errors, 0);
    console.log(
      `| ${name} | ${med(create, "rps")} | ${med(update, "rps")} | ${fmt(rate, 2)}× | ${med(create, "p99", 2)} / ${med(update, "p99", 2)} | ${failed(create)} / ${failed(update)} |`,
    );
    // Under 1 % failed: a 412 would mean update.lua's ETag bookkeeping is wrong.
    const failedShare = failed(update) / update.reduce((sum, r) => sum + r.rps * SECONDS, 0);
    const met = rate >= MIN_UPDATE_RATE && failedShare < 0.01;
    allMet &&= met;
    verdicts.push(
      `${name}: updates at ${fmt(rate, 2)}× the create rate, ${fmt(100 * failedShare, 2)} % failed (target ≥ ${MIN_UPDATE_RATE}×, under 1 %): ${mark(met)}`,
    );
  }
  return { verdicts, allMet };
}
